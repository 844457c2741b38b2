import { createClient, generateKeys, signDelivery, verifyBundle } from '@escrow-settlement/client';

// A local sandbox (`npx tsx src/main.ts`, no API_KEY) listens on port 4280.
// Hosted: createClient({ baseUrl: 'https://…', apiKey: '<bearer key>' }).
const api = createClient({ baseUrl: 'http://127.0.0.1:4280' });

// The payer is a sandbox agent (the service holds its key); the payee keeps its key here.
const payer = await api.agents.create({ label: 'buyer' });
const payee = generateKeys();

const escrow = await api.escrows.create(
  {
    amount: '25',
    asset: 'USDC',
    payerAgentId: payer.id,
    payee: { publicKey: payee.publicKey, label: 'seller' },
    terms: { description: 'Q3 report with a title', checks: [{ kind: 'shape', requiredFields: ['title'] }] },
  },
  { idempotencyKey: crypto.randomUUID() }, // a retried request cannot create a second escrow
);
await api.escrows.fund(escrow.id);

// The payee signs JCS {escrowId, contentHash, submittedAt} locally: the secret key never leaves.
const report = { title: 'Q3 report', pages: 12 };
const { verdict, proof } = await api.escrows.deliver(escrow.id, signDelivery(payee.secretKey, { escrowId: escrow.id, payload: report }));
if (!proof) throw new Error(`not settled: ${JSON.stringify(verdict.results)}`);

// Audit with no network: issuer signature, evidence trail, log inclusion, signed tree head.
const { keys } = await api.issuerKeys(); // pin these once, out of band
const audit = verifyBundle(await api.proofs.bundle(proof.id), { trustedKeys: keys });
if (!audit.ok)
  throw new Error(
    audit.checks
      .filter((c) => !c.ok)
      .map((c) => c.detail)
      .join('; '),
  );
console.log(`${proof.outcome} ${proof.amount} ${proof.asset}: proof ${proof.id} verifies offline`);

// x402: pay for the demo resource; the payment runs the same lifecycle and names its proof.
const paid = await api.x402.pay(generateKeys().secretKey);
console.log(`x402 paid: escrow ${paid.payment.escrowId}, proof ${paid.payment.proofId}`);
