"""How a Web API call fails, for every caller at the edge: the exceptions, and their few words for a log line."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import aiohttp
from slack_sdk.errors import SlackApiError

from bot.exchange_log import LogUnavailable

log = logging.getLogger(__name__)

SLACK_ERRORS = (SlackApiError, aiohttp.ClientError, asyncio.TimeoutError)  # a Web API call that failed


def slack_error(error: BaseException) -> str:
    """A Web API failure in a few words for a log line (Slack's error code, never the request or a token)."""
    if isinstance(error, SlackApiError):
        return str(error.response.get("error") or error.response.status_code)
    return type(error).__name__


async def give_back(release: Callable[[str], Awaitable[None]], exchange_id: str, what: str) -> None:
    """After Slack refused a post: give the exchange's claim back (``release``) so a later click can try again;
    with the log out, the claim stays (a later click is then told it was done) and one line says so."""
    try:
        await release(exchange_id)
    except LogUnavailable as down:
        log.error("could not give back the %s of exchange %s (%s)", what, exchange_id, down.cause)
