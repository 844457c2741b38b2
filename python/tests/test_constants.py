"""The tables this package keeps its own copy of are the TypeScript side's (python/tests/vectors/constants.json,
made by test/python/vectors.ts from packages/protocol and checked against it by test/python/vectors.test.ts):
ISO 4217 minor units and the codes with none, and the party signature kinds. Then the AP2 nesting bound."""

from __future__ import annotations

import json

import pytest

from conftest import load
from escrow_settlement import ap2
from escrow_settlement.iso4217 import ISO_4217_MINOR_UNITS, NO_MINOR_UNIT, iso4217_minor_unit
from escrow_settlement.verify import PARTY_KINDS

CONSTANTS = load("constants.json")


def test_the_iso_4217_table_is_the_services() -> None:
    assert ISO_4217_MINOR_UNITS == CONSTANTS["iso4217MinorUnits"]
    assert sorted(NO_MINOR_UNIT) == CONSTANTS["noMinorUnit"]
    assert not NO_MINOR_UNIT & ISO_4217_MINOR_UNITS.keys()


def test_the_party_signature_kinds_are_the_services() -> None:
    assert PARTY_KINDS == CONSTANTS["partySignatureKinds"]


@pytest.mark.parametrize(
    ("code", "exponent"),
    # HUF, IDR, COP, PKR and IQD are where ISO 4217 and CLDR (locale data) disagree; CLF and UYW CLDR does not know.
    [("USD", 2), ("JPY", 0), ("BHD", 3), ("HUF", 2), ("IDR", 2), ("COP", 2), ("PKR", 2), ("IQD", 3), ("CLF", 4), ("UYW", 4)],
)
def test_minor_units_come_from_iso_4217(code: str, exponent: int) -> None:
    assert ap2.minor_exponent(code) == exponent


@pytest.mark.parametrize("code", ["XAU", "XDR", "XXX", "HRK", "SLL", "ZWL", "CUC", "ANG", "usd", "", "__class__", "get"])
def test_codes_with_no_minor_unit_withdrawn_or_not_codes_have_none(code: str) -> None:
    assert ap2.minor_exponent(code) is None
    assert iso4217_minor_unit(code) is None


def test_non_strings_have_no_minor_unit() -> None:
    assert ap2.minor_exponent(None) is None
    assert ap2.minor_exponent(["USD"]) is None


def _token(payload: dict, disclosures: list[str]) -> ap2.Presented:
    jws = ap2.Jws({"alg": "ES256"}, payload, "", b"")
    return ap2.Presented("", "", jws, disclosures)


def _payload(levels: int) -> dict:
    """A payload (level 1) whose deepest container, objects and arrays alternating, is at level `levels`."""
    v: object = {}
    for i in range(levels - 2):
        v = {"a": v} if i % 2 else [v]
    return {"deep": v}


@pytest.mark.parametrize(("levels", "ok"), [(ap2.AP2_MAX_DEPTH, True), (ap2.AP2_MAX_DEPTH + 1, False), (5000, False)])
def test_claims_nest_at_most_32_levels(levels: int, ok: bool) -> None:
    payload = _payload(levels)
    if ok:
        assert ap2.resolve_disclosures(_token(payload, []), "open mandate")["deep"] is not None
    else:
        with pytest.raises(ap2.Ap2Refusal) as e:
            ap2.resolve_disclosures(_token(payload, []), "open mandate")
        assert e.value.field == "ap2.depth"
        assert "deeper than 32 levels" in str(e.value)


def test_disclosed_values_count_toward_the_nesting_bound() -> None:
    # A claim disclosed into the payload (level 1) whose value nests 32 containers: the deepest at level 33.
    inner: object = {}
    for _ in range(31):
        inner = {"a": inner}
    disclosure = ap2.b64u_encode(json.dumps(["salt", "claim", inner]).encode())
    payload = {"_sd": [ap2.b64u_sha256(disclosure)]}
    with pytest.raises(ap2.Ap2Refusal) as e:
        ap2.resolve_disclosures(_token(payload, [disclosure]), "closed mandate")
    assert e.value.field == "ap2.depth"
    # One level less is accepted.
    disclosure = ap2.b64u_encode(json.dumps(["salt", "claim", inner["a"]]).encode())  # type: ignore[index]
    payload = {"_sd": [ap2.b64u_sha256(disclosure)]}
    assert "claim" in ap2.resolve_disclosures(_token(payload, [disclosure]), "closed mandate")


def test_json_too_deep_for_the_parser_is_refused_as_depth_too() -> None:
    # JSON that Python's parser cannot even read (far past 32 levels) is ap2.depth, not a crash.
    deep = ap2.b64u_encode(("[" * 100_000 + "]" * 100_000).encode())
    header = ap2.b64u_encode(b'{"alg":"ES256"}')
    with pytest.raises(ap2.Ap2Refusal) as e:
        ap2.parse_presented(f"{header}.{deep}.AAAA~", "open mandate")
    assert e.value.field == "ap2.depth"
    disclosure = ap2.b64u_encode(('["salt", "claim", ' + "[" * 100_000 + "]" * 100_000 + "]").encode())
    payload = {"_sd": [ap2.b64u_sha256(disclosure)]}
    with pytest.raises(ap2.Ap2Refusal) as e:
        ap2.resolve_disclosures(_token(payload, [disclosure]), "closed mandate")
    assert e.value.field == "ap2.depth"
