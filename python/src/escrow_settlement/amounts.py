"""Amounts on the wire (the protocol's §2.3, §24): decimal strings, integer micro-units, the shortest
form, the split and metered-price arithmetic, as the service computes them (never floating point)."""

from __future__ import annotations

import re

from ._jcs import format_number

__all__ = ["amount_micro", "format_amount", "split_amount", "within_metered_price"]

MICRO = 1_000_000
_AMOUNT_RE = re.compile(r"\d+(\.\d{1,6})?", re.ASCII)


def amount_micro(s: object) -> int | None:
    """Micro-units of an amount string (at most 18 integer digits, 6 fraction digits; zero allowed), or None."""
    if not isinstance(s, str) or not _AMOUNT_RE.fullmatch(s):
        return None
    whole, _, frac = s.partition(".")
    if len(whole) > 18:
        return None
    return int(whole) * MICRO + int(frac.ljust(6, "0") or "0")


def format_amount(micro: int) -> str:
    """Shortest decimal form: 10000000 → "10", 500000 → "0.5", 0 → "0"."""
    if micro < 0:
        return "-" + format_amount(-micro)
    whole, frac = divmod(micro, MICRO)
    if frac == 0:
        return str(whole)
    return f"{whole}.{str(frac).rjust(6, '0').rstrip('0')}"


def split_amount(total: int, payee_bps: object) -> tuple[int, int]:
    """(payee, payer): the payee gets floor(total × payeeBps / 10000), the payer the rest."""
    if isinstance(payee_bps, bool) or not isinstance(payee_bps, int) or not 0 <= payee_bps <= 10_000:
        raise ValueError(f"payeeBps must be an integer in 0..10000, got {payee_bps}")
    if total < 0:
        raise ValueError("total must not be negative")
    payee = total * payee_bps // 10_000
    return payee, total - payee


def exact_decimal(n: int | float) -> tuple[int, int]:
    """A finite non-negative JSON number as num / 10^scale, read as its shortest round-tripping decimal."""
    if isinstance(n, float) and (n != n or n in (float("inf"), float("-inf"))) or n < 0:
        raise ValueError("not a non-negative finite number")
    text = format_number(float(n)) if isinstance(n, float) else (str(n) if abs(n) <= 2**53 else format_number(float(n)))
    mant, _, exp_part = text.partition("e")
    exp = int(exp_part) if exp_part else 0
    dot = mant.find(".")
    digits = mant if dot == -1 else mant[:dot] + mant[dot + 1 :]
    scale = (0 if dot == -1 else len(mant) - dot - 1) - exp
    if scale >= 0:
        return int(digits), scale
    return int(digits) * 10 ** (-scale), 0


def within_metered_price(amount: int, per_unit: int, units: int | float) -> bool:
    """amount ≤ perUnit × units exactly, in integers."""
    num, scale = exact_decimal(units)
    return amount * 10**scale <= per_unit * num
