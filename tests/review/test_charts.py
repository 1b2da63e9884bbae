"""Trend charts: a round axis, gaps where a day had no exchanges, tooltips, and labels that cannot inject markup."""

from __future__ import annotations

from datetime import date, timedelta
from xml.etree import ElementTree

import pytest

from bot.review.charts import Series, line_chart, y_ceiling

SVG = "{http://www.w3.org/2000/svg}"
D0 = date(2026, 11, 1)


def day(offset: int) -> date:
    return D0 + timedelta(days=offset)


@pytest.mark.parametrize(
    ("values", "unit", "expected"),
    [
        ([], "rate", 0.05),
        ([0.0], "rate", 0.05),
        ([0.04, 0.07], "rate", 0.1),
        ([0.3], "rate", 0.5),
        ([0.9], "rate", 1.0),
        ([1.0], "rate", 1.0),
        ([], "ms", 100.0),
        ([48.0], "ms", 50.0),
        ([120.0], "ms", 200.0),
        ([480.0, 90.0], "ms", 500.0),
        ([5000.0], "ms", 5000.0),
        ([5001.0], "ms", 10000.0),
    ],
)
def test_the_y_axis_ends_on_a_round_number_above_the_data(values: list[float], unit: str, expected: float) -> None:
    assert y_ceiling(values, unit) == pytest.approx(expected)  # type: ignore[arg-type]


def parse(markup: str) -> ElementTree.Element:
    return ElementTree.fromstring(markup)


def test_a_day_without_data_breaks_the_line_instead_of_reading_as_zero() -> None:
    points = [(day(0), 0.1), (day(1), 0.2), (day(3), 0.05), (day(4), None), (day(5), 0.3), (day(6), 0.25)]
    svg = parse(line_chart("No-support rate", [Series("no support", "#d08c00", points)], start=D0, end=day(6),
                           unit="rate"))
    polylines = svg.findall(f"{SVG}polyline")
    assert [len(line.get("points", "").split()) for line in polylines] == [2, 2]  # days 0-1 and 5-6; 3 stands alone
    tooltips = [title.text for title in svg.iter(f"{SVG}title")]
    assert tooltips == ["2026-11-01 no support: 10.0%", "2026-11-02 no support: 20.0%",
                        "2026-11-04 no support: 5.0%", "2026-11-06 no support: 30.0%", "2026-11-07 no support: 25.0%"]


def test_an_empty_window_says_so_and_a_single_day_is_centred() -> None:
    empty = parse(line_chart("Latency", [Series("p50", "#000", [])], start=D0, end=day(29), unit="ms"))
    assert "no data in this window" in "".join(empty.itertext())
    single = parse(line_chart("Latency", [Series("p50", "#000", [(D0, 120.0)])], start=D0, end=D0, unit="ms"))
    (dot,) = single.findall(f"{SVG}circle")
    assert float(dot.get("cx", "0")) == pytest.approx(56 + (640 - 56 - 24) / 2)


def test_chart_labels_are_escaped() -> None:
    svg = line_chart("<script>x</script>", [Series('"><script>', "#000", [(D0, 0.5)])], start=D0, end=D0, unit="rate")
    assert "<script>" not in svg
    assert "&lt;script&gt;x&lt;/script&gt;" in svg
    parse(svg)  # still well-formed
