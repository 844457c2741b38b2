"""Every bundle the TypeScript side issued and broke (python/tests/vectors/bundles.json, made by
test/python/vectors.ts) gets the same verdict here: the same ``valid``, the same checks in the same
order, the same failing check names."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import load
import escrow_settlement
from escrow_settlement import verify_bundle

VECTORS = load("bundles.json")


def _verify(v: dict) -> object:
    o = v["options"]
    return verify_bundle(
        v["bundle"],
        trusted_keys=o.get("trustedKeys"),
        witnesses=o.get("witnesses"),
        quorum=o.get("quorum"),
        ap2_issuers=o.get("ap2Issuers"),
        trust_bundle_keys=o.get("trustBundleKeys", False),
    )


def test_the_vectors_cover_every_kind_of_matter_and_break() -> None:
    names = {v["name"] for v in VECTORS}
    for needed in (
        "released",
        "refunded-after-failed-verdict",
        "split-co-signed",
        "released-by-arbiter",
        "facilitator-captured",
        "facilitator-voided",
        "facilitator-refunded-after-capture",
        "ap2-released",
        "ap2-huf-released",
        "witnessed-ed25519-and-mldsa44",
        "witnessed-mldsa44-cosignature-tampered",
        "tampered-proof-signature",
        "wrong-inclusion-path",
        "altered-terms",
    ):
        assert needed in names
    assert any(v["expected"]["valid"] for v in VECTORS) and any(not v["expected"]["valid"] for v in VECTORS)


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_same_result_as_the_typescript_verifier(vector: dict) -> None:
    r = _verify(vector)
    assert r.valid == vector["expected"]["valid"]  # type: ignore[attr-defined]
    assert r.failed == vector["expected"]["failed"]  # type: ignore[attr-defined]
    assert [[c.name, c.ok] for c in r.checks] == vector["expected"]["checks"]  # type: ignore[attr-defined]


def test_trusting_the_bundle_keys_warns() -> None:
    v = next(x for x in VECTORS if x["name"] == "released-trust-bundle-keys")
    r = verify_bundle(v["bundle"], trust_bundle_keys=True)
    assert r.valid and r.warnings and "anyone can make a bundle" in r.warnings[0]


def test_malformed_options_are_errors_not_results() -> None:
    b = VECTORS[0]["bundle"]
    with pytest.raises(TypeError):
        verify_bundle(b, trusted_keys=["nothex"])
    with pytest.raises(TypeError):
        verify_bundle(b, trusted_keys=["a" * 64], trust_bundle_keys=True)
    with pytest.raises(TypeError):
        verify_bundle(b, quorum=1)
    with pytest.raises(TypeError):
        verify_bundle(b, witnesses=["not a vkey"])


def _cli(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    # The package as this test imports it (installed, or from src/ under pytest's pythonpath).
    env = {**os.environ, "PYTHONPATH": str(Path(escrow_settlement.__file__).resolve().parent.parent)}
    return subprocess.run(
        [sys.executable, "-m", "escrow_settlement", *args], capture_output=True, text=True, input=stdin, timeout=120, env=env
    )


def test_cli_prints_one_line_per_check_and_exits_like_the_typescript_cli(tmp_path) -> None:  # type: ignore[no-untyped-def]
    good = next(x for x in VECTORS if x["name"] == "witnessed-ed25519-and-mldsa44")
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(good["bundle"]))
    args = ["verify", str(path)]
    for k in good["options"]["trustedKeys"]:
        args += ["--trusted-key", k]
    for w in good["options"]["witnesses"]:
        args += ["--witness", w]
    r = _cli(args)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.strip().split("\n")
    n = len(good["expected"]["checks"])
    assert [line.split(":")[0] for line in lines[:n]] == [f"PASS {name}" for name, _ in good["expected"]["checks"]]
    assert lines[n:] == ["PAYOUTS payee 1, payer 0, fee 0 (net of refunds after release)", f"OK: all {n} checks passed"]

    # Refused without a pinned key; the detail says how to pin one.
    r = _cli(["verify", str(path)])
    assert r.returncode == 1
    assert "FAIL issuer.trust: no trusted issuer key given: pin the issuer with --issuer-doc FILE" in r.stdout
    assert re.search(r"\nFAILED: 1 of \d+ checks failed\n$", r.stdout)

    # The bundle's own keys: valid, with a warning on stderr.
    r = _cli(["verify", "-", "--trust-bundle-keys"], stdin=json.dumps(good["bundle"]))
    assert r.returncode == 0 and "WARNING" in r.stderr

    broken = next(x for x in VECTORS if x["name"] == "witnessed-mldsa44-cosignature-tampered")
    path.write_text(json.dumps(broken["bundle"]))
    r = _cli(args)
    assert r.returncode == 1
    assert "FAIL checkpoint.cosignatures: only 1 of the 2 required" in r.stdout

    # Usage errors exit 2.
    assert _cli(["verify", str(path), "--trusted-key", "XYZ"]).returncode == 2
    assert _cli(["verify", str(path), "--quorum", "1"]).returncode == 2
    assert _cli(["frobnicate"]).returncode == 2
    path.write_text("{not json")
    r = _cli(["verify", str(path), "--trust-bundle-keys"])
    assert r.returncode == 1 and r.stdout.startswith("FAIL bundle.format:")


def test_cli_issuer_doc_and_ap2_issuers(tmp_path) -> None:  # type: ignore[no-untyped-def]
    v = next(x for x in VECTORS if x["name"] == "ap2-released")
    (tmp_path / "b.json").write_text(json.dumps(v["bundle"]))
    keys = [{"keyId": k["keyId"], "alg": "ed25519", "publicKey": k["publicKey"], "validFrom": k["validFrom"]} for k in v["bundle"]["issuerKeys"]]
    (tmp_path / "issuer.json").write_text(json.dumps({"keys": keys}))
    (tmp_path / "ap2.json").write_text(json.dumps(v["options"]["ap2Issuers"]))
    base = ["verify", str(tmp_path / "b.json"), "--issuer-doc", str(tmp_path / "issuer.json")]
    assert _cli([*base, "--ap2-issuers", str(tmp_path / "ap2.json")]).returncode == 0
    r = _cli(base)
    assert r.returncode == 1 and "FAIL parties[0].ap2: the matter's authority is an AP2 Payment Mandate" in r.stdout
