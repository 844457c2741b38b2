"""The tables this package keeps its own copy of are the TypeScript side's (python/tests/vectors/constants.json,
made by test/python/vectors.ts from packages/protocol and checked against it by test/python/vectors.test.ts):
ISO 4217 minor units and the codes with none, and the party signature kinds."""

from __future__ import annotations

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
