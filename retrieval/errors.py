"""What can go wrong in retrieval, as one small hierarchy, so the edges catch one root and not a tuple.

    RetrievalError
    ├── StoreUnavailable    Weaviate cannot be started or reached          (retrieval.weaviate_config)
    ├── ServerInstallError  the Weaviate server binary cannot be built     (retrieval.weaviate_install)
    ├── StoreError          Weaviate refused an operation                  (retrieval.store)
    │   ├── IndexMismatch   the index was built with another embedder or schema
    │   └── IndexMissing    nothing has been ingested yet
    ├── EmbeddingError      an embedder failed                             (retrieval.embedders)
    └── RerankError         a remote reranker failed (the answer path falls back to the local one)

Every message is one line a person can act on and never contains a secret; ``first_line`` trims a library's
error to that. Each class lives beside the code that raises it and derives from ``RetrievalError`` here.
"""

from __future__ import annotations


class RetrievalError(Exception):
    """Retrieval failed: the root every edge catches (with ``TimeoutError``) to give an error reply."""


def first_line(error: BaseException, limit: int = 300) -> str:
    """The first line of an error, trimmed: enough to name a cause, never a library's whole dump."""
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:limit]
