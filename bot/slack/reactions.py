"""Reactions on the bot's replies: how leads flag a bad answer or one bad citation, and take it back.

    FLAG_REACTIONS (default :x:, :triangular_flag_on_post:)  the whole answer
    :one: … :nine:                                          citation S1 … S9 of that answer
    any other emoji                                          not a flag: ignored

Only reactions on a message the bot posted as an answer count (found by its ``ts`` in the exchange log).
Everyone's flag reactions are recorded (``bot.verdicts``); only a lead's count as flags, so the review queue
shows leads' judgements with the others' as context. Removing the reaction takes the flag back. Recording a
reaction twice (Slack retries, replicas) leaves one open flag: a flag is idempotent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from bot.exchange_log import LogUnavailable
from bot.slack.deps import NUMBER_REACTIONS, SlackDeps, SlackOptions
from bot.slack.events import Reaction
from bot.slack.threads import BotUser

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FlagTarget:
    label: str | None  # None: the whole answer; "S1" …: one citation


def flag_target(name: str, options: SlackOptions) -> FlagTarget | None:
    """What a reaction named ``name`` flags, or None when it is not a flag reaction."""
    if name in options.flag_reactions:
        return FlagTarget(None)
    if name in NUMBER_REACTIONS:
        return FlagTarget(f"S{NUMBER_REACTIONS.index(name) + 1}")
    return None


async def take_reaction(reaction: Reaction, deps: SlackDeps, bot: BotUser) -> None:
    """Record (or take back) a flag for a reaction on one of the bot's answers; anything else is ignored."""
    target = flag_target(reaction.name, deps.options)
    if target is None or reaction.user == bot.user_id:
        return
    if reaction.item_user is not None and bot.user_id is not None and reaction.item_user != bot.user_id:
        return  # a reaction on someone else's message
    if not deps.seen.first_time(f"reaction:{reaction.event_id}" if reaction.event_id else ""):
        return
    try:
        with deps.in_flight.track():
            await _record(reaction, target, deps)
    except LogUnavailable as error:
        deps.metrics.database_errors.labels("flag").inc()
        # Flags have no journal: say exactly what was lost, so a lead can react again later.
        log.error("could not record :%s: by %s on %s in %s (exchange log unavailable: %s); the reaction must be "
                  "repeated", reaction.name, reaction.user, reaction.message_ts, reaction.channel, error.cause)


async def _record(reaction: Reaction, target: FlagTarget, deps: SlackDeps) -> None:
    answer = await deps.verdicts.answer_at(reaction.channel, reaction.message_ts)
    if answer is None:
        return
    if target.label is not None and target.label not in answer.labels:
        log.info("reaction :%s: on exchange %s names no citation %s: ignored", reaction.name, answer.exchange_id,
                 target.label)
        return
    # Asked outside any session: it may call Slack, and on SQLite the bot's writes take turns on one connection.
    is_lead = await deps.leads.is_lead(reaction.user)
    if reaction.added:
        written = await deps.verdicts.flag(answer.exchange_id, label=target.label, user=reaction.user,
                                           reaction=reaction.name, is_lead=is_lead, at=reaction.at)
    else:
        written = await deps.verdicts.unflag(answer.exchange_id, label=target.label, user=reaction.user,
                                             reaction=reaction.name, at=reaction.at)
    if not written:
        return  # deleted between the lookup and the write
    deps.metrics.flags.labels("answer" if target.label is None else "citation",
                              "added" if reaction.added else "removed").inc()
    log.info("flag %s: exchange=%s label=%s user=%s lead=%s", "added" if reaction.added else "removed", answer.exchange_id,
             target.label or "answer", reaction.user, is_lead)
