"""Auto-escaping for server-rendered HTML: every value is escaped unless it is already `Markup`.

Questions come from Slack users and quotes from documents: either may hold `<script>`. Instead of trusting
each page function to remember `html.escape`, pages are built with `fmt(template, **values)`, which escapes
every value that is not `Markup` (text this module produced). Templates are string literals written here;
only values vary. Pure.
"""

from __future__ import annotations

import html
from collections.abc import Iterable


class Markup(str):
    """Text that is already safe HTML (built by `fmt`, `esc` or `join`): inserted as it is."""

    __slots__ = ()


def esc(value: object) -> Markup:
    """`value` as HTML text: escaped (quotes too, so it is safe in attributes), unless it is already Markup."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape("" if value is None else str(value), quote=True))


def fmt(template: str, **values: object) -> Markup:
    """`template.format(**values)` with every value passed through `esc`."""
    return Markup(template.format(**{name: esc(value) for name, value in values.items()}))


def join(parts: Iterable[object], separator: str = "") -> Markup:
    """Escaped parts joined into one piece of markup."""
    return Markup(esc(separator).join(esc(part) for part in parts))
