"""The review desk: where leads audit what the bot said, resolve flags, and watch the trends.

An answer that cannot be audited later is worth little. A lead opens any exchange and sees what was asked,
what was searched, each quote inside the text of the chunk it came from (and whether that version is still
the one indexed), what verification rejected, and who flagged what.

Pure core (no I/O; table-tested):

    errors      the desk's own errors (malformed id, bad --since, nothing to resolve)
    formatting  --since parsing, ids, percentages, milliseconds, one-line cells
    quotes      locate a quote in its chunk's text (verification's normalisation) and cut the excerpt
    model       an exchange + its flags + what the index holds -> the review a lead reads (stale or not)
    export      a flagged exchange -> an eval question line, to grow a regression set
    text        rich renderables and JSON for the terminal
    html_safe   auto-escaping templates; pages and charts build HTML only through it
    pages       the server-rendered pages; charts   trend charts as inline SVG
    auth        bind-address rule, token and login cookie, CSRF tokens, security headers

Edges:

    lookup      the two-method port to the chunk index (`ChunkStore` satisfies it) and its failure modes
    queries     reads over `storage` that storage does not offer yet (see its docstring)
    desk        what the CLI and the page share: read an exchange for review, resolve flags, export
    cli         the `verbatim review` click group (also `python -m bot.review`)
    web         `create_review_app(session_factory, chunk_lookup, token=...)` and `serve`
"""
