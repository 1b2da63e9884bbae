"""The Bolt app factory. There is no module-level app: each call builds one from settings and deps.

The app acknowledges every event at once (``process_before_response`` off) and answers in the background,
so Slack never waits on a search; Bolt verifies the signature and timestamp of each HTTP request (a forged
or stale one gets 401 and reaches no listener) and drops the bot's own messages before any listener.
"""

from __future__ import annotations

import logging

from slack_bolt.app.async_app import AsyncApp

from bot.settings import Settings
from bot.slack.deps import SlackDeps
from bot.slack.listeners import register


class _ClientGivenNotice(logging.Filter):
    """Bolt reads SLACK_BOT_TOKEN from the environment itself and warns that our client's token wins.
    It does, on purpose (the client carries SLACK_API_URL and the retry handlers): drop that one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "`token` will be unused" not in record.getMessage()


def create_app(settings: Settings, deps: SlackDeps) -> AsyncApp:
    """A Bolt app answering with ``deps``; its Web API client is ``deps.client`` (SLACK_API_URL, 429 retries)."""
    secret = settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else ""
    logger = logging.getLogger("bot.slack.bolt")
    if not any(isinstance(f, _ClientGivenNotice) for f in logger.filters):
        logger.addFilter(_ClientGivenNotice())
    app = AsyncApp(
        client=deps.client,
        signing_secret=secret,  # "" in Socket Mode, where requests arrive over the authenticated socket
        name="verbatim",
        logger=logger,
        process_before_response=False,
    )
    register(app, deps)
    return app
