"""Just enough of the Chrome DevTools Protocol to drive headless chromium from a test, over aiohttp.

Why not a browser-automation package: the review desk needs one real-browser test, and aiohttp (already a
dependency) speaks websockets. CDP is JSON messages over that websocket: `{"id", "method", "params"}` out,
`{"id", "result"|"error"}` back, and events (`{"method", "params"}`) in between.

    async with launch(chromium_path, tmp_path / "profile") as browser:
        page = await browser.new_page()
        await page.goto("http://127.0.0.1:8765/")
        title = await page.evaluate("document.title")
        await page.click_and_wait("button[type=submit]")      # a form post: waits for the next page's load
        await page.screenshot(tmp_path / "page.png")

Chromium is started with `--remote-debugging-port=0` and writes the port it chose to
`<user-data-dir>/DevToolsActivePort` (first line: port, second: the browser websocket path).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--remote-debugging-port=0",
)
START_TIMEOUT_S = 30.0
COMMAND_TIMEOUT_S = 30.0


class CDPError(Exception):
    """Chromium answered a command with an error, or a script threw."""


class Connection:
    """One websocket to the browser; commands are matched to replies by id, events go to waiters."""

    def __init__(self, websocket: aiohttp.ClientWebSocketResponse) -> None:
        self._ws = websocket
        self._ids = itertools.count(1)
        self._replies: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._waiters: list[tuple[str, str | None, asyncio.Future[dict[str, Any]]]] = []
        self._reader = asyncio.create_task(self._read())

    async def send(
        self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None
    ) -> dict[str, Any]:
        """Run one command (in a page's session, when given) and return its result."""
        message: dict[str, Any] = {"id": next(self._ids), "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        reply: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._replies[message["id"]] = reply
        await self._ws.send_str(json.dumps(message))
        answer = await asyncio.wait_for(reply, COMMAND_TIMEOUT_S)
        if "error" in answer:
            raise CDPError(f"{method}: {answer['error'].get('message')}")
        return dict(answer.get("result", {}))

    def expect(self, method: str, *, session: str | None = None) -> asyncio.Future[dict[str, Any]]:
        """A future for the next `method` event; create it *before* the action that causes the event."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiters.append((method, session, future))
        return future

    async def _read(self) -> None:
        async for frame in self._ws:
            if frame.type is not aiohttp.WSMsgType.TEXT:
                continue
            message = json.loads(frame.data)
            if "id" in message:
                reply = self._replies.pop(message["id"], None)
                if reply is not None and not reply.done():
                    reply.set_result(message)
                continue
            for waiter in list(self._waiters):
                method, session, future = waiter
                if method == message.get("method") and session in (None, message.get("sessionId")):
                    self._waiters.remove(waiter)
                    if not future.done():
                        future.set_result(message.get("params", {}))

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        await self._ws.close()


class Page:
    """One tab, attached through a flat CDP session."""

    def __init__(self, connection: Connection, session: str) -> None:
        self._cdp = connection
        self._session = session

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self._cdp.send(method, params, session=self._session)

    async def goto(self, url: str) -> None:
        """Navigate and wait for the page (after any redirects) to finish loading."""
        loaded = self._cdp.expect("Page.loadEventFired", session=self._session)
        result = await self.send("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise CDPError(f"navigating to {url}: {result['errorText']}")
        await asyncio.wait_for(loaded, COMMAND_TIMEOUT_S)

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-serialisable values only)."""
        result = await self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                      "awaitPromise": True})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise CDPError(f"{expression!r} threw: {details.get('exception', {}).get('description') or details}")
        return result["result"].get("value")

    async def click_and_wait(self, selector: str) -> None:
        """Click the element (a link or a submit button) and wait for the page it leads to."""
        loaded = self._cdp.expect("Page.loadEventFired", session=self._session)
        found = await self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return false; "
            "e.click(); return true; })()"
        )
        if not found:
            raise CDPError(f"no element matches {selector!r}")
        await asyncio.wait_for(loaded, COMMAND_TIMEOUT_S)

    async def fill(self, selector: str, value: str) -> None:
        """Type a value into an input (sets it, as a user's typing would)."""
        done = await self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return false; "
            f"e.value = {json.dumps(value)}; return true; }})()"
        )
        if not done:
            raise CDPError(f"no input matches {selector!r}")

    async def screenshot(self, path: Path) -> Path:
        """A PNG of the whole page (beyond the viewport) at `path`."""
        result = await self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        path.write_bytes(base64.b64decode(result["data"]))
        return path


class Browser:
    """The browser-level connection: makes pages."""

    def __init__(self, connection: Connection) -> None:
        self._cdp = connection

    async def new_page(self, *, width: int = 1280, height: int = 900) -> Page:
        target = await self._cdp.send("Target.createTarget", {"url": "about:blank"})
        attached = await self._cdp.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})
        page = Page(self._cdp, attached["sessionId"])
        await page.send("Page.enable")
        await page.send("Emulation.setDeviceMetricsOverride",
                        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        return page


@asynccontextmanager
async def launch(chromium: str, user_data_dir: Path) -> AsyncIterator[Browser]:
    """Start headless chromium with its own profile, connect to it, and stop it afterwards."""
    user_data_dir.mkdir(parents=True, exist_ok=True)
    port_file = user_data_dir / "DevToolsActivePort"
    port_file.unlink(missing_ok=True)
    process = await asyncio.create_subprocess_exec(
        chromium, *FLAGS, f"--user-data-dir={user_data_dir}", "about:blank",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        port, path = await _devtools_address(port_file, process)
        async with aiohttp.ClientSession() as http:
            websocket = await http.ws_connect(f"ws://127.0.0.1:{port}{path}", max_msg_size=0)
            connection = Connection(websocket)
            try:
                yield Browser(connection)
            finally:
                await connection.close()
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()


async def _devtools_address(port_file: Path, process: asyncio.subprocess.Process) -> tuple[int, str]:
    """Wait for chromium to write the DevTools port and websocket path of the browser target."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + START_TIMEOUT_S
    while loop.time() < deadline:
        if process.returncode is not None:
            raise CDPError(f"chromium exited with code {process.returncode} before opening DevTools")
        lines = port_file.read_text().splitlines() if port_file.exists() else []
        if len(lines) >= 2 and lines[0].isdigit():
            return int(lines[0]), lines[1]
        await asyncio.sleep(0.1)
    raise CDPError(f"chromium did not write {port_file} within {START_TIMEOUT_S:.0f} s")
