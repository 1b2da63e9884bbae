"""Socket Mode: the ``/socket`` websocket, envelopes, acknowledgements, redelivery and reconnects."""

from __future__ import annotations

import asyncio
import json
import time
import uuid

from aiohttp import WSCloseCode, WSMsgType, web

from .._common import wait_for
from .common import JsonDict


class SocketMode:
    """Part of ``SlackStandIn`` (its ``__init__`` sets up the state used here)."""

    async def wait_socket_connected(self, *, timeout: float = 10.0) -> None:
        """Wait until a Socket Mode client is connected and has been sent ``hello``."""
        await wait_for(lambda: self._open_sockets(), timeout=timeout, what="a Socket Mode connection")

    async def send_envelope(
        self,
        payload_type: str = "events_api",
        payload: JsonDict | None = None,
        *,
        retry_attempt: int = 0,
        retry_reason: str = "",
        accepts_response_payload: bool = False,
        envelope_id: str | None = None,
    ) -> str:
        """Send one Socket Mode envelope to the newest connection; returns its ``envelope_id``.

        For ``events_api``, ``payload`` is an event (wrapped in a fresh envelope) or an ``event_callback``
        envelope, and the event is applied to the workspace first. Other types (``interactive``,
        ``slash_commands``) are sent as given, without retry fields, as Slack does.
        """
        if payload is None:
            raise ValueError("send_envelope needs a payload")
        frame: JsonDict = {"envelope_id": envelope_id or str(uuid.uuid4()), "type": payload_type}
        if payload_type == "events_api":
            envelope = self._as_envelope(payload)
            self._apply_event(envelope["event"])
            frame.update({"payload": envelope, "accepts_response_payload": accepts_response_payload,
                          "retry_attempt": retry_attempt, "retry_reason": retry_reason})
        else:
            frame.update({"payload": payload, "accepts_response_payload": accepts_response_payload})
        await self._send_frame(frame)
        self.envelopes[frame["envelope_id"]] = frame
        return str(frame["envelope_id"])

    def ack_for(self, envelope_id: str) -> JsonDict | None:
        """The client's acknowledgement of ``envelope_id``, or ``None``."""
        return next((ack for ack in self.acks if ack.get("envelope_id") == envelope_id), None)

    async def wait_for_ack(self, envelope_id: str, *, timeout: float = 10.0) -> JsonDict:
        """Wait for the acknowledgement of ``envelope_id`` and return it."""
        return await wait_for(lambda: self.ack_for(envelope_id), timeout=timeout, what=f"the ack of {envelope_id}")

    async def redeliver(self, envelope_id: str, *, retry_reason: str = "timeout") -> str:
        """Send the payload of ``envelope_id`` again as Slack's retry: ``retry_attempt`` + 1, a new envelope id."""
        original = self.envelopes[envelope_id]
        return await self.send_envelope(
            original["type"], original["payload"], retry_attempt=int(original.get("retry_attempt", 0)) + 1,
            retry_reason=retry_reason, accepts_response_payload=bool(original.get("accepts_response_payload")),
        )

    async def redeliver_unless_acked(
        self, envelope_id: str, *, ack_timeout: float = 3.0, retry_reason: str = "timeout"
    ) -> str | None:
        """Wait ``ack_timeout`` seconds for the ack, as Slack does; redeliver if none came.

        Returns the new envelope id, or ``None`` when the envelope was acknowledged in time.
        """
        deadline = time.monotonic() + ack_timeout
        while time.monotonic() < deadline:
            if self.ack_for(envelope_id) is not None:
                return None
            await asyncio.sleep(0.01)
        if self.ack_for(envelope_id) is not None:
            return None
        return await self.redeliver(envelope_id, retry_reason=retry_reason)

    async def request_reconnect(self, reason: str = "refresh_requested") -> None:
        """Send Slack's ``disconnect`` message: the client is expected to open a new connection."""
        await self._send_frame({"type": "disconnect", "reason": reason, "debug_info": {"host": "applink-standin"}})

    @property
    def open_sockets(self) -> int:
        """How many Socket Mode connections are open now."""
        return len(self._open_sockets())

    def _open_sockets(self) -> list[web.WebSocketResponse]:
        return [ws for ws in self._sockets if not ws.closed]

    async def _send_frame(self, frame: JsonDict) -> None:
        sockets = self._open_sockets()
        if not sockets:
            raise AssertionError("no Socket Mode client is connected to the Slack stand-in "
                                 "(await slack.wait_socket_connected() first)")
        await sockets[-1].send_str(json.dumps(frame))

    async def _socket(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("ticket") not in self._tickets:
            raise web.HTTPUnauthorized(text="invalid or missing ticket")
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self.socket_connections += 1
        await ws.send_str(json.dumps({
            "type": "hello",
            "num_connections": len(self._open_sockets()) + 1,
            "debug_info": {"host": "applink-standin", "build_number": 1, "approximate_connection_time": 18060},
            "connection_info": {"app_id": self.app_id},
        }))
        self._sockets.append(ws)
        try:
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    self._on_socket_text(message.data)
        finally:
            self._sockets.remove(ws)
        return ws

    def _on_socket_text(self, data: str) -> None:
        try:
            parsed = json.loads(data)
        except json.JSONDecodeError:
            self.socket_messages.append(data)
            return
        if isinstance(parsed, dict) and "envelope_id" in parsed:
            self.acks.append(parsed)
        else:
            self.socket_messages.append(data)

    async def _close_sockets(self) -> None:
        for ws in list(self._sockets):
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b"stand-in shutting down")
