"""Per-channel settings: what an admin writes in channels.toml is what each channel does; a bad file is refused
with one line naming the file and the line, and while the bot runs a bad edit keeps the settings it had."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.channels import (
    EVERY_QUESTION_THRESHOLD,
    ChannelsFile,
    ChannelsFileError,
    ChannelSettings,
    parse_channels,
)
from bot.settings import Settings

EXAMPLE = """\
# The help desk's channel: every question answered, the on-call group brought in on request.
[channels.C0HELP]
mode = "every_question"
handoff = "S0ONCALL"
threshold = 0.9

[channels.C0RANDOM]
mode = "off"

[channels.G0PRIVATE]
handoff = ["U0ANNA", "W0BORIS"]
private_first = true
"""


def test_each_channel_gets_what_its_table_says_and_others_keep_mentions() -> None:
    channels = parse_channels(EXAMPLE)
    assert channels.of("C0HELP") == ChannelSettings("every_question", ("S0ONCALL",), 0.9, False)
    assert channels.of("C0RANDOM").mode == "off"
    assert channels.of("G0PRIVATE") == ChannelSettings("mention", ("U0ANNA", "W0BORIS"), EVERY_QUESTION_THRESHOLD,
                                                       True)
    assert channels.of("C0ELSEWHERE") == ChannelSettings()
    assert channels.of(None).mode == "mention"
    assert channels.of("C0HELP").handoff_mentions == "<!subteam^S0ONCALL>"
    assert channels.of("G0PRIVATE").handoff_mentions == "<@U0ANNA> <@W0BORIS>"


@pytest.mark.parametrize(("sources", "narrowed"), [
    (None, None),  # no key: everything the channel's visibility allows
    ('["help"]', ("help",)),
    ('["help", "docs:guides/"]', ("help", "docs:guides/")),
    ('["справка", "ヘルプ:", "help", "help"]', ("справка", "ヘルプ:", "help")),  # any script; a repeat once
])
def test_sources_narrow_a_channel_to_the_listed_sources_and_prefixes(sources: str | None,
                                                                     narrowed: tuple[str, ...] | None) -> None:
    text = '[channels.C0HELP]\nmode = "every_question"\n' + (f"sources = {sources}\n" if sources else "")
    assert parse_channels(text).of("C0HELP").sources == narrowed
    assert parse_channels(text).of("C0ELSEWHERE").sources is None


@pytest.mark.parametrize(("text", "line", "words"), [
    ('[channels.C0HELP]\nmode = "every_question"\n\n[channels.C0OPS]\nmode = "always"\n', 5, "'always' is not one of"),
    ('[channels.C0HELP]\nmode = "every_question"\nhandoff = "oncall-team"\n', 3, "not a user group id"),
    ('[channels.C0HELP]\nthreshold = 1.5\n', 2, "not a number from 0 to 1"),
    ('[channels.C0HELP]\nthreshold = true\n', 2, "not a number from 0 to 1"),
    ('[channels.C0HELP]\nprivate_first = "yes"\n', 2, "not true or false"),
    ('[channels.C0HELP]\nmode = "mention"\nhandbook = ["faq"]\n', 3, "unknown key"),
    ('[channels.C0HELP]\nmode = "every_question"\nsources = "help"\n', 3, "is not a list"),
    ('[channels.C0HELP]\nsources = []\n', 2, "the list is empty"),
    ('[channels.C0HELP]\n\nsources = ["help", ""]\n', 3, "'' is not a source name"),
    ('[channels.C0HELP]\nsources = ["docs:*"]\n', 2, "no * or ?"),
    ('[channels.C0HELP]\nsources = [" help"]\n', 2, "no surrounding spaces"),
    ('[channels.C0HELP]\nsources = [3]\n', 2, "3 is not a source name"),
    ('[channels.help]\nmode = "every_question"\n', 1, "not a channel id"),
    ('[channel.C0HELP]\nmode = "every_question"\n', 1, "unknown table or key 'channel'"),
    ('[channels.C0HELP]\nmode = every_question\n', 2, "fix the TOML"),
])
def test_a_bad_file_is_one_line_naming_the_line(text: str, line: int, words: str) -> None:
    with pytest.raises(ChannelsFileError) as raised:
        parse_channels(text, "channels.toml")
    message = str(raised.value)
    assert "\n" not in message
    assert words in message
    assert f"channels.toml:{line}" in message or f"line {line}" in message


def test_the_default_file_is_in_verbatim_home_and_an_empty_setting_means_the_default(tmp_path: Path) -> None:
    home = Settings(_env_file=None, verbatim_home=tmp_path, channels_file="")  # type: ignore[call-arg]
    assert home.channels_path() == tmp_path / "channels.toml"
    named = Settings(_env_file=None, channels_file=str(tmp_path / "help.toml"))  # type: ignore[call-arg]
    assert named.channels_path() == tmp_path / "help.toml"


async def test_an_edit_is_read_without_a_restart_and_a_bad_edit_keeps_the_last_good_settings(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "channels.toml"
    file = ChannelsFile(path)
    assert file.load().of("C0HELP").mode == "mention"  # no file yet: mentions everywhere

    path.write_text('[channels.C0HELP]\nmode = "every_question"\n', encoding="utf-8")
    assert (await file.current()).of("C0HELP").mode == "every_question"

    path.write_text('[channels.C0HELP]\nmode = "off"\n', encoding="utf-8")
    _touch_later(path)
    assert (await file.current()).of("C0HELP").mode == "off"

    path.write_text('[channels.C0HELP]\nmode = "of"\n', encoding="utf-8")
    _touch_later(path)
    assert (await file.current()).of("C0HELP").mode == "off"
    assert any(f"{path}:2" in r.getMessage() and "keeping" in r.getMessage() for r in caplog.records)

    path.unlink()
    assert (await file.current()).of("C0HELP").mode == "mention"


def test_a_bad_file_at_start_up_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "channels.toml"
    path.write_text('[channels.C0HELP]\nmode = "loud"\n', encoding="utf-8")
    with pytest.raises(ChannelsFileError, match=r"channels.toml:2: \[channels.C0HELP\] mode"):
        ChannelsFile(path).load()


def _touch_later(path: Path) -> None:
    """Move the modification time on, as a later edit would (two writes in one test can share a timestamp)."""
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
