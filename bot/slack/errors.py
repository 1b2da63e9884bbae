"""How a Web API call fails, for every caller at the edge: the exceptions, and their few words for a log line."""

from __future__ import annotations

import asyncio

import aiohttp
from slack_sdk.errors import SlackApiError

SLACK_ERRORS = (SlackApiError, aiohttp.ClientError, asyncio.TimeoutError)  # a Web API call that failed


def slack_error(error: BaseException) -> str:
    """A Web API failure in a few words for a log line (Slack's error code, never the request or a token)."""
    if isinstance(error, SlackApiError):
        return str(error.response.get("error") or error.response.status_code)
    return type(error).__name__
