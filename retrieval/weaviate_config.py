"""Which Weaviate to use, and the error of not getting one: ``WeaviateConfig`` and ``StoreUnavailable``.

A config names a server at ``WEAVIATE_URL``, or Weaviate Embedded under the home (``VERBATIM_HOME``), with the
files the home keeps beside its data folder. Both live apart from the code that uses them so that the
embedded home (``retrieval.embedded_home``) and the connection (``retrieval.weaviate_server``) share them
without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from retrieval.errors import RetrievalError
from retrieval.weaviate_install import WEAVIATE_VERSION

API_KEY_FILE = "weaviate.key"
SERVER_FILE = "weaviate.server.json"
USERS_DIR = "weaviate.users"
NODE_FILE = "weaviate.node"
LOCK_FILE = "weaviate.lock"


class StoreUnavailable(RetrievalError):
    """Weaviate cannot be started or reached. The message is one line: the cause and what to do."""


@dataclass(frozen=True, slots=True)
class WeaviateConfig:
    url: str | None
    grpc_url: str | None
    api_key: str | None
    data_dir: Path
    binary_dir: Path
    port: int
    grpc_port: int
    version: str = WEAVIATE_VERSION
    startup_timeout_s: float = 60.0

    @property
    def embedded(self) -> bool:
        return self.url is None

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / "weaviate.log"

    @property
    def home(self) -> Path:
        return self.data_dir.parent

    @property
    def key_path(self) -> Path:
        """The embedded server's API key, one per home (beside its data folder)."""
        return self.home / API_KEY_FILE

    @property
    def server_path(self) -> Path:
        """The record of the home's running embedded server."""
        return self.home / SERVER_FILE

    @property
    def users_path(self) -> Path:
        """One file per connection using the home's embedded server."""
        return self.home / USERS_DIR

    @property
    def node_path(self) -> Path:
        """The home's Weaviate node name, fixed for the life of its data."""
        return self.home / NODE_FILE

    @property
    def lock_path(self) -> Path:
        return self.home / LOCK_FILE
