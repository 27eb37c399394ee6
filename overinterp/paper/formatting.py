"""One rule for printing a number of ours: fixed decimals, and "—" where the value does not exist.

Every glued number, table cell and command-line line goes through :func:`number`, so no page prints
"nan", "inf" or "+nan" for a measure that is undefined (no image with an SIS, a control at chance).

    number(12.345)              # '12.3'
    number(float("nan"))        # '—'
    number(0.5, 2, sign=True)   # '+0.50'
"""
from __future__ import annotations

import math

__all__ = ["MISSING", "number"]

MISSING = "—"


def number(x, digits: int = 1, sign: bool = False, suffix: str = "") -> str:
    """``x`` to ``digits`` decimals (with its sign when ``sign``) and ``suffix``; :data:`MISSING`
    where ``x`` is None, NaN or infinite."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return MISSING
    if not math.isfinite(x):
        return MISSING
    return f"{x:{'+' if sign else ''}.{digits}f}{suffix}"
