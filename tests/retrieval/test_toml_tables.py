"""The one reader of named-table TOML files (sources.toml, channels.toml): an error names the line a person
would fix, however the key is spelled there. Pure, table-driven."""

from __future__ import annotations

import pytest

from retrieval.toml_tables import TableWords, line_of, named_tables

WORDS = TableWords(not_toml="{where}: bad TOML ({error})", foreign="{where}:{line}: foreign {key!r}",
                   not_tables="{where}:{line}: not tables")


@pytest.mark.parametrize(("text", "key", "after", "line"), [
    ('[docs]\n\n[sources.docs]\ntype = "git"\n', ("sources", "docs"), 0, 3),
    ('\n[sources."two words"]\n', ("sources", "two words"), 0, 2),
    ("\n\n[ sources . 'lit' ]\n", ("sources", "lit"), 0, 3),
    ('[sources.a.visibility]\neveryone = "public"\n[sources.a]\n', ("sources", "a"), 0, 1),  # first said here
    ('[[channels.C0]]\n', ("channels", "C0"), 0, 1),
    ('sources.docs.type = "git"\n', ("sources", "docs"), 0, 1),
    ('[a]\nmode = "x"\n[b]\nmodes = 1\nmode = "y"\n', ("mode",), 3, 5),  # the key of the table after line 3
    ('[a]\nmode = "x"\n', ("mode",), 2, 2),  # not set after the header: the header's line
    ('x = 1\n', ("y",), 0, 1),
])
def test_the_line_is_where_the_key_or_its_table_is_written(text: str, key: tuple[str, ...], after: int,
                                                           line: int) -> None:
    assert line_of(text, *key, after=after) == line


@pytest.mark.parametrize(("text", "message"), [
    ("[sources.a\n", "f.toml: bad TOML (Expected ']'"),
    ('\n[source.a]\ntype = "git"\n', "f.toml:2: foreign 'source'"),
    ('\nsources = 3\n', "f.toml:2: not tables"),
])
def test_a_file_of_the_wrong_shape_is_one_error_in_the_callers_words(text: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        named_tables(text, "sources", "f.toml", WORDS, ValueError)
    assert str(raised.value).startswith(message)


def test_the_tables_come_back_in_file_order() -> None:
    tables = named_tables('[sources.b]\ntype = "git"\n[sources.a]\ntype = "folder"\n', "sources", "f", WORDS,
                          ValueError)
    assert list(tables) == ["b", "a"] and tables["a"] == {"type": "folder"}
    assert named_tables("", "sources", "f", WORDS, ValueError) == {}
