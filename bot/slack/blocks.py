"""Block Kit for the bot's replies: pure functions from an answer to the message Slack will show.

The rules this module keeps, whatever the answer holds:

- Every quote is shown verbatim in a ``rich_text_quote``: rich text takes its characters literally, so a
  quote needs no escaping and reads exactly as in the document. A quote too long for Slack is cut at a word,
  marked ``[…]`` (in italics) and said so under it; a nearest-fragment excerpt that stops inside a sentence
  is marked ``[…]`` too. Nothing else ever changes a quote.
- Under each quote, its source: the citation id (``S1`` — what a lead's :one: reaction flags), the title
  linked to the document's URL from the index, then section, page and version. A model never writes a link.
- Everything else that goes into mrkdwn (claims, titles, sections) is escaped, so ``<``, ``>`` and ``&`` in
  a document are text, never a link or a mention.
- Every answer (answered or no support) ends with the feedback buttons, 👍 / 👎 (``FEEDBACK_ACTION``): Slack's
  ``context_actions`` block with its ``feedback_buttons`` element (the shape slack_sdk's ``ContextActionsBlock``
  and ``FeedbackButtonsElement`` build, checked in the tests); where the installed slack_sdk lacks them
  (``SlackOptions.native_feedback``), a plain ``actions`` block with two buttons of the same action and values.
  A click is the asker's feedback, never a lead's flag (those stay reactions). Where the channel names a
  hand-off group, an **Ask a person** button follows them (``HANDOFF_ACTION``, ``bot.slack.handoff``).
- An answer shown to the asker only (a private-first channel, ``RenderOptions.private``) ends with a note saying
  so and a **Share in thread** button (``SHARE_ACTION``, ``bot.slack.share``); both carry a ``block_id`` under
  ``PRIVATE_BLOCK``, so ``shared_message`` can take exactly them out when the answer is posted for everyone.
- Slack's limits hold: at most 50 blocks (quotes that do not fit are counted in a note, never dropped
  silently), at most 3,000 characters in a section. Every message has a plain-text ``text`` for
  notifications and screen readers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.answer.render import CitationView, answer_text, citations, nearest
from bot.answer.types import Answered, NoSupport, NoSupportReason
from bot.answer.wording import source_line, wording_for
from bot.slack.events import (
    FEEDBACK_ACTION,
    HANDOFF_ACTION,
    HANDOFF_WITH_QUESTION,
    NEGATIVE,
    POSITIVE,
    SHARE_ACTION,
    SHARE_VALUE,
    handoff_value,
)
from bot.slack.messages import slack_wording_for
from bot.slack.text import escape_mrkdwn, fit_mrkdwn, link, shorten

if TYPE_CHECKING:  # the result type only: importing the service would pull in its clients
    from bot.answer.service import AnswerResult

Block = dict[str, Any]

MAX_BLOCKS = 50
SECTION_CHARS = 3000
SOURCE_LINE_CHARS = 1500  # a context element holds 2,000; the label and a note go with it
QUOTE_CHARS = 2800  # one quote, shown; longer ones are cut at a word and marked
TEXT_CHARS = 3000  # the plain-text fallback (notifications, screen readers)
SOURCE_FIELD_CHARS = 150  # a title, section or version this long is cut in the source line
CUT_MARK = " […]"
PRIVATE_BLOCK = "verbatim_private"  # block_id prefix of what only the asker's copy of an answer carries
_SENTENCE_ENDS = (".", "!", "?", "。", "！", "？", "…", ":", ";", "\"", "”", "»", "」", ")")


@dataclass(frozen=True, slots=True)
class SlackMessage:
    """A reply: the plain-text fallback and the blocks (``chat.postMessage``'s ``text`` and ``blocks``)."""

    text: str
    blocks: tuple[Block, ...]

    def as_kwargs(self) -> dict[str, Any]:
        return {"text": self.text, "blocks": list(self.blocks)}


@dataclass(frozen=True, slots=True)
class RenderOptions:
    flag_reaction: str | None = "x"  # named in the hint under an answer; None: no hint
    feedback: bool = True  # the 👍 / 👎 buttons under every answer
    native_feedback: bool = True  # Slack's feedback_buttons; False: a plain button pair
    handoff: bool = False  # the "Ask a person" button beside them (the channel names a hand-off group)
    private: bool = False  # shown to the asker only: a note saying so and the "Share in thread" button
    escalation: bool = False  # a DM's hand-off (to ESCALATION_CHANNEL): two buttons, each with a confirm dialog


def answer_message(result: AnswerResult, options: RenderOptions = RenderOptions()) -> SlackMessage:
    """The reply to a question: the verified claims with their quotes, or the no-support reply."""
    if isinstance(result.outcome, Answered):
        blocks = _answered_blocks(result, options)
    else:
        blocks = _no_support_blocks(result, options)
    if options.feedback:
        blocks.append(feedback_block(result.language, native=options.native_feedback))
    if options.escalation:
        blocks.append(escalation_block(result.language))
    elif options.handoff:
        blocks.append(handoff_block(result.language))
    if options.private:
        blocks.extend(private_blocks(result.language))
    return SlackMessage(text=_fallback(answer_text(result), result.language), blocks=tuple(blocks))


def error_message(language: str, exchange_id: str | None = None) -> SlackMessage:
    """The reply when answering failed: plain words, never the library's error text."""
    words = wording_for(language).error
    blocks = [_section(escape_mrkdwn(words))]
    if exchange_id:
        blocks.append(_context(escape_mrkdwn(slack_wording_for(language).reference.format(exchange_id=exchange_id))))
    return SlackMessage(text=_fallback(words, language), blocks=tuple(blocks))


def missed_message(language: str, exchange_id: str) -> SlackMessage:
    """The reply to a question a crash left unanswered for too long: ask again, rather than a stale answer."""
    words = slack_wording_for(language)
    blocks = (_section(escape_mrkdwn(words.missed)),
              _context(escape_mrkdwn(words.reference.format(exchange_id=exchange_id))))
    return SlackMessage(text=_fallback(words.missed, language), blocks=blocks)


def help_message(language: str) -> SlackMessage:
    """The reply to a mention that holds no question."""
    words = slack_wording_for(language).help
    return SlackMessage(text=_fallback(words, language), blocks=(_section(escape_mrkdwn(words)),))


def feedback_block(language: str, *, native: bool = True) -> Block:
    """👍 / 👎 under an answer: Slack's feedback buttons, or (``native`` False) two plain buttons."""
    words = slack_wording_for(language)
    if native:
        def button(emoji: str, value: str, label: str) -> Block:
            return {"text": {"type": "plain_text", "text": emoji, "emoji": True}, "value": value,
                    "accessibility_label": label}

        return {"type": "context_actions", "elements": [{
            "type": "feedback_buttons", "action_id": FEEDBACK_ACTION,
            "positive_button": button("👍", POSITIVE, words.helpful),
            "negative_button": button("👎", NEGATIVE, words.unhelpful)}]}
    return {"type": "actions", "elements": [
        {"type": "button", "action_id": f"{FEEDBACK_ACTION}_{value}", "value": value,
         "text": {"type": "plain_text", "text": f"{emoji} {label}", "emoji": True}}
        for value, emoji, label in ((POSITIVE, "👍", words.helpful), (NEGATIVE, "👎", words.unhelpful))]}


def handoff_block(language: str, reply_ts: str | None = None) -> Block:
    """The "Ask a person" button (``HANDOFF_ACTION``): one click brings the channel's hand-off group in; away
    from the answer (``reply_ts``: the answer's message) its value names the answer."""
    return {"type": "actions", "elements": [{
        "type": "button", "action_id": HANDOFF_ACTION, "value": handoff_value(reply_ts),
        "text": {"type": "plain_text", "text": slack_wording_for(language).ask_person, "emoji": True}}]}


def escalation_block(language: str) -> Block:
    """In a DM or the assistant pane: "Ask a person" (a link to the conversation only) and "… with my question"
    (its text too), each behind Slack's confirm dialog saying what a person in the escalation channel will see."""
    words = slack_wording_for(language)

    def button(action_id: str, value: str, label: str, said: str) -> Block:
        return {"type": "button", "action_id": action_id, "value": value,
                "text": {"type": "plain_text", "text": label, "emoji": True},
                "confirm": {"title": {"type": "plain_text", "text": words.confirm_title},
                            "text": {"type": "plain_text", "text": said},
                            "confirm": {"type": "plain_text", "text": words.confirm_yes},
                            "deny": {"type": "plain_text", "text": words.confirm_no}}}

    return {"type": "actions", "elements": [
        button(HANDOFF_ACTION, handoff_value(), words.ask_person, words.confirm_without),
        button(f"{HANDOFF_ACTION}_with_question", HANDOFF_WITH_QUESTION, words.ask_person_with_question,
               words.confirm_with)]}


def handoff_offer_message(language: str, reply_ts: str) -> SlackMessage:
    """What a 👎 on the answer ``reply_ts`` brings its clicker (ephemeral): the offer of a person, one click away."""
    words = slack_wording_for(language).handoff_offer
    return SlackMessage(text=_fallback(words, language),
                        blocks=(_section(escape_mrkdwn(words)), handoff_block(language, reply_ts)))


def private_blocks(language: str) -> list[Block]:
    """Under an answer only the asker sees: a note saying so, and "Share in thread" (``SHARE_ACTION``)."""
    words = slack_wording_for(language)
    return [{**_context(escape_mrkdwn(words.private_note)), "block_id": f"{PRIVATE_BLOCK}_note"},
            {"type": "actions", "block_id": f"{PRIVATE_BLOCK}_share", "elements": [{
                "type": "button", "action_id": SHARE_ACTION, "value": SHARE_VALUE, "style": "primary",
                "text": {"type": "plain_text", "text": words.share, "emoji": True}}]}]


def shared_message(private: dict[str, Any]) -> SlackMessage:
    """The answer as everyone sees it once shared: what the asker saw (``{"text", "blocks"}``, as kept), without
    the note and the button that were theirs alone. Nothing else changes: the quotes are the ones they read."""
    blocks = tuple(block for block in private.get("blocks") or ()
                   if not str(block.get("block_id") or "").startswith(PRIVATE_BLOCK))
    return SlackMessage(text=str(private.get("text") or ""), blocks=blocks)


def _private_trailer(options: RenderOptions) -> int:
    return 2 if options.private else 0


def _answered_blocks(result: AnswerResult, options: RenderOptions) -> list[Block]:
    words = slack_wording_for(result.language)
    views = citations(result)
    trailer = ((1 if options.flag_reaction else 0) + (1 if options.feedback else 0) + (1 if options.handoff or options.escalation else 0)
               + _private_trailer(options))
    blocks: list[Block] = []
    shown, previous_claim = 0, None
    for view in views:
        group: list[Block] = []
        if view.claim.strip() and view.claim != view.exact_quote and view.claim != previous_claim:
            group.append(_section(fit_mrkdwn(view.claim, SECTION_CHARS)))
        group.extend(_quote_with_source(view, result.language, label=view.id))
        # Keep room for the "not shown" note (when needed) and the hint.
        if len(blocks) + len(group) + trailer + (1 if shown + 1 < len(views) else 0) > MAX_BLOCKS:
            break
        blocks.extend(group)
        shown, previous_claim = shown + 1, view.claim
    if shown < len(views):
        blocks.append(_context(escape_mrkdwn(words.quotes_not_shown.format(count=len(views) - shown))))
    if options.flag_reaction:
        blocks.append(_context(escape_mrkdwn(words.flag_hint.format(flag=options.flag_reaction))))
    return blocks


def _no_support_blocks(result: AnswerResult, options: RenderOptions) -> list[Block]:
    words = wording_for(result.language)
    outcome = result.outcome
    if isinstance(outcome, NoSupport) and outcome.reason is NoSupportReason.NOTHING_FOUND:
        return [_section(escape_mrkdwn(words.nothing_found))]
    blocks = [_section(escape_mrkdwn(words.no_support))]
    fragments = nearest(result)
    if fragments:
        blocks.append(_context(escape_mrkdwn(words.nearest)))
    trailer = ((1 if options.feedback else 0) + (1 if options.handoff or options.escalation else 0)
               + _private_trailer(options))
    for view in fragments:
        group = _quote_with_source(view, result.language, label=None)
        if len(blocks) + len(group) + trailer > MAX_BLOCKS:
            break
        blocks.extend(group)
    return blocks


def _quote_with_source(view: CitationView, language: str, *, label: str | None) -> list[Block]:
    quote, was_cut = shorten(view.exact_quote, QUOTE_CHARS)
    elements: list[Block] = [{"type": "text", "text": quote}]
    if was_cut or _stops_mid_sentence(view):
        elements.append({"type": "text", "text": CUT_MARK, "style": {"italic": True}})
    line = _source_line(view, language)
    if label:
        line = f"*{escape_mrkdwn(label)}* · {line}"
    if was_cut:
        line += f" · _{escape_mrkdwn(slack_wording_for(language).quote_shortened)}_"
    return [
        {"type": "rich_text", "elements": [{"type": "rich_text_quote", "elements": elements}]},
        _context(line),
    ]


def _stops_mid_sentence(view: CitationView) -> bool:
    """A nearest-fragment excerpt that ends inside a sentence of its chunk (it is cut to a few hundred characters)."""
    text, quote = view.source.chunk.text, view.exact_quote.rstrip()
    at = text.find(quote)
    return at >= 0 and at + len(quote) < len(text.rstrip()) and not quote.endswith(_SENTENCE_ENDS)


def _source_line(view: CitationView, language: str) -> str:
    """Title (linked to the document), section, page, version — all from the index, in the asker's language."""
    chunk = view.source.chunk
    words = wording_for(language)
    title = shorten(chunk.title, SOURCE_FIELD_CHARS)[0]
    section = shorten(chunk.section, SOURCE_FIELD_CHARS)[0] if chunk.section else None
    version = shorten(chunk.version, SOURCE_FIELD_CHARS)[0] if chunk.version else None
    parts = [f"{words.title_open}{link(chunk.url, title)}{words.title_close}"]
    if section:
        parts.append(escape_mrkdwn(words.section.format(section=section)))
    if chunk.page is not None:
        parts.append(escape_mrkdwn(words.page.format(page=chunk.page)))
    if version:
        parts.append(escape_mrkdwn(words.version.format(version=version)))
    line = words.separator.join(parts)
    if len(line) <= SOURCE_LINE_CHARS:
        return line
    # A monstrous URL or title: the same words without the link, cut to fit.
    return fit_mrkdwn(source_line(language, title, section, chunk.page, version), SOURCE_LINE_CHARS)


def _fallback(text: str, language: str) -> str:
    """The plain-text ``text`` of a message: escaped like all mrkdwn, cut to a notification's size."""
    return fit_mrkdwn(text, TEXT_CHARS, ellipsis=slack_wording_for(language).text_shortened)


def _section(mrkdwn: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": mrkdwn}}


def _context(mrkdwn: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": mrkdwn}]}

