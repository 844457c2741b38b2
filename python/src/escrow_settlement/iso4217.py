"""ISO 4217 codes and their minor units: the service's own table (the repository's docs/ap2.md §3,
packages/protocol/src/ap2/iso4217.ts), never the runtime's locale data (CLDR gives HUF, IDR, COP, PKR
and IQD 0 digits and does not know CLF or UYW).

ISO 4217 list one as SIX published it on 2025-05-12 (amendment 179): every code with a numeric minor
unit, with that unit. Codes the list gives no minor unit ("N.A.": precious metals, bond-market units,
SDR, test and no-currency codes) are in ``NO_MINOR_UNIT``. Codes no longer on list one (ANG, CUC,
HRK, SLL, ZWL, ...) are in neither and are refused as unknown. tests/test_constants.py checks both
against the TypeScript table (through tests/vectors/constants.json, which test/python/vectors.ts makes).
"""

from __future__ import annotations

__all__ = ["ISO_4217_MINOR_UNITS", "NO_MINOR_UNIT", "iso4217_minor_unit"]

_BY_EXPONENT: dict[int, str] = {
    0: "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF",
    2: (
        "AED AFN ALL AMD AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BOV BRL BSD BTN BWP BYN BZD CAD "
        "CDF CHE CHF CHW CNY COP COU CRC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP "
        "GMD GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT LAK LBP LKR LRD LSL MAD "
        "MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD PAB PEN PGK PHP "
        "PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT "
        "TOP TRY TTD TWD TZS UAH USD USN UYU UZS VED VES WST XAD XCD XCG YER ZAR ZMW ZWG"
    ),
    3: "BHD IQD JOD KWD LYD OMR TND",
    4: "CLF UYW",
}

#: Minor-unit exponent (fraction digits) of every code on list one that has one.
ISO_4217_MINOR_UNITS: dict[str, int] = {c: d for d, codes in _BY_EXPONENT.items() for c in codes.split()}

#: Codes on list one whose minor unit is "N.A.": no amount of them is a whole number of minor units.
NO_MINOR_UNIT: frozenset[str] = frozenset("XAG XAU XBA XBB XBC XBD XDR XPD XPT XSU XTS XUA XXX".split())


def iso4217_minor_unit(code: object) -> int | None:
    """The minor-unit exponent of an ISO 4217 code (USD 2, JPY 0, HUF 2, IQD 3, CLF 4), or None."""
    return ISO_4217_MINOR_UNITS.get(code) if isinstance(code, str) else None
