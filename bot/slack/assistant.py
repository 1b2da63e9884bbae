"""The assistant pane (Slack's "Agents & AI Apps"): a thread starts, or the channel it was opened from changes.

    started          remember the thread's context channel; suggest prompts (ASSISTANT_PROMPTS, else the
                     generic ones in the user's language, from their Slack locale; English when Slack does not say)
    context_changed  remember the new context channel (or forget it: the pane left the channel)

The questions asked in the thread are direct messages (``events.parse_direct_message``) and are answered on the
usual path, ``answering.take_question``: the status line and title are set there. The context is kept in this
process (``SlackDeps.assistant_contexts``, bounded); a thread whose context was lost (a restart, another
replica) sees public documents only, never more.
"""

from __future__ import annotations

import logging

from bot.slack.deps import SLACK_ERRORS, SlackDeps, slack_error
from bot.slack.events import AssistantThread
from bot.slack.messages import SLACK_WORDING, slack_wording_for
from bot.slack.text import shorten

log = logging.getLogger(__name__)

CONTEXTS_KEPT = 10_000
PROMPT_TITLE_CHARS = 75


async def take_assistant_thread(thread: AssistantThread, deps: SlackDeps) -> None:
    """Remember the thread's context channel; on a new thread, suggest prompts in the user's language."""
    key = f"{thread.channel}:{thread.thread_ts}"
    contexts = deps.assistant_contexts
    contexts.pop(key, None)
    if thread.context_channel is not None:
        contexts[key] = thread.context_channel
        while len(contexts) > CONTEXTS_KEPT:
            contexts.pop(next(iter(contexts)))
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
