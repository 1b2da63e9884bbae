"""The assistant pane (Slack's "Agents & AI Apps", ``assistant_view``) and Agent View (``agent_view``): the channel
a private question is asked from.

    started          remember the thread's context channel; suggest prompts (ASSISTANT_PROMPTS, else the
                     generic ones in the user's language, from their Slack locale; English when Slack does not say)
    context_changed  remember the new context channel (or forget it: the pane left the channel)
    app_context      Agent View: remember the channel the user is viewing now, per user (the event names no thread:
                     the app's Messages tab is one conversation); forget it when they view no channel
    context_of       a private question's context channel: the one its own message carries (Agent View's
                     ``app_context``), else its pane thread's, else its user's latest Agent View context

The questions asked in the thread are direct messages (``events.parse_direct_message``) and are answered on the
usual path, ``answering.take_question``: the status line and title are set there. The context is kept in this
process (``SlackDeps.assistant_contexts``, bounded, keyed ``DM:THREAD_TS`` or ``user:USER``); a question whose
context was lost (a restart, another replica) sees public documents only, never more. Either way the channel's
documents are used only while the asker is a member of it (``bot.slack.visibility``).
"""

from __future__ import annotations

import logging

from bot.slack.deps import SLACK_ERRORS, SlackDeps, slack_error
from bot.slack.events import AppContext, AssistantThread, SlackQuestion
from bot.slack.messages import SLACK_WORDING, slack_wording_for
from bot.slack.text import shorten

log = logging.getLogger(__name__)

CONTEXTS_KEPT = 10_000
PROMPT_TITLE_CHARS = 75


async def take_assistant_thread(thread: AssistantThread, deps: SlackDeps) -> None:
    """Remember the thread's context channel; on a new thread, suggest prompts in the user's language."""
    remember(deps.assistant_contexts, f"{thread.channel}:{thread.thread_ts}", thread.context_channel)
    if not thread.started or not deps.seen.first_time(f"assistant:{thread.event_id}" if thread.event_id else ""):
        return
    words = slack_wording_for(await user_language(thread.user, deps))
    prompts = deps.options.assistant_prompts or words.prompts
    try:
        await deps.client.assistant_threads_setSuggestedPrompts(
            channel_id=thread.channel, thread_ts=thread.thread_ts, title=words.prompts_title,
            prompts=[{"title": shorten(p, PROMPT_TITLE_CHARS)[0], "message": p} for p in prompts])
    except SLACK_ERRORS as error:
        log.info("could not suggest prompts in %s thread %s (%s)", thread.channel, thread.thread_ts,
                 slack_error(error))


def take_app_context(context: AppContext, deps: SlackDeps) -> None:
    """Agent View: remember the channel the user is viewing now (or that they view none)."""
    remember(deps.assistant_contexts, _user_key(context.user), context.channel)
    log.info("user %s now views %s", context.user, context.channel or "no channel")


def context_of(question: SlackQuestion, deps: SlackDeps) -> str | None:
    """The channel a private question was asked from, if any (see the module's rules)."""
    if question.context_sent:
        return question.context
    contexts = deps.assistant_contexts
    return contexts.get(f"{question.channel}:{question.reply_thread}") or contexts.get(_user_key(question.user))


def remember(contexts: dict[str, str], key: str, channel: str | None) -> None:
    """Keep ``key``'s context channel (the newest last), or forget it; at most ``CONTEXTS_KEPT``."""
    contexts.pop(key, None)
    if channel is not None:
        contexts[key] = channel
        while len(contexts) > CONTEXTS_KEPT:
            contexts.pop(next(iter(contexts)))


def _user_key(user: str) -> str:
    return f"user:{user}"


async def user_language(user: str, deps: SlackDeps) -> str:
    """The user's language from their Slack locale ("ja-JP" -> "ja"), when we have words for it; else "en"."""
    try:
        response = await deps.client.users_info(user=user, include_locale=True)
    except SLACK_ERRORS as error:
        log.info("cannot read the locale of %s (%s); suggesting prompts in English", user, slack_error(error))
        return "en"
    locale = str((response.get("user") or {}).get("locale") or "")
    language = locale.split("-")[0].lower()
    return language if language in SLACK_WORDING else "en"
