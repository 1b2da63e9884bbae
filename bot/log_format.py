"""How the server logs: text lines for people, or one JSON object a line (``LOG_FORMAT=json``) for pipelines.

A JSON line holds ``time``, ``level``, ``logger``, ``event`` and ``message``, and, on the per-question line
(``event: "question"``), ``exchange_id``, ``slack_event_id``, ``channel``, ``source``, ``outcome``,
``timings_ms`` and ``reply_ts``. The question's text is there only with ``LOG_QUESTIONS=true``. Only the
message and those named fields are written: a secret never reaches a log line through this formatter (settings
hold them as ``SecretStr``, which prints as ``**********``). ``event`` is the explicit name where a call gives
one, else the message's template, which is the same for every line from one place in the code.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # the type only: every command configures logging, and the answer path is half a second to import
    from bot.answer.ask import Asked

HANDLER_NAME = "verbatim"
FIELDS = "verbatim"  # the ``extra`` key under which a call passes its fields
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"  # the server's text lines
CLI_FORMAT = "%(levelname)s %(name)s: %(message)s"  # the other commands' (``verbatim -v``)
NOISY = ("httpx", "httpcore", "aiohttp.access")  # chatty clients: their warnings only


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, Any] = dict(getattr(record, FIELDS, None) or {})
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "event": fields.pop("event", None) or str(record.msg),
            "message": record.getMessage(),
            **fields,
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def configure_logging(level: str, log_format: Literal["text", "json"] = "text",
                      stream: IO[str] | None = None, *, text_format: str = TEXT_FORMAT) -> logging.Handler:
    """One handler on the root logger at ``level``, in ``log_format``; returns it (a test may remove it).

    Configured again (``verbatim`` sets up the CLI's handler, then ``serve`` its own), it replaces the handler
    it made before: two would print every record twice, once as text (#23: Alembic's start-up lines came out
    as text among the JSON ones). In JSON, Python's warnings are records too, so no text line slips through.
    """
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(text_format))
    handler.set_name(HANDLER_NAME)
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == HANDLER_NAME]:
        root.removeHandler(old)  # configured again: one handler, never two
    root.addHandler(handler)
    root.setLevel(level.upper())
    for noisy in NOISY:
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.captureWarnings(log_format == "json")
    return handler


def question_fields(asked: Asked, *, reply_ts: str | None, log_questions: bool) -> dict[str, Any]:
    """The ``extra`` of the per-question log line."""
    record = asked.record
    fields: dict[str, Any] = {
        "event": "question", "exchange_id": record.id, "slack_event_id": record.event_id,
        "channel": record.channel_id, "source": record.source, "outcome": record.outcome,
        "timings_ms": {stage: round(ms, 1) for stage, ms in record.timings_ms.items()}, "reply_ts": reply_ts,
    }
    if record.outcome == "error":
        fields["error_class"] = record.error_class
    if log_questions:
        fields["question"] = record.question
    return {FIELDS: fields}
