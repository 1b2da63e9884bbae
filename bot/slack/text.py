"""Slack's text formats, both ways, as pure functions.

In: a message's ``text`` is Slack's mrkdwn with entities (``&amp; &lt; &gt;``) and angle-bracket tokens
(``<@U123>``, ``<#C123|general>``, ``<https://x|label>``, ``<!here>``, ``<!subteam^S1|@leads>``). The search
should see what a person reads, so ``clean_question`` turns every token into its visible label (or drops it:
the bot's own mention, bare user ids) and decodes the entities.

Out: whatever we put into mrkdwn (titles, claims, sections) is escaped with ``escape_mrkdwn``, so a ``<`` in
a document can never become a link or a mention; links are built only from a document's metadata URL, and
only for http(s) URLs (``link``).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_TOKEN = re.compile(r"<([^<>]*)>")
_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))


def clean_question(text: str, bot_user_id: str | None = None) -> str:
    """The question as a person reads it: Slack's tokens resolved to their labels, entities decoded.

    >>> clean_question("<@UBOT> what is <https://acme.test/p|the policy> for <#C1|billing> &amp; refunds?", "UBOT")
    'what is the policy for #billing & refunds?'
    """
    cleaned = _TOKEN.sub(lambda m: _label(m.group(1), bot_user_id), text)
    for entity, char in _ENTITIES:
        cleaned = cleaned.replace(entity, char)
    return " ".join(cleaned.split())


def _label(token: str, bot_user_id: str | None) -> str:
    target, _, label = token.partition("|")
    if target.startswith("@"):  # a user: the bot itself, or a person (no users:read scope: keep a given label)
        return "" if target[1:] == bot_user_id else (f"@{label.lstrip('@')}" if label else "")
    if target.startswith("#"):  # a channel
        return f"#{label}" if label else ""
    if target.startswith("!"):  # <!here>, <!channel>, <!subteam^S1|@leads>, <!date^…|fallback>
        return label
    return label or target  # a link: its label, else the URL itself


def escape_mrkdwn(text: str) -> str:
    """Escape the three characters Slack's mrkdwn gives meaning to (``&`` first)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def fit_mrkdwn(text: str, limit: int, ellipsis: str = "…") -> str:
    """``text`` escaped for mrkdwn, shortened (with ``ellipsis``) so the escaped form fits in ``limit``.

    The cut is made in the raw text, so an entity is never split in half.
    """
    escaped = escape_mrkdwn(text)
    if len(escaped) <= limit:
        return escaped
    keep = limit - len(ellipsis)
    raw = text[:keep]
    while (excess := len(escape_mrkdwn(raw)) - keep) > 0:
        raw = raw[: len(raw) - excess]  # each raw character is at least one escaped one
    return escape_mrkdwn(raw.rstrip()) + ellipsis


def safe_url(url: str | None) -> str | None:
    """The URL if it may be linked (http or https with a host), else None."""
    if not url:
        return None
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return url.strip()


def link(url: str | None, label: str) -> str:
    """``<url|label>`` in mrkdwn, or the escaped label alone when the URL may not be linked."""
    target = safe_url(url)
    if target is None:
        return escape_mrkdwn(label)
    # Inside <…> a "|" would end the URL and a ">" the link: percent-encode them; & < > as entities.
    target = escape_mrkdwn(target.replace("|", "%7C").replace(" ", "%20"))
    return f"<{target}|{escape_mrkdwn(label)}>"


def shorten(text: str, limit: int) -> tuple[str, bool]:
    """(``text`` cut at a word boundary to at most ``limit`` characters, whether it was cut).

    The kept part is a verbatim prefix of ``text`` (trailing spaces dropped), so a shortened quote is still
    found in its document.
    """
    if len(text) <= limit:
        return text, False
    cut = text.rfind(" ", 0, limit)
    kept = text[: cut if cut > limit // 2 else limit]
    return kept.rstrip(), True
