"""The Events API over HTTP: signed ``event_callback`` deliveries and the url_verification handshake."""

from __future__ import annotations

import json
import time
import uuid
from urllib.parse import urlencode

import aiohttp

from .. import slack_events
from .common import Delivery, JsonDict


class EventsOverHttp:
    """Part of ``SlackStandIn`` (its ``__init__`` sets up the state used here)."""

    async def deliver_event(
        self,
        url: str,
        payload: JsonDict,
        *,
        signing_secret: str | None = None,
        retry_num: int | None = None,
        retry_reason: str | None = None,
        timestamp: int | None = None,
        bad_signature: bool = False,
        timeout: float = 10.0,
    ) -> Delivery:
        """POST an event to the bot's Request URL as Slack does; returns ``(status, body)``.

        ``payload`` is an event (wrapped in a fresh envelope) or a whole ``event_callback`` envelope; pass
        the same envelope again with ``retry_num=1, retry_reason="http_timeout"`` to model Slack's retry
        (same ``event_id``). ``timestamp`` (Unix seconds) makes a stale request; ``bad_signature`` signs with
        a wrong secret. The event is applied to the workspace first.
        """
        envelope = self._as_envelope(payload)
        self._apply_event(envelope["event"])
        status, body = await self._post_signed(url, envelope, signing_secret=signing_secret, retry_num=retry_num,
                                               retry_reason=retry_reason, timestamp=timestamp,
                                               bad_signature=bad_signature, timeout=timeout)
        delivery = Delivery(status, body)
        self.deliveries.append((envelope, delivery))
        return delivery

    async def deliver_interaction(self, url: str, payload: JsonDict, *, timeout: float = 10.0) -> Delivery:
        """POST an interactivity payload (``block_actions`` …) as Slack does: a signed form body ``payload=<JSON>``."""
        body = urlencode({"payload": json.dumps(payload)})
        status, text = await self._post_signed(url, body, signing_secret=None, retry_num=None, retry_reason=None,
                                               timestamp=None, bad_signature=False, timeout=timeout,
                                               content_type="application/x-www-form-urlencoded")
        return Delivery(status, text)

    async def verify_url(
        self, url: str, *, challenge: str | None = None, signing_secret: str | None = None
    ) -> Delivery:
        """Send the ``url_verification`` challenge; a correct endpoint answers 200 with the challenge."""
        payload = slack_events.url_verification(challenge or uuid.uuid4().hex)
        status, body = await self._post_signed(url, payload, signing_secret=signing_secret, retry_num=None,
                                               retry_reason=None, timestamp=None, bad_signature=False, timeout=10.0)
        return Delivery(status, body)

    async def _post_signed(
        self,
        url: str,
        payload: JsonDict | str,
        *,
        signing_secret: str | None,
        retry_num: int | None,
        retry_reason: str | None,
        timestamp: int | None,
        bad_signature: bool,
        timeout: float,
        content_type: str = "application/json",
    ) -> tuple[int, str]:
        body = payload if isinstance(payload, str) else json.dumps(payload)
        request_ts = str(int(time.time()) if timestamp is None else timestamp)
        secret = signing_secret if signing_secret is not None else self.signing_secret
        if bad_signature:
            secret = f"not-{secret}"
        headers = {
            "Content-Type": content_type,
            "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
            "X-Slack-Request-Timestamp": request_ts,
            "X-Slack-Signature": slack_events.signature(secret, request_ts, body),
        }
        if retry_num is not None:
            headers["X-Slack-Retry-Num"] = str(retry_num)
            headers["X-Slack-Retry-Reason"] = retry_reason or "http_timeout"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session:
            async with session.post(url, data=body.encode(), headers=headers) as response:
                return response.status, await response.text()
