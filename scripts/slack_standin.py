"""Run the tests' Slack stand-in until stopped, for scripts/image-test.sh (the bot checks its token at start-up).

Prints one line, ``SLACK_API_URL=http://127.0.0.1:PORT/api/``, and then serves on 127.0.0.1 only: the image test
runs it in the same pod as the bot, so the bot reaches it over the pod's own loopback. Its credentials are the
stand-in's fixed test values (``SlackStandIn().bot_token`` …), not secrets.
"""

from __future__ import annotations

import asyncio
import signal

from tests.standins import SlackStandIn


async def main() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with SlackStandIn() as slack:
        print(f"SLACK_API_URL={slack.api_url}", flush=True)
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main())
