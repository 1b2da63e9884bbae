"""What the stand-in's parts share: wire constants, the records tests read, and small helpers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

JsonDict = dict[str, Any]
T = TypeVar("T")

BOT_SCOPES = (
    "app_mentions:read,assistant:write,channels:history,channels:read,chat:write,groups:history,groups:read,"
    "im:history,reactions:read,reactions:write,usergroups:read,users:read"
)
_JSON_FORM_FIELDS = ("blocks", "attachments", "metadata")
_MAX_TEXT = 40_000
_MAX_BLOCKS = 50
_KNOWN_BLOCK_TYPES = frozenset({
    "actions", "context", "divider", "file", "header", "image", "input", "markdown", "rich_text",
    "section", "video", "table", "context_actions",
})


class ApiCall(NamedTuple):
    """One Web API request as the stand-in saw it: the method and its parameters (token removed)."""

    method: str
    params: JsonDict


@dataclass(frozen=True)
class ApiRequest:
    """One Web API request with its transport details and the answer it got."""

    method: str
    params: JsonDict
    http_verb: str
    content_type: str
    token: str | None
    status: int
    error: str | None


class Delivery(NamedTuple):
    """The bot's answer to one Events API delivery over HTTP."""

    status: int
    body: str


@dataclass
class _Fault:
    remaining: int
    status: int
    error: str
    retry_after: int | None


class _SlackError(Exception):
    """Raised inside a method handler: becomes ``{"ok": false, "error": ..., **extra}``."""

    def __init__(self, error: str, **extra: Any) -> None:
        super().__init__(error)
        self.error = error
        self.extra = extra


def _ts_key(ts: str) -> tuple[int, int]:
    seconds, _, fraction = ts.partition(".")
    return int(seconds), int(fraction or 0)


def _is_ts(value: object) -> bool:
    if not isinstance(value, str):
        return False
    seconds, dot, fraction = value.partition(".")
    return bool(dot) and seconds.isdigit() and fraction.isdigit()


def _channel_type(channel: str) -> str:
    return {"G": "group", "D": "im"}.get(channel[:1], "channel")


def _as_int(value: object, default: int) -> int:
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise _SlackError("invalid_arguments")
