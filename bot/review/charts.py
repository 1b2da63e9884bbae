"""Trend charts as inline SVG, drawn on the server: no JavaScript, no chart library, nothing to build.

A chart is a few lines over days (one point per UTC day that had exchanges). A day without data is a gap, not
a zero: the line breaks there, so a quiet weekend does not read as a perfect score. Rates are drawn on a
0..100% axis cut at a round ceiling; latencies on a millisecond axis with a 1-2-5 ceiling. Each point has a
<title>, which browsers show as a tooltip. Pure: values in, markup out (every label goes through `esc`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Literal

from bot.review.formatting import milliseconds, percent
from bot.review.html_safe import Markup, fmt, join

Unit = Literal["rate", "ms"]

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 56, 24, 28, 36
RATE_CEILINGS = (0.05, 0.1, 0.2, 0.25, 0.5, 1.0)
MAX_X_LABELS = 7


@dataclass(frozen=True, slots=True)
class Series:
    """One line: a name for the legend, a colour, and a value (or None: no data) per day."""

    name: str
    color: str
    points: Sequence[tuple[date, float | None]]


def y_ceiling(values: Sequence[float], unit: Unit) -> float:
    """The top of the y axis: a round number at or above the largest value."""
    top = max(values, default=0.0)
    if unit == "rate":
        return next((ceiling for ceiling in RATE_CEILINGS if top <= ceiling), 1.0)
    if top <= 0:
        return 100.0
    magnitude = 10 ** math.floor(math.log10(top))
    return next(step * magnitude for step in (1, 2, 5, 10) if top <= step * magnitude)


def label(value: float, unit: Unit) -> str:
    """A tooltip label: a percentage for rates (one decimal), a duration for latencies."""
    return percent(value) if unit == "rate" else milliseconds(value)


def tick(value: float, unit: Unit) -> str:
    """An axis label: as short as the round number allows ("2.5%", "1.25%", "100%")."""
    return f"{value * 100:g}%" if unit == "rate" else milliseconds(value)


def line_chart(title: str, series: Sequence[Series], *, start: date, end: date, unit: Unit) -> Markup:
    """An SVG line chart of `series` over the days start..end (inclusive)."""
    days = max((end - start).days, 0)
    values = [value for line in series for _, value in line.points if value is not None]
    top = y_ceiling(values, unit)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(day: date) -> float:
        return LEFT + (plot_w / 2 if days == 0 else plot_w * (day - start).days / days)

    def y(value: float) -> float:
        return TOP + plot_h * (1 - min(value, top) / top)

    parts: list[Markup] = [fmt('<text class="title" x="{x}" y="16">{title}</text>', x=LEFT, title=title)]
    for step in range(5):
        value = top * step / 4
        parts.append(fmt(
            '<line class="grid" x1="{x1}" x2="{x2}" y1="{y}" y2="{y}"/>'
            '<text class="axis" x="{lx}" y="{ly}" text-anchor="end">{text}</text>',
            x1=LEFT, x2=WIDTH - RIGHT, y=f"{y(value):.1f}", lx=LEFT - 6, ly=f"{y(value) + 4:.1f}",
            text=tick(value, unit),
        ))
    every = max(1, math.ceil((days + 1) / MAX_X_LABELS))
    for offset in range(0, days + 1, every):
        day = start + timedelta(days=offset)
        parts.append(fmt('<text class="axis" x="{x}" y="{y}" text-anchor="middle">{text}</text>',
                         x=f"{x(day):.1f}", y=HEIGHT - BOTTOM + 16, text=day.strftime("%m-%d")))
    if not values:
        parts.append(fmt('<text class="empty" x="{x}" y="{y}" text-anchor="middle">no data in this window</text>',
                         x=LEFT + plot_w / 2, y=TOP + plot_h / 2))
    for index, line in enumerate(series):
        parts.extend(_line(line, x, y, unit))
        parts.append(fmt(
            '<rect x="{x}" y="{y}" width="10" height="10" fill="{color}"/>'
            '<text class="legend" x="{tx}" y="{ty}">{name}</text>',
            x=WIDTH - RIGHT - 150 * (len(series) - index), y=8, color=line.color,
            tx=WIDTH - RIGHT - 150 * (len(series) - index) + 14, ty=17, name=line.name,
        ))
    return fmt(
        '<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
        'role="img" aria-label="{title}">{body}</svg>',
        w=WIDTH, h=HEIGHT, title=title, body=join(parts),
    )


def _line(line: Series, to_x: Callable[[date], float], to_y: Callable[[float], float], unit: Unit) -> list[Markup]:
    """Polylines for each run of consecutive days with data, and a dot with a tooltip per point."""
    parts: list[Markup] = []
    run: list[str] = []
    previous: date | None = None
    ordered = sorted(line.points, key=lambda point: point[0])

    def flush() -> None:
        if len(run) > 1:
            parts.append(fmt('<polyline fill="none" stroke="{color}" stroke-width="2" points="{points}"/>',
                             color=line.color, points=" ".join(run)))
        run.clear()

    for day, value in ordered:
        if value is None:
            flush()
            previous = None
            continue
        if previous is not None and (day - previous).days != 1:
            flush()
        px, py = to_x(day), to_y(value)
        run.append(f"{px:.1f},{py:.1f}")
        parts.append(fmt('<circle cx="{cx}" cy="{cy}" r="3" fill="{color}"><title>{tip}</title></circle>',
                         cx=f"{px:.1f}", cy=f"{py:.1f}", color=line.color,
                         tip=f"{day.isoformat()} {line.name}: {label(value, unit)}"))
        previous = day
    flush()
    return parts
