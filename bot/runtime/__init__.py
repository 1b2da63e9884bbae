"""The composition root: every client a process uses is built here once, from settings, handed out, and closed.

    retrieval.open_retrieval      Weaviate, the Cohere client, the embedder (the answer path, ingest, sync)
    retrieval.open_gaps_embedder  the local e5 that groups no-support questions (the process's own e5 when it has one)
    storage.open_storage          the exchange log the bot writes: an engine, its sessions, the journal (replayed)
    storage.open_log              the exchange log the review desk and ``db check`` read: it must exist at this revision
    review.open_learning          what a lead's verdict teaches: the index (or why not) and the embedder the bot
                                  answers with
    answer.build_answer_deps      the answer service's parts from an open retrieval (and the log's sessions)

One module per kind of client, and this package imports none of them: a command imports only what it opens
(`verbatim ingest` neither the answer path nor SQLAlchemy: half a second of every start-up).

The server (``bot.serve``) builds the Slack Web API client and its aiohttp session: the edge's own client.
Nothing else builds an engine, a Weaviate client or an embedder (``tests/test_import_rules.py`` checks it). A
process opens one engine on its exchange log: SQLite's writes take turns on one connection (``storage.db``).

The review's log is the desk's subject, so a log that cannot be used stops the command with storage's one-line
reason (no tables, an older revision: ``verbatim db upgrade``; does not connect: the URL without its password),
and a SQLite log that does not exist yet is reported as such instead of being created empty by a read. The index
only adds the text around quotes and the stale markers, so when it cannot be opened the desk goes on with an
``IndexUnavailable`` lookup that carries the reason.
"""
