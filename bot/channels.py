"""Per-channel settings: how the bot behaves in each Slack channel, from one TOML file (``CHANNELS_FILE``).

Rules of the file:

- One table per channel id: ``[channels.C0HELP]`` with ``mode`` (``mention``, today's behaviour and the default
  for every channel not in the file; ``every_question``: every top-level question is answered without a mention;
  ``off``: the bot does not answer there), ``handoff`` (the user group ``S…`` or users ``U…``/``W…`` an
  "Ask a person" click brings in: one id or a list), ``threshold`` (in ``every_question`` mode, the least
  evidence probability the bot speaks at; stricter than the answer decision's own by default),
  ``private_first`` (the answer is shown to the asker only, with "Share in thread": ``bot.slack.share``) and
  ``sources`` (a list of source names from ``sources.toml`` or document id beginnings, e.g.
  ``["help", "docs:guides/"]``: questions asked in the channel are answered only from those documents, of the
  ones its visibility already lets it see; it narrows, never widens. Applied in the store's query:
  ``retrieval.store``, "Narrowing").
- Unknown keys, modes or ids are refused, never guessed: a bad file is one error naming the file, the line and
  what to do (``ChannelsFileError``). While the bot runs, a bad edit is logged and the settings it had stay.
- The file is read again when it changes (its modification time and size), so a channel can be switched on or
  off without a restart; a file that does not exist means every channel is ``mention``.

``parse_channels`` is pure (text in, ``Channels`` out); ``ChannelsFile`` adds the reading, off the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal, get_args

from retrieval.toml_tables import TableWords, line_of, named_tables

log = logging.getLogger(__name__)

Mode = Literal["mention", "every_question", "off"]
MODES: tuple[str, ...] = get_args(Mode)
# Stricter than every shipped abstain model's own threshold (0.69-0.81): a help channel hears the bot only when
# it is sure, since nobody asked it in particular.
EVERY_QUESTION_THRESHOLD = 0.85

_CHANNEL_ID = re.compile(r"^[CGD][A-Z0-9]{2,}$")
_HANDOFF_ID = re.compile(r"^[SUW][A-Z0-9]{2,}$")
_WILDCARDS = frozenset("*?")  # Weaviate's like-pattern characters: a prefix is matched literally
_KEYS = frozenset({"mode", "handoff", "threshold", "private_first", "sources"})


class ChannelsFileError(ValueError):
    """The channels file cannot be used; the message is one line naming the file and the line."""


@dataclass(frozen=True, slots=True)
class ChannelSettings:
    mode: Mode = "mention"
    handoff: tuple[str, ...] = ()  # user group ids (S…) and user ids (U…/W…) a hand-off mentions
    threshold: float = EVERY_QUESTION_THRESHOLD  # every_question: the least evidence probability to speak at
    private_first: bool = False
    sources: tuple[str, ...] | None = None  # answer only from these sources / id prefixes; None: all it may see

    @property
    def handoff_mentions(self) -> str:
        """The Slack mentions of the hand-off group or users, as mrkdwn."""
        return " ".join(f"<!subteam^{who}>" if who.startswith("S") else f"<@{who}>" for who in self.handoff)


DEFAULT = ChannelSettings()


@dataclass(frozen=True, slots=True)
class Channels:
    by_id: Mapping[str, ChannelSettings] = field(default_factory=lambda: MappingProxyType({}))

    def of(self, channel: str | None) -> ChannelSettings:
        return self.by_id.get(channel or "", DEFAULT)


_WORDS = TableWords(
    not_toml="{where}: {error}; fix the TOML there",
    foreign="{where}:{line}: unknown table or key {key!r}; only [channels.<id>] tables belong here",
    not_tables="{where}:{line}: 'channels' must be tables like [channels.C0HELP]",
)


def parse_channels(text: str, where: str = "channels file") -> Channels:
    """The settings ``text`` declares; ``ChannelsFileError`` naming ``where`` and the line when it is wrong."""
    tables = named_tables(text, "channels", where, _WORDS, ChannelsFileError)
    by_id = {channel: _channel(channel, table, text, where) for channel, table in tables.items()}
    return Channels(MappingProxyType(by_id))


def _channel(channel: str, table: object, text: str, where: str) -> ChannelSettings:
    header = line_of(text, "channels", channel)
    if not _CHANNEL_ID.match(channel) or not isinstance(table, dict):
        raise ChannelsFileError(f"{where}:{header}: [channels.{channel}] is not a channel id's table (C…, G…, D…); "
                                "use the id from the channel's details, e.g. [channels.C0HELP]")

    def bad(key: str, what: str) -> ChannelsFileError:
        return ChannelsFileError(f"{where}:{line_of(text, key, after=header)}: [channels.{channel}] {key}: {what}")

    extra = sorted(set(table) - _KEYS)
    if extra:
        raise bad(extra[0], f"unknown key; use {', '.join(sorted(_KEYS))}")
    mode = table.get("mode", DEFAULT.mode)
    if mode not in MODES:
        raise bad("mode", f"{mode!r} is not one of {', '.join(MODES)}")
    handoff = table.get("handoff", [])
    handoff = [handoff] if isinstance(handoff, str) else handoff
    if not isinstance(handoff, list) or not all(isinstance(h, str) and _HANDOFF_ID.match(h) for h in handoff):
        raise bad("handoff", f"{table.get('handoff')!r} is not a user group id (S…) or user ids (U…, W…)")
    threshold = table.get("threshold", DEFAULT.threshold)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 <= threshold <= 1.0:
        raise bad("threshold", f"{threshold!r} is not a number from 0 to 1")
    private_first = table.get("private_first", DEFAULT.private_first)
    if not isinstance(private_first, bool):
        raise bad("private_first", f"{private_first!r} is not true or false")
    sources = table.get("sources")
    if sources is not None:
        if not isinstance(sources, list):
            raise bad("sources", f"{sources!r} is not a list of source names or document id prefixes; "
                                 'write it as a list, e.g. sources = ["help", "docs:guides/"]')
        if not sources:
            raise bad("sources", "the list is empty; name at least one source or document id prefix, or remove "
                                 "the key to answer from every document the channel may see")
        for entry in sources:
            if not isinstance(entry, str) or not entry.strip() or entry != entry.strip() or _WILDCARDS & set(entry):
                raise bad("sources", f"{entry!r} is not a source name or the beginning of document ids "
                                     "(not empty, no surrounding spaces, no * or ?)")
    return ChannelSettings(mode=mode, handoff=tuple(handoff), threshold=float(threshold), private_first=private_first,
                           sources=tuple(dict.fromkeys(sources)) if sources is not None else None)


def read_channels(path: Path) -> Channels:
    """The settings in ``path`` (none when it does not exist); ``ChannelsFileError`` when it is wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Channels()
    except (OSError, UnicodeDecodeError) as error:
        raise ChannelsFileError(f"{path}: cannot be read ({error}); make it a readable UTF-8 file") from None
    return parse_channels(text, str(path))


class ChannelsFile:
    """The channels file, read again whenever it changes; a bad change is logged and the last good one kept."""

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._stamp: tuple[int, int] | None = None
        self._channels = Channels()

    @property
    def path(self) -> Path | None:
        return self._path

    def load(self) -> Channels:
        """Read the file now (at start-up): ``ChannelsFileError`` when it is wrong."""
        if self._path is not None:
            stamp = self._stat()
            self._channels, self._stamp = read_channels(self._path), stamp
        return self._channels

    async def current(self) -> Channels:
        """The settings in force: the file's, read again (off the loop) if it changed since the last read."""
        if self._path is None:
            return self._channels
        return await asyncio.to_thread(self._refreshed)

    def _refreshed(self) -> Channels:
        stamp = self._stat()
        if stamp == self._stamp:
            return self._channels
        try:
            channels = read_channels(self._path) if self._path is not None else Channels()
        except ChannelsFileError as error:
            log.error("%s; keeping the channel settings read before", error)
        else:
            self._channels = channels
            log.info("channel settings read from %s: %d channel(s)", self._path, len(channels.by_id))
        self._stamp = stamp  # a bad file is reported once, not on every message
        return self._channels

    def _stat(self) -> tuple[int, int]:
        assert self._path is not None
        try:
            info = self._path.stat()
        except FileNotFoundError:
            return (0, -1)
        return (info.st_mtime_ns, info.st_size)
