"""Evaluating an escrow's terms against a delivery, as the service judges deliveries (the protocol's
§3.3, §5.2) and as ``verdict.replay`` re-runs them offline: ``hash``, ``maxBytes``, ``deadline``,
``shape`` (top-level keys or RFC 6901 JSON Pointers) and the closed list of predicates.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from typing import Any

from ._jcs import canonicalize
from .amounts import amount_micro, format_amount, within_metered_price

__all__ = ["DeliveryFacts", "evaluate_checks", "parse_iso_datetime", "resolve_pointer"]

_ISO_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(?:Z|([+-])(\d{2}):(\d{2}))", re.ASCII
)


def parse_iso_datetime(s: object) -> int | None:
    """Epoch milliseconds of a strict ISO 8601 date-time with a zone, or None (fractions truncated to ms)."""
    if not isinstance(s, str):
        return None
    m = _ISO_RE.fullmatch(s)
    if m is None:
        return None
    year, month, day, hour, minute = (int(m.group(i)) for i in range(1, 6))
    second = int(m.group(6)) if m.group(6) else 0
    if not 1 <= month <= 12 or day < 1:
        return None
    if day > calendar.monthrange(year if year > 0 else 2000, month)[1]:
        return None
    if hour > 23 or minute > 59 or second > 59:
        return None
    off = 0
    if m.group(8):
        oh, om = int(m.group(9)), int(m.group(10))
        if oh > 23 or om > 59:
            return None
        off = (oh * 60 + om) * (1 if m.group(8) == "+" else -1)
    frac = m.group(7)
    ms = int((frac[1:] + "00")[:3]) if frac else 0
    days = _days_from_civil(year, month, day)
    return ((days * 24 + hour) * 60 + minute - off) * 60_000 + second * 1000 + ms


def _days_from_civil(y: int, m: int, d: int) -> int:
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def iso_from_ms(ms: int) -> str:
    """``Date.prototype.toISOString()`` of epoch milliseconds."""
    import datetime as _dt

    t = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(milliseconds=ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


# ---- RFC 6901 JSON Pointer ----

_INDEX_RE = re.compile(r"0|[1-9][0-9]*", re.ASCII)
_MISSING = object()


def parse_pointer(p: str) -> list[str]:
    """Reference tokens of a pointer, unescaped; ``TypeError`` when invalid."""
    if not isinstance(p, str):
        raise TypeError("JSON Pointer must be a string")
    if p != "" and not p.startswith("/"):
        raise TypeError(f'JSON Pointer {p!r} must be empty or start with "/"')
    if re.search(r"~(?![01])", p):
        raise TypeError(f'JSON Pointer {p!r} has "~" not followed by 0 or 1')
    if p == "":
        return []
    return [re.sub(r"~[01]", lambda m: "/" if m.group(0) == "~1" else "~", t) for t in p[1:].split("/")]


def resolve_pointer(doc: Any, pointer: str) -> tuple[bool, Any]:
    """(found, value) of a pointer in a JSON document; never raises for a missing path."""
    cur = doc
    for token in parse_pointer(pointer):
        if isinstance(cur, list):
            if not _INDEX_RE.fullmatch(token):
                return False, None
            i = int(token)
            if i >= len(cur):
                return False, None
            cur = cur[i]
        elif isinstance(cur, dict):
            if token not in cur:
                return False, None
            cur = cur[token]
        else:
            return False, None
    return True, cur


# ---- evaluation ----


@dataclass
class DeliveryFacts:
    """What the verifier knows of one delivery: payload (or ``UNDISCLOSED``), its hash, size and receipt time."""

    payload: Any
    content_hash: str
    size_bytes: int
    received_at_ms: int | None
    amount: int | None = None
    """Micro-units the delivery claims (its ``amount``, else the escrow's): what ``price`` is judged against."""


UNDISCLOSED = object()


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _type_of(v: object) -> str:
    if v is None:
        return "null"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, bool):
        return "a boolean"
    if _is_number(v):
        return "a number"
    return "undefined"


def _lt(a: Any, b: Any) -> bool:
    """JavaScript's ``a < b`` for the values a validated bound can hold (numbers; anything else compares false)."""
    return _is_number(a) and _is_number(b) and a < b


def _predicate(name: object, params: object, payload: Any) -> tuple[bool, str]:
    p = params if isinstance(params, dict) else {}
    if name == "non-empty":
        if payload is None or payload is UNDISCLOSED:
            return False, "payload is null"
        if payload == "" and isinstance(payload, str):
            return False, "payload is an empty string"
        if isinstance(payload, (list, dict)) and len(payload) == 0:
            return False, "payload is empty"
        return True, "payload is not empty"
    if name in ("equals", "number-range", "length-range"):
        found, value = resolve_pointer(None if payload is UNDISCLOSED else payload, p.get("pointer"))  # type: ignore[arg-type]
        if payload is UNDISCLOSED:
            found = False
        lo, hi = p.get("min", _MISSING), p.get("max", _MISSING)
        if name == "equals":
            if not found:
                return False, f"no value at {p.get('pointer')}"
            if canonicalize(value) == canonicalize(p.get("value")):
                return True, f"value at {p.get('pointer')} equals the expected value"
            return False, f"value at {p.get('pointer')} is not the expected value"
        if not found:
            return False, f"no value at {p.get('pointer')}"
        if name == "number-range":
            if not _is_number(value):
                return False, f"value at {p.get('pointer')} is {_type_of(value)}, not a number"
            n = value
        else:
            if isinstance(value, str):
                n = len(value)
            elif isinstance(value, list):
                n = len(value)
            else:
                return False, f"value at {p.get('pointer')} is {_type_of(value)}, not a string or array"
        if lo is not _MISSING and _lt(n, lo):
            return False, f"{n} is below min {lo}"
        if hi is not _MISSING and _lt(hi, n):
            return False, f"{n} is above max {hi}"
        return True, f"{n} is within bounds"
    raise ValueError(f"unknown predicate {name!r}")


def _check(check: Any, d: DeliveryFacts) -> tuple[bool, str]:
    if not isinstance(check, dict):
        raise TypeError("a check must be an object")
    kind = check.get("kind")
    if kind == "hash":
        if d.content_hash.lower() == check.get("expected"):
            return True, "content hash matches"
        return False, f"content hash {d.content_hash} does not match the expected {check.get('expected')}"
    if kind == "maxBytes":
        limit = check.get("limit")
        if not _is_number(limit):
            return False, f"payload is {d.size_bytes} bytes, over the limit"
        if d.size_bytes <= limit:  # type: ignore[operator]
            return True, f"payload is {d.size_bytes} bytes, within the {limit}-byte limit"
        return False, f"payload is {d.size_bytes} bytes, over the {limit}-byte limit"
    if kind == "deadline":
        by = parse_iso_datetime(check.get("by"))
        if by is None:
            return False, f"deadline {check.get('by')!r} is not a valid date-time"
        at = d.received_at_ms
        if at is not None and at <= by:
            return True, f"received at {iso_from_ms(at)}, by the deadline {iso_from_ms(by)}"
        return False, f"received after the deadline {iso_from_ms(by)}"
    if kind == "shape":
        payload = d.payload
        if not isinstance(payload, dict):
            return False, f"payload is {_type_of(None if payload is UNDISCLOSED else payload)}, not an object"
        fields = check.get("requiredFields")
        if not isinstance(fields, list):
            raise TypeError("requiredFields must be an array")
        missing = []
        for f in fields:
            if not isinstance(f, str):
                raise TypeError("requiredFields entries must be strings")
            present = resolve_pointer(payload, f)[0] if f.startswith("/") else f in payload
            if not present:
                missing.append(f)
        if missing:
            return False, f"missing required field{'' if len(missing) == 1 else 's'}: {', '.join(missing)}"
        return True, f"all {len(fields)} required fields present"
    if kind == "predicate":
        return _predicate(check.get("name"), check.get("params"), d.payload)
    if kind == "price":
        per_unit = amount_micro(check.get("perUnit"))
        mx = amount_micro(check["max"]) if "max" in check else None
        if per_unit is None or ("max" in check and mx is None):
            return False, "perUnit or max is not an amount"
        if d.amount is None:
            return False, "the claimed amount is not known"
        found, units = resolve_pointer(None if d.payload is UNDISCLOSED else d.payload, check.get("units"))  # type: ignore[arg-type]
        if not found or d.payload is UNDISCLOSED:
            return False, f"no value at {check.get('units')}"
        if not _is_number(units) or units < 0 or units != units or units in (float("inf"), float("-inf")):
            return False, f"the value at {check.get('units')} is {_type_of(units)}, not a non-negative finite number"
        claim = format_amount(d.amount)
        if not within_metered_price(d.amount, per_unit, units):
            return False, f"claimed {claim} is over {check.get('perUnit')} × {units} units"
        if mx is not None and d.amount > mx:
            return False, f"claimed {claim} is over the max {check.get('max')}"
        return True, f"claimed {claim} is within {check.get('perUnit')} × {units} units"
    return False, f"unknown check kind {kind!r}"


def evaluate_checks(checks: list[Any], d: DeliveryFacts) -> tuple[bool, list[tuple[Any, bool, str]]]:
    """Every check in order: (all passed, [(check, passed, detail)]). A check that cannot be evaluated fails."""
    results = []
    for c in checks:
        try:
            ok, detail = _check(c, d)
        except Exception as e:  # noqa: BLE001 - a check that cannot run fails, as the service's does
            ok, detail = False, f"check could not be evaluated: {e}"
        results.append((c, ok, detail))
    return all(r[1] for r in results), results


def check_kind(c: Any) -> Any:
    """A check's ``kind`` (None when it has none)."""
    return c.get("kind") if isinstance(c, dict) else None
