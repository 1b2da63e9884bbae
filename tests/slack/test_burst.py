"""A burst of questions: answered in the order they were asked within a channel; channels do not wait."""

from __future__ import annotations

import asyncio

from bot.slack.concurrency import ChannelOrder
from tests.slack.harness import Bot

CHANNEL = "C0SUPPORT"
QUESTIONS = [
    "How long is an account locked after 5 failed sign-in attempts?",
    "How long do I have to request a refund for an annual plan?",
    "How long is an account locked after failed sign-in attempts?",
    "When is chat support available?",
    "Are monthly plans refunded?",
]


async def test_five_mentions_at_once_in_one_channel_are_each_answered_once_in_the_order_asked(bot: Bot) -> None:
    mentions = [bot.slack.app_mention(CHANNEL, q) for q in QUESTIONS]
    for mention in mentions:
        await bot.deliver(mention)
    for mention in mentions:
        await bot.reply(CHANNEL, mention["ts"])
    await bot.settle()

    replies = bot.slack.bot_messages(CHANNEL)
    assert [r["thread_ts"] for r in replies] == [m["ts"] for m in mentions]


async def test_a_question_waits_only_for_earlier_questions_of_its_own_channel() -> None:
    order = ChannelOrder()
    started: list[str] = []
    release = asyncio.Event()

    async def question(channel: str, ts: str, *, hold: bool = False) -> None:
        with order.reserve(channel, ts) as ticket:
            await asyncio.sleep(0)  # e.g. claiming the event
            await ticket.turn()
            started.append(f"{channel}/{ts}")
            if hold:
                await release.wait()

    tasks = [asyncio.create_task(question("C1", "100.000001", hold=True)),
             asyncio.create_task(question("C1", "100.000003")),
             asyncio.create_task(question("C1", "100.000002")),
             asyncio.create_task(question("C2", "100.000004"))]
    for _ in range(5):
        await asyncio.sleep(0)
    assert started == ["C1/100.000001", "C2/100.000004"], "C2 does not wait for C1; C1's next ones do"
    release.set()
    await asyncio.gather(*tasks)
    assert started[2:] == ["C1/100.000002", "C1/100.000003"], "earliest message first"


async def test_a_question_that_withdraws_hands_its_turn_to_the_next() -> None:
    order = ChannelOrder()
    done: list[str] = []

    async def dropped() -> None:
        with order.reserve("C1", "1.000001"):
            await asyncio.sleep(0.01)  # lost the claim to another replica: never takes its turn

    async def answered() -> None:
        with order.reserve("C1", "1.000002") as ticket:
            await ticket.turn()
            done.append("answered")

    await asyncio.wait_for(asyncio.gather(dropped(), answered()), timeout=5)
    assert done == ["answered"] and order.waiting("C1") == 0


async def test_once_a_question_is_replied_the_next_goes_while_it_is_still_being_recorded() -> None:
    order = ChannelOrder()
    events: list[str] = []
    recorded = asyncio.Event()

    async def first() -> None:
        with order.reserve("C1", "1.000001") as ticket:
            await ticket.turn()
            events.append("first replied")
            ticket.replied()
            await recorded.wait()  # writing its exchange
            events.append("first recorded")
            ticket.replied()  # a second release changes nothing

    async def second() -> None:
        with order.reserve("C1", "1.000002") as ticket:
            await ticket.turn()
            events.append("second replied")
            recorded.set()

    async def third() -> None:
        with order.reserve("C1", "1.000003") as ticket:
            await ticket.turn()
            events.append("third replied")

    await asyncio.wait_for(asyncio.gather(first(), second(), third()), timeout=5)
    # Without the early release the second would wait for the first's record, which waits for it: a timeout.
    assert events[:2] == ["first replied", "second replied"]
    assert events.index("second replied") < events.index("third replied"), "replies still in the order asked"
    assert order.waiting("C1") == 0
