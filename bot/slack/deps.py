"""What the Slack edge is given at start-up: the answer service's parts, the exchange log, the Web API client;
and the services it calls over the log (claims, flags and votes, hand-offs), made from them here.

Built once by the server (``bot.serve``) or a test, passed to ``create_app``; nothing here is created at
import time. The in-process state of the edge (events already taken, threads answered, each channel's line,
the answers in flight) lives here too, so two apps in one process (as in the tests) never share it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from bot.answer.ask import Limits, Recorder
from bot.answer.service import AnswerDeps
from bot.channels import ChannelsFile
from bot.claims import Claims
from bot.exchange_log import ExchangeLog
from bot.handoffs import Handoffs
from bot.in_flight import InFlight
from bot.instance import Instance
from bot.metrics import Metrics
from bot.private_replies import PrivateReplies
from bot.settings import Settings
from bot.slack.concurrency import ChannelOrder
from bot.slack.errors import SLACK_ERRORS, slack_error
from bot.slack.seen import Seen
from bot.slack.dm_visibility import DmVisibility, parse_dm_visibility
from bot.slack.visibility import Clock, PrivateVisibility
from bot.verdicts import Verdicts

log = logging.getLogger(__name__)

NUMBER_REACTIONS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")  # S1 … S9


def _names(value: str) -> frozenset[str]:
    return frozenset(part.strip().strip(":") for part in value.split(",") if part.strip().strip(":"))


@dataclass(frozen=True, slots=True)
class SlackOptions:
    """The edge's knobs: from settings (reactions, leads) or fixed here with the reason beside each."""

    flag_reactions: frozenset[str] = frozenset({"x", "triangular_flag_on_post"})
    first_flag_reaction: str | None = "x"  # the one the hint under an answer names
    working_reaction: str | None = "eyes"
    lead_user_ids: frozenset[str] = frozenset()
    lead_usergroup_id: str | None = None
    answer_timeout_s: float = 120.0  # a hung store ends in an error reply, not silence
    max_concurrent_answers: int = 8  # across channels: bounds memory in a burst; the store does the real work
    history_turns: int = 10  # earlier exchanges of a thread given to the answer as history
    max_question_chars: int = 4000  # a pasted log is cut: the search needs the question, not the whole paste
    claim_lease_s: float = 30.0  # a claimed question's lease, renewed every third of it while it is answered
    missed_after_s: float = 1800.0  # a question left behind longer than this gets the "missed" reply
    log_questions: bool = False  # LOG_QUESTIONS: the per-question log line carries the question's text
    dm_visibility: DmVisibility = field(default_factory=lambda: parse_dm_visibility(""))  # private questions
    membership_cache_s: float = 60.0  # channel and user group members, trusted this long
    assistant_prompts: tuple[str, ...] = ()  # suggested when an assistant thread starts; (): the generic ones
    native_feedback: bool = field(default_factory=lambda: _has_feedback_buttons())  # else the plain button pair
    channels_file: Path | None = None  # per-channel settings (bot.channels); None: every channel is "mention"
    escalation_channel: str | None = None  # where a DM's "Ask a person" is posted; None: no button in DMs

    @classmethod
    def from_settings(cls, settings: Settings) -> SlackOptions:
        ordered = [p.strip().strip(":") for p in settings.flag_reactions.split(",") if p.strip().strip(":")]
        return cls(
            flag_reactions=frozenset(ordered), first_flag_reaction=ordered[0] if ordered else None,
            working_reaction=settings.working_reaction.strip().strip(":") or None,
            lead_user_ids=_names(settings.lead_user_ids), lead_usergroup_id=settings.lead_usergroup_id or None,
            claim_lease_s=settings.claim_lease_s, missed_after_s=settings.missed_after_s,
            log_questions=settings.log_questions,
            dm_visibility=parse_dm_visibility(settings.dm_visibility), membership_cache_s=settings.membership_cache_s,
            assistant_prompts=tuple(p.strip() for p in settings.assistant_prompts.split("|") if p.strip()),
            channels_file=settings.channels_path(),
            escalation_channel=settings.escalation_channel or None,
        )


def _has_feedback_buttons() -> bool:
    """Whether this slack_sdk knows Slack's feedback element for AI replies (3.37+); if not, plain buttons."""
    try:
        from slack_sdk.models.blocks import ContextActionsBlock, FeedbackButtonsElement  # noqa: F401
    except ImportError:  # pragma: no cover - an older slack_sdk
        return False
    return True


class Leads:
    """Who counts as a lead: LEAD_USER_IDS, members of LEAD_USERGROUP_ID (cached), or everyone if neither is set."""

    def __init__(self, options: SlackOptions, client: AsyncWebClient, ttl_s: float = 300.0) -> None:
        self._ids = options.lead_user_ids
        self._group = options.lead_usergroup_id
        self._client = client
        self._ttl_s = ttl_s
        self._members: frozenset[str] = frozenset()
        self._fetched_at: float | None = None

    async def is_lead(self, user: str) -> bool:
        if not self._ids and not self._group:
            return True
        if user in self._ids:
            return True
        return self._group is not None and user in await self._group_members()

    async def _group_members(self) -> frozenset[str]:
        now = time.monotonic()
        if self._fetched_at is not None and now - self._fetched_at < self._ttl_s:
            return self._members
        try:
            response = await self._client.usergroups_users_list(usergroup=self._group)
            self._members = frozenset(response.get("users") or ())
        except SLACK_ERRORS as error:
            # Keep the last list we had; an empty one means reactions count as non-lead until Slack answers.
            log.warning("cannot list the lead user group %s (%s); using the last known members (%d)",
                        self._group, slack_error(error), len(self._members))
        self._fetched_at = now
        return self._members


CLAIMS_AT_ONCE = 4


@dataclass
class SlackDeps:
    answer: AnswerDeps
    log: ExchangeLog
    client: AsyncWebClient
    options: SlackOptions = field(default_factory=SlackOptions)
    seen: Seen = field(default_factory=Seen)  # events and messages this process has taken
    threads: Seen = field(default_factory=Seen)  # "channel:thread_ts" of threads this process answered in
    order: ChannelOrder = field(default_factory=ChannelOrder)
    in_flight: InFlight = field(default_factory=InFlight)
    instance: Instance = field(default_factory=Instance.this)  # the owner named on the claims it holds
    metrics: Metrics = field(default_factory=Metrics.create)  # this app's own registry, served at /metrics
    clock: Clock = time.monotonic  # of the membership caches (a test moves it)
    # "dm:thread_ts" -> the pane's channel; "user:U…" -> the channel Agent View last saw them viewing
    assistant_contexts: dict[str, str] = field(default_factory=dict)
    leads: Leads = field(init=False)
    visibility: PrivateVisibility = field(init=False)
    answer_slots: asyncio.Semaphore = field(init=False)
    claims_at_once: asyncio.Semaphore = field(init=False)
    recorder: Recorder = field(init=False)
    claims: Claims = field(init=False)
    verdicts: Verdicts = field(init=False)
    handoffs: Handoffs = field(init=False)
    private_replies: PrivateReplies = field(init=False)  # private-first answers, kept for "Share in thread"
    channels: ChannelsFile = field(init=False)  # each channel's mode and hand-off group, read again on a change

    def __post_init__(self) -> None:
        self.channels = ChannelsFile(self.options.channels_file)
        self.channels.load()  # a bad file stops the start with its line (ChannelsFileError)
        self.leads = Leads(self.options, self.client)
        self.visibility = PrivateVisibility(self.options.dm_visibility, self.client,
                                            ttl_s=self.options.membership_cache_s, clock=self.clock)
        self.answer_slots = asyncio.Semaphore(self.options.max_concurrent_answers)
        # Questions are claimed a few at a time: a burst's claims queue for the database anyway (SQLite: one
        # connection), and sixty finishing in one turn of the event loop held it for ~50 ms.
        self.claims_at_once = asyncio.Semaphore(CLAIMS_AT_ONCE)
        self.recorder = self.log.recorder(self.metrics.exchange_recorded)
        self.claims = Claims(self.log.sessions, self.instance, self.options.claim_lease_s)
        self.verdicts = Verdicts(self.log.sessions)
        self.handoffs = Handoffs(self.log.sessions)
        self.private_replies = PrivateReplies(self.log.sessions)

    @property
    def limits(self) -> Limits:
        """How long an answer may take and the slots answers share, for ``bot.answer.ask``."""
        return Limits(self.options.answer_timeout_s, self.answer_slots)


def build_web_client(settings: Settings, session: aiohttp.ClientSession | None = None) -> AsyncWebClient:
    """The bot's Web API client: SLACK_API_URL as its base, 429s retried after ``Retry-After``."""
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    base_url = settings.slack_api_url if settings.slack_api_url.endswith("/") else settings.slack_api_url + "/"
    return AsyncWebClient(
        token=token, base_url=base_url, session=session,
        retry_handlers=[AsyncConnectionErrorRetryHandler(), AsyncRateLimitErrorRetryHandler(max_retry_count=3)],
    )

