// The local MCP server's signer (the service's MCP documentation): with a party's key file, a delivery, a dispute action
// or a ruling the model asks for is signed here, with the package's signing helpers, and sent in the
// route's client-signed form, so the secret key never leaves the machine. No MCP SDK import here.
import { readFileSync } from 'node:fs';
import { isHex64 } from '@escrow-settlement/protocol/crypto/bytes';
import { publicKeyFromSecret } from '@escrow-settlement/protocol/keys';
import { signDelivery, signDisputeAction, signRefund, signRuling, type DisputeActionToSign } from '../sign.ts';
import type { RulingOutcome, Shares } from '@escrow-settlement/protocol/resources';
import type { Signature } from '@escrow-settlement/protocol/types';

export interface LocalKey {
  secretKey: string;
  publicKey: string;
}

/**
 * A key file: JSON {secretKey, publicKey?} as generateKeys() writes it, or the 64-hex secret key alone.
 * A publicKey that is not the secret key's is refused: the file is not what its owner thinks it is.
 */
export function readKeyFile(path: string): LocalKey {
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (e) {
    throw new Error(`--key-file ${path}: ${(e as Error).message}`);
  }
  let secretKey: unknown = text;
  let publicKey: unknown;
  if (text.startsWith('{')) {
    try {
      ({ secretKey, publicKey } = JSON.parse(text) as { secretKey?: unknown; publicKey?: unknown });
    } catch (e) {
      throw new Error(`--key-file ${path}: not valid JSON: ${(e as Error).message}`);
    }
  }
  if (typeof secretKey !== 'string' || !isHex64(secretKey))
    throw new Error(`--key-file ${path}: secretKey must be 64 lowercase hex characters (an Ed25519 secret seed)`);
  const derived = publicKeyFromSecret(secretKey);
  if (publicKey !== undefined && publicKey !== derived)
    throw new Error(`--key-file ${path}: publicKey is not the public key of secretKey (${derived})`);
  return { secretKey, publicKey: derived };
}

/** The tools this signer completes, and what the model leaves out for it. */
export const SIGNING_TOOLS: Record<string, string> = {
  submit_delivery: 'leave out agentId, submittedAt and signature',
  open_dispute: 'leave out agentId, party, signedAt and signature',
  submit_evidence: 'leave out agentId, party, signedAt and signature',
  resolve_dispute: "the local key's signature is added to signatures",
  refund_after_release: 'leave out agentIds, signedAt and signature',
  request_refund: 'leave out agentIds, signedAt and signature',
};

type Args = Record<string, unknown>;

/** True when the model chose a form of its own: a sandbox agent, or a signature it brought. */
const formChosen = (a: Args) => a.agentId !== undefined || a.agentIds !== undefined || a.signature !== undefined || a.party !== undefined;

/**
 * A dispute action's arguments with the local key's signature over `action(text)`, where `text` names
 * the action's optional text argument (reason or note); unchanged when a form was chosen or the text
 * is not a string (the route then names it).
 */
async function signedDisputeAction(
  args: Args,
  text: 'reason' | 'note',
  key: LocalKey,
  action: (text: string | undefined) => DisputeActionToSign,
  now?: () => Promise<string>,
): Promise<Args> {
  const given = args[text];
  if (formChosen(args) || (given !== undefined && typeof given !== 'string')) return args;
  const { escrowId, ...rest } = args;
  const signedAt = now ? await now() : undefined;
  return { escrowId, ...rest, ...signDisputeAction(key.secretKey, { ...action(given), ...(signedAt ? { signedAt } : {}) }) };
}

/** The service's form of an escrow id argument (the MCP guide, "Results and errors"). */
const WELL_FORMED_ESCROW_ID = /^esc_[0-9A-Za-z_-]{1,60}$/;

/**
 * The arguments with the local key's signature, or unchanged when the call needs none (another tool,
 * a sandbox agent, a body the model signed itself, or arguments the route will refuse anyway, which
 * it then names). `disputeIdOf` reads the escrow's dispute id, which a ruling's signed body includes.
 * `now` gives the time to sign a delivery or a dispute action with (the service's clock, as the API
 * client knows it); without it, the local clock.
 */
export async function signArguments(
  tool: string,
  args: Args,
  key: LocalKey,
  disputeIdOf: (escrowId: string) => Promise<string>,
  now?: () => Promise<string>,
): Promise<Args> {
  const escrowId = args.escrowId;
  // An escrowId that is not a well-formed id (`.`, `..`, with `/`, …) is sent unsigned: the service
  // refuses it as 400 naming the field, and no request is made with it here.
  if (typeof escrowId !== 'string' || !WELL_FORMED_ESCROW_ID.test(escrowId) || !(tool in SIGNING_TOOLS)) return args;
  switch (tool) {
    case 'submit_delivery':
      if (formChosen(args) || !('payload' in args)) return args;
      return {
        escrowId,
        ...signDelivery(key.secretKey, {
          escrowId,
          payload: args.payload,
          // A partial capture signs its amount; a malformed one is sent as given, for the route to name.
          ...(typeof args.amount === 'string' && /^\d{1,18}(\.\d{1,6})?$/.test(args.amount) ? { amount: args.amount } : {}),
          ...(now ? { submittedAt: await now() } : {}),
        }),
        ...(args.amount !== undefined && !(typeof args.amount === 'string' && /^\d{1,18}(\.\d{1,6})?$/.test(args.amount))
          ? { amount: args.amount }
          : {}),
      };
    case 'refund_after_release':
    case 'request_refund': {
      // A refund (the payee or arbiter) or a request (the payer) over JCS {escrowId, action, amount, reason, signedAt}.
      const { amount, reason } = args;
      if (formChosen(args) || typeof amount !== 'string' || !/^\d{1,18}(\.\d{1,6})?$/.test(amount)) return args;
      if (reason !== undefined && typeof reason !== 'string') return args;
      const signedAt = now ? await now() : undefined;
      return {
        escrowId,
        ...signRefund(
          key.secretKey,
          { escrowId, amount, ...(reason !== undefined ? { reason } : {}), ...(signedAt ? { signedAt } : {}) },
          tool === 'refund_after_release' ? 'refund' : 'refund.request',
        ),
      };
    }
    case 'open_dispute':
      return signedDisputeAction(args, 'reason', key, (reason) => ({ escrowId, action: 'dispute.open', reason }), now);
    case 'submit_evidence':
      return signedDisputeAction(
        args,
        'note',
        key,
        (note) => ({
          escrowId,
          action: 'dispute.evidence',
          note,
          ...('payload' in args ? { payload: args.payload } : {}),
        }),
        now,
      );
    default: {
      const given = args.signatures;
      if (given !== undefined && !Array.isArray(given)) return args;
      const signatures = (given ?? []) as Signature[];
      if (signatures.some((s) => s?.signer === key.publicKey)) return args;
      const signature = signRuling(key.secretKey, {
        escrowId,
        disputeId: await disputeIdOf(escrowId),
        outcome: args.outcome as RulingOutcome,
        ...(args.rationale !== undefined ? { rationale: args.rationale as string } : {}),
        ...(args.shares !== undefined ? { shares: args.shares as Shares } : {}),
      });
      return { ...args, signatures: [...signatures, signature] };
    }
  }
}
