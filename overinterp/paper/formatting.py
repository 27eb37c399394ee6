"""One rule for printing a number of ours: fixed decimals, and "—" where the value does not exist (never
"nan" or "inf").

    number(12.345)              # '12.3'
    number(float("nan"))        # '—'
    number(0.5, 2, sign=True)   # '+0.50'
    span([2.04, 4.96], 0)       # '2–5'
    span([3.04, 2.96], 0)       # '3': a range whose ends read the same is printed once
    bounds(2.5, float("nan"))   # '—': an interval with an undefined end does not exist
    rate(1e-4)                  # '10⁻⁴': a hyperparameter never shows more than three decimals
"""
import math

import pandas as pd

MISSING = "—"


def finite(x) -> float | None:
    """``x`` as a float, None where it is not a finite number (None, NaN, inf, text)."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def number(x, digits: int = 1, sign: bool = False, suffix: str = "") -> str:
    """``x`` to ``digits`` decimals (signed when ``sign``) and ``suffix``; :data:`MISSING` for None, NaN, inf;
    a value that rounds to zero has no minus sign ("0.0", not "-0.0")."""
    x = finite(x)
    if x is None:
        return MISSING
    if round(x, digits) == 0:
        x = 0.0
    return f"{x:{'+' if sign else ''}.{digits}f}{suffix}"


def span(values, digits: int = 1, sign: bool = False, suffix: str = "", sep: str = "–", fmt=None) -> str:
    """'lo–hi' (``sep`` between) of the finite ``values`` with ``suffix`` once; 'lo' alone where both ends read
    the same; :data:`MISSING` where none is finite. ``fmt(x, digits)`` writes an end (default :func:`number`)."""
    shown = [x for x in values if finite(x) is not None]
    if not shown:
        return MISSING
    fmt = fmt or (lambda x, d: number(x, d, sign))
    lo, hi = fmt(min(shown), digits), fmt(max(shown), digits)
    return f"{lo}{suffix}" if lo == hi else f"{lo}{sep}{hi}{suffix}"


def bounds(low, high, digits: int = 1, sign: bool = False) -> str:
    """'low to high'; :data:`MISSING` alone where either end does not exist."""
    lo, hi = number(low, digits, sign), number(high, digits, sign)
    return MISSING if MISSING in (lo, hi) else f"{lo} to {hi}"


def counted(nums) -> str:
    """The distinct counts of a verdict's rows, joined by '; ': '40 images × 2 members',
    '40 images × (2 + 2 models)' (treated and control) or '40 images'."""
    def one(r):
        images = count(int(r["images"]), "image")
        if "treated models" in r.index:
            return f"{images} × ({int(r['treated models'])} + {int(r['control models'])} models)"
        if "members" in r.index:
            return f"{images} × {count(int(r['members']), 'member')}"
        return images
    return "; ".join(dict.fromkeys(one(r) for _, r in nums.iterrows()))


def and_list(names, none: str = "none") -> str:
    """'A', 'A and B', 'A, B and C'; ``none`` for no name."""
    names = list(names)
    if not names:
        return none
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def count(n: int, noun: str, plural: str | None = None) -> str:
    """'no claim', '1 claim', '3 claims': a count that reads as English at 0, 1 and many."""
    return f"no {noun}" if n == 0 else f"1 {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


def minus(value: float) -> str:
    """'−0.035' for -0.035: a number of the source in the claims' text, with the typographic minus."""
    return f"{value:g}".replace("-", "−")


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def rate(value: float) -> str:
    """'0.001' or '10⁻⁴' / '5 × 10⁻⁴': a setting such as a learning rate, as :func:`minus` writes it where that
    needs at most three decimals, else in powers of ten."""
    text = minus(value)
    if "e" not in text and len(text.partition(".")[2]) <= 3:
        return text
    mantissa, exponent = f"{value:e}".split("e")
    mantissa = f"{float(mantissa):g}".replace("-", "−")
    power = "10" + str(int(exponent)).translate(_SUPERSCRIPT)
    return power if mantissa == "1" else f"−{power}" if mantissa == "−1" else f"{mantissa} × {power}"


def extremes(name: str, values, digits: int = 1, sign: bool = False, spread: bool = False) -> dict[str, str]:
    """Glue ``<name>_min`` and ``<name>_max`` of ``values`` (NaN left out), with ``<name>_range`` if ``spread``."""
    values = pd.Series(values, dtype=float)
    out = {f"{name}_min": number(values.min(), digits, sign), f"{name}_max": number(values.max(), digits, sign)}
    return {**out, f"{name}_range": span(values, digits, sign)} if spread else out


def pct(frac: float) -> str:
    """A fraction as the percentage the chapters write: 0.05 -> '5'."""
    return f"{100 * frac:g}"
