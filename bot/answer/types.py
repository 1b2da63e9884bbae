"""The values an answer is made of. Types say what happened: a verified quote carries its span in its chunk,
a rejected quote carries the reason, an answer is ``Answered`` or ``NoSupport``, a remote part not used is a
``Fallback`` naming its part, an error exchange has an ``ErrorCause``.

A ``Question`` carries the asker's language, detected once, from its text, when it is made (a front end that
knows it already passes it: the Slack sweep, from the claim). No I/O here and nothing imported from Slack,
Weaviate or Cohere.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from retrieval.chunks import Chunk
from retrieval.language import detect_language


@dataclass(frozen=True, slots=True)
class Turn:
    """One earlier turn of a thread: who said it ("user" or "assistant") and what."""

    role: str
    text: str


@dataclass(frozen=True, slots=True)
class Question:
    """A question as the answer path takes it, from whichever front end (Slack, /api/ask, the CLI, recheck)."""

    text: str
    channel: str | None = None  # where it was asked (None: outside Slack)
    history: tuple[Turn, ...] = ()
    language: str = ""  # the asker's language; detected from the text once, here, when not given
    sees: frozenset[str] | None = None  # the channels whose documents it may be answered from; None: ``channel``'s
    # Narrowing (a help channel's ``sources``): of what it may see, only documents whose id begins with one of
    # these or that came from a declared source of that name. None: all it may see. Never widens ``visible_in``.
    sources: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not self.language:
            object.__setattr__(self, "language", detect_language(self.text))

    @property
    def visible_in(self) -> frozenset[str]:
        """Visibility: documents visible everywhere, and those of these channels (none: public documents only).
        A question asked in a channel sees that channel's; a private one (a DM) sees what ``sees`` grants it."""
        if self.sees is not None:
            return self.sees
        return frozenset({self.channel}) if self.channel else frozenset()


@dataclass(frozen=True, slots=True)
class Source:
    """A retrieved chunk offered to the composer under a label ("S1" …), with how it was found."""

    label: str
    chunk: Chunk
    search_rank: int
    search_score: float
    rerank_score: float | None = None


@dataclass(frozen=True, slots=True)
class DraftQuote:
    source: str  # the label of the source it claims to come from
    text: str


@dataclass(frozen=True, slots=True)
class DraftClaim:
    text: str
    quotes: tuple[DraftQuote, ...]


@dataclass(frozen=True, slots=True)
class Draft:
    """What a composer proposes. Nothing in it is trusted until ``quotes.verify`` has checked it."""

    claims: tuple[DraftClaim, ...]


class Rejection(str, Enum):
    UNKNOWN_SOURCE = "unknown_source"  # cites a label that was never offered
    EMPTY_QUOTE = "empty_quote"  # nothing left after normalising, or no letter or digit
    NOT_IN_SOURCE = "not_in_source"  # not in the cited chunk, nor in any other
    IN_OTHER_SOURCE = "in_other_source"  # in another offered chunk, not the cited one
    UNSAFE = "unsafe"  # overlaps text addressed to the assistant (prompt injection)


@dataclass(frozen=True, slots=True)
class VerifiedQuote:
    """A quote that is, character for character, ``source.chunk.text[start:end]``."""

    source: Source
    start: int
    end: int

    @property
    def text(self) -> str:
        return self.source.chunk.text[self.start : self.end]


@dataclass(frozen=True, slots=True)
class RejectedQuote:
    claim: str
    source_label: str
    text: str
    reason: Rejection
    source: Source | None = None


@dataclass(frozen=True, slots=True)
class Claim:
    text: str
    quotes: tuple[VerifiedQuote, ...]


@dataclass(frozen=True, slots=True)
class Verification:
    claims: tuple[Claim, ...]
    rejected: tuple[RejectedQuote, ...]


class NoSupportReason(str, Enum):
    NOTHING_FOUND = "nothing_found"  # the search returned nothing the asker may see
    LOW_EVIDENCE = "low_evidence"  # the evidence score is under the threshold
    NO_VERIFIED_CLAIM = "no_verified_claim"  # the composer proposed nothing that survived verification


@dataclass(frozen=True, slots=True)
class Answered:
    claims: tuple[Claim, ...]
    rejected: tuple[RejectedQuote, ...] = ()


@dataclass(frozen=True, slots=True)
class NoSupport:
    reason: NoSupportReason
    nearest: tuple[Source, ...]
    rejected: tuple[RejectedQuote, ...] = ()
    withheld: tuple[Claim, ...] = ()  # verified claims not shown because the evidence was too weak


Outcome = Answered | NoSupport


class FallbackPart(str, Enum):
    QUERY = "query"  # the Cohere query rewrite: the thread rule made the query
    RERANK = "rerank"  # Cohere Rerank: the local reranker ranked
    COMPOSE = "compose"  # Cohere Chat: the extractive composer quoted


@dataclass(frozen=True, slots=True)
class Fallback:
    """A remote part that failed, and the local one answered instead; recorded as "part: why"."""

    part: FallbackPart
    why: str

    def __str__(self) -> str:
        return f"{self.part.value}: {self.why}"


class ErrorCause(str, Enum):
    """Why a question ended in an error reply (``verbatim_answer_errors_total{cause}``)."""

    STORE = "store"  # the document store failed or is missing its index
    EMBEDDER = "embedder"
    TIMEOUT = "timeout"  # the answer took longer than the front end allows
    DELIVERY = "delivery"  # answered, but the front end could not deliver it (Slack refused the post)
    OTHER = "other"  # a bug, or a question left behind too long
