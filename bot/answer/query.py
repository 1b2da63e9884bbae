"""The search query: the question itself, or — in a thread — the question made standalone from earlier turns.

Offline there is no model to rewrite it, so a follow-up that cannot stand alone (short, or pointing
back with "it", "this", "это", "それ" …) is searched together with the thread's last question. With
Cohere, the rewrite is asked of Cohere Chat (``CohereQueryRewriter``) and falls back to this rule.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import cohere
import httpx
from cohere.core.api_error import ApiError

from bot.answer.lexical import content_terms
from bot.answer.prompts import Prompt
from bot.answer.types import Turn
from retrieval.language import detect_language

__all__ = ["CohereQueryRewriter", "Turn", "standalone_query"]

_POINTS_BACK = re.compile(
    r"\b(it|its|this|that|these|those|they|them|there|he|she|his|her|same|above|what about|and for|how about)\b"
    r"|\b(это|этот|эта|эти|того|этого|там|тогда|он|она|они|его|её|их|такой|а если|а для|а как)\b"
    r"|(それ|これ|あれ|その|この|あの|そこ|ここ|そちら|では|じゃあ)",
    re.IGNORECASE,
)
_SHORT = 4  # content terms: fewer than this and a follow-up rarely stands alone


def standalone_query(question: str, history: Sequence[Turn], language: str | None = None) -> str:
    """The question, prefixed with the thread's last question when it cannot stand alone (pure).

    ``language`` is the question's, as it was detected once (``Question.language``); None (the benches' callers of
    this rule alone): detected here.
    """
    previous = next((t.text for t in reversed(history) if t.role == "user" and t.text.strip()), None)
    if previous is None:
        return question
    terms = content_terms(question, language or detect_language(question))
    if len(terms) < _SHORT or _POINTS_BACK.search(question):
        return f"{previous} {question}"
    return question


class CohereQueryRewriter:
    def __init__(self, client: cohere.AsyncClientV2, model: str, prompt: Prompt, timeout_s: float) -> None:
        self._client = client
        self._model = model
        self._prompt = prompt
        self._timeout_s = timeout_s

    async def rewrite(self, question: str, history: Sequence[Turn], language: str) -> tuple[str, str | None]:
        """(query, None), or the rule's query and why the model was not used."""
        if not history:
            return question, None
        conversation = "\n".join(f"{t.role}: {t.text}" for t in history) + f"\nuser: {question}"
        try:
            response = await self._client.chat(
                model=self._model,
                messages=[{"role": "system", "content": self._prompt.text}, {"role": "user", "content": conversation}],
                response_format={"type": "json_object"},  # type: ignore[arg-type]
                temperature=0.0,
                request_options={"timeout_in_seconds": int(max(1, self._timeout_s)), "max_retries": 0},
            )
            text = "".join(getattr(p, "text", "") for p in (response.message.content or []))
            query = json.loads(text).get("query")
        except (ApiError, httpx.HTTPError, json.JSONDecodeError, AttributeError) as error:
            return standalone_query(question, history, language), f"query rewrite failed ({type(error).__name__})"
        if not isinstance(query, str) or not query.strip():
            return standalone_query(question, history, language), "query rewrite returned no query"
        return query.strip(), None
