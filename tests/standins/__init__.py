"""Local stand-ins for the services the bot talks to but tests cannot reach: Slack's servers and Cohere's API.

The real SDKs (slack-bolt, slack_sdk, cohere) are pointed at them with ``base_url``; only the far end of the
wire is replaced, so a test exercises the same requests, retries, signatures and websocket frames as
production. ``slack.SlackStandIn`` and ``cohere.CohereStandIn`` each document their protocol and the
SDK behaviour their own tests (``tests/standins_tests``) pin down.
"""

from .cohere import CohereStandIn
from .slack import SlackStandIn

__all__ = ["CohereStandIn", "SlackStandIn"]
