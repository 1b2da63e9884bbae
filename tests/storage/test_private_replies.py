"""Private replies (private-first channels): what the asker alone saw is kept once, a share is claimed once and
given back when its post fails, and once posted the shared reply is the exchange's reply while clicks on the
private one still find it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from storage.errors import UnknownExchange
from storage.exchanges import find_by_reply, record_exchange
from storage.private_replies import (
    claim_share,
    keep_private_reply,
    private_reply_for,
    release_share,
    share_posted,
)
from storage.records import PrivateReplyRecord
from tests.storage.builders import at, exchange
from tests.storage.database import Database

CHANNEL, PRIVATE_TS, SHARED_TS = "C0HELP", "1700000000.000200", "1700000000.000300"
SEEN = {"text": "送料は全国一律500円です。", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "…"}}]}


async def shown_privately(db: Database) -> str:
    record = replace(exchange(), channel_id=CHANNEL, reply_ts=PRIVATE_TS)
    async with db.sessions() as session:
        await record_exchange(session, record)
        await keep_private_reply(session, PrivateReplyRecord(record.id, CHANNEL, "U0ASKER", PRIVATE_TS, SEEN, at(1)))
    return record.id


async def test_what_the_asker_saw_is_kept_once(db: Database) -> None:
    exchange_id = await shown_privately(db)
    async with db.sessions() as session:
        again = await keep_private_reply(session, PrivateReplyRecord(exchange_id, CHANNEL, "U0ASKER", PRIVATE_TS,
                                                                     {"text": "другой текст"}, at(2)))
    assert (again.message, again.created_at) == (SEEN, at(1))


async def test_a_private_reply_of_an_unknown_exchange_is_refused(db: Database) -> None:
    async with db.sessions() as session:
        with pytest.raises(UnknownExchange):
            await keep_private_reply(session, PrivateReplyRecord("00000000-0000-4000-8000-000000000000", CHANNEL,
                                                                 "U0ASKER", PRIVATE_TS, SEEN, at(1)))


async def test_a_share_is_claimed_once_given_back_on_failure_and_then_is_the_exchanges_reply(db: Database) -> None:
    exchange_id = await shown_privately(db)
    async with db.sessions() as session:
        _, first = await claim_share(session, exchange_id, user_id="U0ASKER", at=at(3))
        _, second = await claim_share(session, exchange_id, user_id="U0ASKER", at=at(4))
        await release_share(session, exchange_id)  # Slack refused the post
        _, after_release = await claim_share(session, exchange_id, user_id="U0ASKER", at=at(5))
        await share_posted(session, exchange_id, SHARED_TS)
        kept = await private_reply_for(session, exchange_id)
        by_shared = await find_by_reply(session, CHANNEL, SHARED_TS)
        by_private = await find_by_reply(session, CHANNEL, PRIVATE_TS)
    assert (first, second, after_release) == (True, False, True)
    assert kept is not None and (kept.shared_by, kept.shared_at, kept.shared_ts) == ("U0ASKER", at(5), SHARED_TS)
    assert by_shared is not None and by_shared.id == exchange_id and by_shared.reply_ts == SHARED_TS
    assert by_private is not None and by_private.id == exchange_id
