"""What people in a channel see: a mention answered in its thread with verified quotes, follow-ups in that
thread answered without a mention, flags by reaction — over HTTP and over Socket Mode alike."""

from __future__ import annotations

from retrieval.store import ChunkStore
from storage.flags import flags_for
from tests.slack.harness import ANSWER, FOLLOW_UP, LEAD, QUESTION, TOPIC, Bot

CHANNEL = "C0SUPPORT"


def quotes_in(message: dict) -> list[str]:
    """The text of every rich_text_quote in a message's blocks."""
    return ["".join(e.get("text", "") for e in element["elements"] if "style" not in e)
            for block in message.get("blocks", []) if block["type"] == "rich_text"
            for element in block["elements"] if element["type"] == "rich_text_quote"]


async def test_a_mention_is_answered_in_its_thread_with_quotes_found_in_the_cited_chunks(
        any_bot: Bot, demo_store: ChunkStore) -> None:
    bot, slack = any_bot, any_bot.slack
    question = await bot.ask(CHANNEL, QUESTION)

    reply = await bot.reply(CHANNEL, question["ts"])
    exchange = await bot.exchange_of(CHANNEL, reply["ts"])

    assert reply["thread_ts"] == question["ts"] and reply["text"]
    assert exchange.outcome == "answered" and exchange.event_id and exchange.thread_ts == question["ts"]
    kept = [c for c in exchange.citations if c.kept]
    chunks = await demo_store.get_chunks([c.chunk_id for c in kept])
    shown = quotes_in(reply)
    assert shown and shown == [c.exact_quote for c in kept]
    assert all(c.exact_quote in chunks[c.chunk_id].text for c in kept)
    assert ANSWER in " ".join(shown)
    await bot.settle()
    adds, removes = slack.calls_to("reactions.add"), slack.calls_to("reactions.remove")
    assert [(c["name"], c["timestamp"]) for c in adds] == [("eyes", question["ts"])]
    assert [(c["name"], c["timestamp"]) for c in removes] == [("eyes", question["ts"])]
    assert slack.reactions(CHANNEL, question["ts"]) == {}


async def test_a_follow_up_in_the_answered_thread_is_answered_without_a_mention_from_the_thread_so_far(
        any_bot: Bot) -> None:
    bot, slack = any_bot, any_bot.slack
    question = await bot.ask(CHANNEL, QUESTION)
    await bot.reply(CHANNEL, question["ts"])

    await bot.deliver(slack.user_message(CHANNEL, FOLLOW_UP, thread_ts=question["ts"]))
    follow_up = await bot.reply(CHANNEL, question["ts"], nth=2)
    exchange = await bot.exchange_of(CHANNEL, follow_up["ts"])

    assert follow_up["thread_ts"] == question["ts"]
    assert exchange.question == FOLLOW_UP
    assert TOPIC in (exchange.query or ""), "the earlier question made the follow-up standalone"


async def test_a_leads_reactions_flag_the_answer_and_a_citation_and_removing_one_takes_it_back(any_bot: Bot) -> None:
    bot, slack = any_bot, any_bot.slack
    question = await bot.ask(CHANNEL, QUESTION)
    reply = await bot.reply(CHANNEL, question["ts"])
    exchange = await bot.exchange_of(CHANNEL, reply["ts"])

    for event in (slack.reaction_added(CHANNEL, reply["ts"], "x", user=LEAD),
                  slack.reaction_added(CHANNEL, reply["ts"], "one", user=LEAD),
                  slack.reaction_added(CHANNEL, reply["ts"], "triangular_flag_on_post", user="U0AGENT"),
                  slack.reaction_added(CHANNEL, reply["ts"], "tada", user=LEAD),
                  slack.reaction_removed(CHANNEL, reply["ts"], "x", user=LEAD)):
        await bot.deliver(event)
        await bot.settle()
    async with bot.db.sessions() as session:
        flags = await flags_for(session, exchange.id)

    seen = {(f.label, f.user_id, f.reaction): (f.is_lead, f.removed_at is not None) for f in flags}
    assert seen == {
        (None, LEAD, "x"): (True, True),  # flagged, then taken back
        ("S1", LEAD, "one"): (True, False),  # citation S1 flagged
        (None, "U0AGENT", "triangular_flag_on_post"): (False, False),  # recorded, not a lead's flag
    }
    assert [f for f in flags if f.is_flag] == [f for f in flags if f.label == "S1"]


async def test_a_redelivered_event_is_answered_once(any_bot: Bot) -> None:
    bot, slack = any_bot, any_bot.slack
    mention = slack.app_mention(CHANNEL, QUESTION)
    envelope = await bot.deliver(mention)
    await bot.deliver(envelope, retry=1)  # Slack's retry while the first is being answered
    await bot.reply(CHANNEL, mention["ts"])
    await bot.deliver(envelope, retry=2)  # and once more after the answer was posted
    await bot.settle()

    assert len([p for p in bot.posts() if p.get("thread_ts") == mention["ts"]]) == 1


async def test_a_channel_is_answered_only_from_documents_visible_in_it(bot: Bot) -> None:
    question = "How much goodwill credit can a team lead approve without asking finance?"
    in_leads = await bot.ask("C0LEADS", question)
    in_support = await bot.ask(CHANNEL, question)
    leads_exchange = await bot.exchange_of("C0LEADS", (await bot.reply("C0LEADS", in_leads["ts"]))["ts"])
    support_exchange = await bot.exchange_of(CHANNEL, (await bot.reply(CHANNEL, in_support["ts"]))["ts"])

    assert "leads-escalation-matrix" in {c.document_id for c in leads_exchange.citations if c.kept}
    seen_elsewhere = {r.document_id for r in support_exchange.retrieved} | {
        c.document_id for c in support_exchange.citations}
    assert "leads-escalation-matrix" not in seen_elsewhere


async def test_a_mention_inside_a_thread_of_people_reads_the_thread_for_context(bot: Bot) -> None:
    slack = bot.slack
    parent = slack.user_message(CHANNEL, QUESTION, user="U0ANNA")
    await bot.deliver(parent)
    mention = await bot.ask(CHANNEL, FOLLOW_UP, thread_ts=parent["ts"])
    reply = await bot.reply(CHANNEL, parent["ts"])
    exchange = await bot.exchange_of(CHANNEL, reply["ts"])

    assert exchange.question_ts == mention["ts"] and exchange.thread_ts == parent["ts"]
    assert TOPIC in (exchange.query or "")


async def test_a_mention_at_the_end_of_a_thread_longer_than_a_page_reads_it_to_the_end_for_context(bot: Bot) -> None:
    """conversations.replies answers a page at a time (200 messages here): the question the follow-up points back
    to is the thread's 250th message, so only a reader that follows Slack's cursor finds it."""
    slack = bot.slack
    parent = slack.user_message(CHANNEL, "Lunch plans for Friday?", user="U0ANNA")
    await bot.deliver(parent)
    for n in range(248):
        slack.add_message(CHANNEL, {"user": "U0BEN" if n % 2 else "U0ANNA", "text": f"maybe pizza, option {n}",
                                    "thread_ts": parent["ts"]})
    slack.add_message(CHANNEL, {"user": "U0ANNA", "text": QUESTION, "thread_ts": parent["ts"]})
    mention = await bot.ask(CHANNEL, FOLLOW_UP, thread_ts=parent["ts"])
    reply = await bot.reply(CHANNEL, parent["ts"])
    exchange = await bot.exchange_of(CHANNEL, reply["ts"])

    assert exchange.question_ts == mention["ts"]
    assert TOPIC in (exchange.query or ""), "the follow-up is searched with the question it points back to"


async def test_a_question_the_documents_do_not_answer_gets_no_support_with_the_nearest_fragments(
        bot: Bot, demo_store: ChunkStore) -> None:
    question = await bot.ask(CHANNEL, "What is the capital of France?")
    reply = await bot.reply(CHANNEL, question["ts"])
    exchange = await bot.exchange_of(CHANNEL, reply["ts"])

    assert exchange.outcome == "no_support"
    assert reply["blocks"][0]["text"]["text"] == "The documents I can search do not answer this."
    fragments = quotes_in(reply)
    chunks = await demo_store.get_chunks([r.chunk_id for r in exchange.retrieved])
    assert fragments and all(any(f in c.text for c in chunks.values()) for f in fragments)
