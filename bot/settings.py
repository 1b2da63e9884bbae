"""Every setting Verbatim reads, in one typed object, from the environment (and an optional ``.env``).

Each field's environment variable is its name in upper case (``weaviate_url`` -> ``WEAVIATE_URL``).
``.env.example`` lists them all with their defaults. Secrets are ``SecretStr``: they print as
``**********`` and never reach logs or error messages.

Settings are read once at start-up (``Settings()``) and passed to whatever needs them; the
packages below ``bot`` receive small config dataclasses built here, not this object.
"""

from __future__ import annotations

import re

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.answer.suppress import Thresholds
from bot.slack.dm_visibility import parse_dm_visibility
from retrieval.chunking import ChunkingConfig
from retrieval.search_config import SearchConfig, tuning_for
from retrieval.weaviate_config import WeaviateConfig
from retrieval.weaviate_install import WEAVIATE_VERSION

EmbedderName = Literal["auto", "e5", "use", "cohere"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    # Where Verbatim keeps its data: the embedded Weaviate's files, the SQLite log, the journal.
    verbatim_home: Path = Path(".verbatim")
    # The declared sources (git, Zendesk, Confluence, folders): `verbatim sources`, `sync --source/--all`.
    sources_file: Path | None = None  # default: VERBATIM_HOME/sources.toml

    # Weaviate: a server when WEAVIATE_URL is set, else Weaviate Embedded under VERBATIM_HOME.
    weaviate_url: str | None = None
    weaviate_grpc_url: str | None = None  # default: the same host as WEAVIATE_URL, port 50051
    weaviate_api_key: SecretStr | None = None
    weaviate_binary_dir: Path = Path("~/.cache/weaviate-embedded")
    weaviate_embedded_port: int = 8079
    weaviate_embedded_grpc_port: int = 50060
    weaviate_startup_timeout_s: float = 60.0
    # The most one search may wait for Weaviate: the client retries an unreachable server for ~63 s, which
    # would be the asker's wait; past this the question gets its error reply instead.
    weaviate_query_timeout_s: float = Field(default=4.0, gt=0.0)
    # On a Weaviate cluster: copies of each shard for the collections Verbatim creates (an existing collection
    # keeps its own), and the consistency level of every read and write. QUORUM with 3 copies: one node may be
    # down and every answer and ingest still goes through.
    weaviate_replication_factor: int = Field(default=1, ge=1)
    weaviate_consistency: Literal["ONE", "QUORUM", "ALL"] = "QUORUM"
    verbatim_collection: str = "VerbatimChunk"
    # BM25 tokenization of Japanese text, fixed when the collection is created (see docs/benchmarks.md).
    verbatim_ja_tokenization: Literal["kagome_ja", "trigram", "gse"] = "kagome_ja"

    # Embeddings: "auto" is Cohere when COHERE_API_KEY is set, else the local e5 model.
    verbatim_embedder: EmbedderName = "auto"
    embed_batch_size: int = Field(default=32, ge=1)
    # e5's and the judge's ONNX graphs, built from the wheel's file on first use and loaded from here after.
    verbatim_model_cache: Path = Path("~/.cache/verbatim")

    # Cohere (switched on by COHERE_API_KEY). COHERE_BASE_URL points the SDK elsewhere (a proxy, a test stand-in).
    cohere_api_key: SecretStr | None = None
    cohere_base_url: str | None = None
    # Cohere's current models (docs.cohere.com, checked against the local stand-in only; see the README).
    cohere_embed_model: str = "embed-v4.0"
    cohere_rerank_model: str = "rerank-v4.0-pro"
    cohere_chat_model: str = "command-a-03-2025"
    cohere_timeout_s: float = Field(default=20.0, gt=0)

    # Which parts answer: "auto" is Cohere when COHERE_API_KEY is set, else the local one.
    verbatim_reranker: Literal["auto", "local", "cohere"] = "auto"
    verbatim_composer: Literal["auto", "extractive", "cohere"] = "auto"

    # Hybrid search: alpha 0 is pure BM25, 1 pure vector; one alpha per query language. Unset: the value
    # measured for the embedder in use (retrieval.search_config.TUNING).
    search_limit: int = Field(default=40, ge=1, le=1000)
    search_alpha_en: float | None = Field(default=None, ge=0.0, le=1.0)
    search_alpha_ja: float | None = Field(default=None, ge=0.0, le=1.0)
    search_alpha_ru: float | None = Field(default=None, ge=0.0, le=1.0)

    # Answering: how many reranked chunks the composer sees; the local reranker's weight on each chunk's
    # best-matching sentence, per language (0 keeps the hybrid order; unset: the measured value for the
    # embedder); the abstain threshold (empty: the shipped model's calibrated threshold).
    answer_top_n: int = Field(default=5, ge=1, le=20)
    rerank_sentence_weight_en: float | None = Field(default=None, ge=0.0)
    rerank_sentence_weight_ja: float | None = Field(default=None, ge=0.0)
    rerank_sentence_weight_ru: float | None = Field(default=None, ge=0.0)
    abstain_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    # The answer judge (a cross-encoder on e5's weights, shipped in the package) decides with the evidence
    # features where it helped on FIT (the default place, Russian) when the embedder is e5. On by
    # default: at the same precision target it answers more of the held-out sets (docs/benchmarks.md, "Answer or
    # abstain, end to end"), for one more pass of e5 per question; false: the features model alone decides.
    verbatim_judge: bool = True
    # Citations leads confirmed bad: the query-vector cosine at which a question counts as the same (the chunk is
    # not quoted) or as similar (it ranks last), measured in docs/benchmarks.md; how often the bot rereads them.
    suppress_similarity: float = Field(default=Thresholds().suppress, ge=-1.0, le=1.0)
    demote_similarity: float = Field(default=Thresholds().demote, ge=-1.0, le=1.0)
    suppressions_refresh_s: float = Field(default=60.0, gt=0.0)

    # Ingestion limits and chunking.
    chunk_max_chars: int = Field(default=1200, ge=200, le=4000)
    chunk_min_chars: int = Field(default=300, ge=0, le=4000)
    max_file_bytes: int = Field(default=50_000_000, ge=1)
    max_document_chars: int = Field(default=5_000_000, ge=1)

    # The exchange log: PostgreSQL in production (postgresql+asyncpg://…), else a SQLite file in VERBATIM_HOME.
    database_url: SecretStr | None = None

    # Slack. HTTP mode (Events API at /slack/events on PORT) needs SLACK_SIGNING_SECRET; Socket Mode is used
    # when SLACK_APP_TOKEN (xapp-…) is set. SLACK_API_URL is the Web API base for every call, Socket Mode's
    # apps.connections.open included (a proxy, or a test stand-in).
    slack_bot_token: SecretStr | None = None
    slack_signing_secret: SecretStr | None = None
    slack_app_token: SecretStr | None = None
    slack_api_url: str = "https://slack.com/api/"
    port: int = Field(default=3000, ge=0, le=65535)
    # Bearer token for POST /api/ask (the endpoint is off when unset).
    api_token: SecretStr | None = None
    # Bearer token for GET /metrics (Prometheus); the endpoint is off when unset.
    metrics_token: SecretStr | None = None
    # Who counts as a lead for flags (comma-separated user ids), or a Slack user group id; empty: everyone.
    lead_user_ids: str = ""
    lead_usergroup_id: str | None = None
    # Reactions that flag a whole answer; :one: … :nine: flag citation S1 … S9.
    flag_reactions: str = "x,triangular_flag_on_post"
    working_reaction: str = "eyes"
    # Direct messages and the assistant pane see only documents visible everywhere, unless mapped here:
    # "WHO=CHANNEL,CHANNEL;WHO=CHANNEL" where WHO is a user id (U…/W…) or a user group id (S…, needs
    # usergroups:read), e.g. "U0ANNA=C0LEADS,C0HR;S0LEADS=C0LEADS". Invalid entries stop the start with their text.
    dm_visibility: str = ""
    # How long a channel's member list (for the assistant pane's channel context) and a mapped user group's
    # members are trusted before Slack is asked again.
    membership_cache_s: float = Field(default=60.0, ge=0.0)
    # Suggested prompts when an assistant thread starts, separated by "|"; empty: a few generic ones in the
    # user's language (en, ja, ru, from their Slack locale).
    assistant_prompts: str = ""
    # Per-channel settings (mode mention / every_question / off, the hand-off group, private_first): a TOML
    # file, read again when it changes; empty: VERBATIM_HOME/channels.toml (none there: every channel is mention).
    channels_file: Path | None = None
    # The channel (C… or G…) where "Ask a person" from a DM or the assistant pane is posted, with a link to the
    # question (its text only if the asker agrees in the button's dialog); empty: no hand-off button in DMs.
    escalation_channel: str = ""
    # A claimed question is a lease this long, renewed while it is answered; a claim whose lease ran out (or
    # whose process on this host is gone) is taken over by a retry or by the sweep of another instance.
    claim_lease_s: float = Field(default=30.0, ge=3.0)
    # A question left unanswered (a crash) longer than this gets a short "this was missed" reply, not an answer.
    missed_after_s: float = Field(default=1800.0, gt=0.0)

    # The review desk web page (`verbatim review serve`): any bind address but loopback needs REVIEW_TOKEN.
    review_host: str = "127.0.0.1"
    review_port: int = Field(default=8765, ge=0, le=65535)
    review_token: SecretStr | None = None

    log_level: str = "INFO"
    # "text" (one line a record, for people) or "json" (one JSON object a line, for log pipelines).
    log_format: Literal["text", "json"] = "text"
    # Put the question's text in the per-question log line (off: logs carry ids, outcome and timings only).
    log_questions: bool = False

    @field_validator("channels_file", mode="before")
    @classmethod
    def _empty_is_default(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator("weaviate_binary_dir", "verbatim_home", "channels_file", "verbatim_model_cache")
    @classmethod
    def _expand_user(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @field_validator("escalation_channel")
    @classmethod
    def _escalation_channel(cls, value: str) -> str:
        value = value.strip()
        if value and re.fullmatch(r"[CG][A-Z0-9]{2,}", value) is None:
            raise ValueError(f"ESCALATION_CHANNEL {value!r} is not a channel id (C… or G…, from the channel's details)")
        return value

    @field_validator("dm_visibility")
    @classmethod
    def _dm_visibility(cls, value: str) -> str:
        parse_dm_visibility(value)  # raises ValueError naming the bad entry
        return value

    @model_validator(mode="after")
    def _chunk_bounds(self) -> Settings:
        if self.chunk_min_chars > self.chunk_max_chars:
            raise ValueError("CHUNK_MIN_CHARS must not exceed CHUNK_MAX_CHARS")
        return self

    def uses_cohere(self, part: Literal["reranker", "composer"]) -> bool:
        choice = self.verbatim_reranker if part == "reranker" else self.verbatim_composer
        return choice == "cohere" or (choice == "auto" and self.cohere_api_key is not None)

    @property
    def embedder_name(self) -> Literal["e5", "use", "cohere"]:
        if self.verbatim_embedder == "auto":
            return "cohere" if self.cohere_api_key is not None else "e5"
        return self.verbatim_embedder

    def database_url_value(self) -> str:
        """The SQLAlchemy URL of the exchange log (contains the password: never log it)."""
        if self.database_url is not None:
            return self.database_url.get_secret_value()
        return f"sqlite+aiosqlite:///{(self.verbatim_home / 'verbatim.sqlite3').resolve()}"

    def channels_path(self) -> Path:
        return self.channels_file if self.channels_file is not None else self.verbatim_home / "channels.toml"

    def sources_path(self) -> Path:
        return self.sources_file if self.sources_file is not None else self.verbatim_home / "sources.toml"

    def weaviate_config(self) -> WeaviateConfig:
        return WeaviateConfig(
            url=self.weaviate_url,
            grpc_url=self.weaviate_grpc_url,
            api_key=self.weaviate_api_key.get_secret_value() if self.weaviate_api_key else None,
            data_dir=self.verbatim_home / "weaviate",
            binary_dir=self.weaviate_binary_dir,
            port=self.weaviate_embedded_port,
            grpc_port=self.weaviate_embedded_grpc_port,
            version=WEAVIATE_VERSION,
            startup_timeout_s=self.weaviate_startup_timeout_s,
        )

    def suppression_thresholds(self) -> Thresholds:
        return Thresholds(suppress=self.suppress_similarity, demote=self.demote_similarity)

    def search_config(self) -> SearchConfig:
        measured = tuning_for(self.embedder_name).alpha
        chosen = {"en": self.search_alpha_en, "ja": self.search_alpha_ja, "ru": self.search_alpha_ru}
        return SearchConfig(limit=self.search_limit,
                            alpha={lang: measured[lang] if value is None else value for lang, value in chosen.items()})

    def sentence_weights(self) -> dict[str, float]:
        """The local reranker's sentence weight per language: the settings', else the embedder's measured one."""
        measured = tuning_for(self.embedder_name).sentence_weight
        chosen = {"en": self.rerank_sentence_weight_en, "ja": self.rerank_sentence_weight_ja,
                  "ru": self.rerank_sentence_weight_ru}
        return {lang: measured[lang] if value is None else value for lang, value in chosen.items()}

    def chunking_config(self) -> ChunkingConfig:
        return ChunkingConfig(max_chars=self.chunk_max_chars, min_chars=self.chunk_min_chars)
