"""The one number rule (:mod:`overinterp.paper.formatting`): fixed decimals, '—' where a value does
not exist, and a range printed once where its two ends read the same."""
import math

from overinterp.paper.formatting import MISSING, bounds, extremes, number, pct, rate, span
from tools.page_audit import DECIMALS


def test_number_writes_fixed_decimals_and_a_dash_for_what_does_not_exist():
    assert (number(12.345), number(0.5, 2, sign=True), number(3, 0, suffix="%")) == ("12.3", "+0.50", "3%")
    assert {number(float("nan")), number(None), number(math.inf), number("x")} == {MISSING}


def test_a_value_that_rounds_to_zero_has_no_minus_sign():
    assert (number(-0.04), number(-0.004, 2), number(-0.0), number(-0.0004, 3, sign=True)) == ("0.0", "0.00", "0.0",
                                                                                             "+0.000")
    assert (number(-0.06), number(-0.005, 3)) == ("-0.1", "-0.005")


def test_a_range_whose_ends_read_the_same_is_printed_once():
    assert span([2.04, 4.96], 0) == "2–5"
    assert span([3.04, 2.96], 0) == "3"                     # both ends read "3": not "3–3"
    assert span([3.04, 2.96], 2) == "2.96–3.04"
    assert span([5.0, 1.0, 3.0], 0, suffix="%") == "1–5%"
    assert span([-0.5, 0.25], 2, sign=True) == "-0.50–+0.25"


def test_a_range_leaves_out_missing_values_and_is_a_dash_without_any():
    assert span([float("nan"), 2.0, None, 4.0], 0) == "2–4"
    assert span([float("nan"), 2.0], 0) == "2"
    assert span([], 0) == span([float("nan")], 0) == MISSING


def test_an_interval_with_an_undefined_end_is_one_dash():
    assert bounds(2.54, 3.06) == "2.5 to 3.1" and bounds(-1, 2, 2, sign=True) == "-1.00 to +2.00"
    assert bounds(float("nan"), float("nan")) == bounds(2.5, None) == MISSING


def test_a_rate_never_shows_more_than_three_decimals():
    assert (rate(0.1), rate(0.001), rate(1.0)) == ("0.1", "0.001", "1")       # as written where that is short
    assert (rate(1e-4), rate(5e-4), rate(2.5e-5), rate(-1e-4)) == ("10⁻⁴", "5 × 10⁻⁴", "2.5 × 10⁻⁵", "−10⁻⁴")
    for value in (1e-4, 0.0005, 0.00125):                   # what the page audit calls too many decimals
        assert DECIMALS.search(f"a learning rate of {value:g}.") and not DECIMALS.search(f"of {rate(value)}.")


def test_a_fraction_reads_as_the_percentage_the_chapters_write():
    assert (pct(0.05), pct(0.125), pct(1.0)) == ("5", "12.5", "100")


def test_extremes_glue_the_smallest_and_largest_value_without_nan():
    assert extremes("gap", [3.14, float("nan"), -1.0]) == {"gap_min": "-1.0", "gap_max": "3.1"}
    assert extremes("gap", [float("nan")]) == {"gap_min": MISSING, "gap_max": MISSING}
    assert extremes("gap", [2.0, 5.0], 0, spread=True)["gap_range"] == span([2.0, 5.0], 0)
