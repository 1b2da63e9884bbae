"""The Slack edge: Slack's payloads in, replies and flags out. Nothing here imports Weaviate or Cohere.

    app.py          create_app(settings, deps) -> AsyncApp (no module-level app)
    deps.py         SlackDeps, SlackOptions, build_web_client (SLACK_API_URL, 429 retries), who is a lead
    listeners.py    Bolt listeners (plain functions) and the one error handler
    events.py       payload -> frozen Mention / Reaction, at the edge; which messages are questions
    answering.py    one question: guard, claim, :eyes:, answer, reply in the thread, log the exchange
    threads.py      is this thread ours, and its earlier turns (exchange log; conversations.replies fallback)
    reactions.py    reactions on the bot's replies -> flags on the answer or one citation
    blocks.py       Block Kit rendering (pure); messages.py its words in en/ja/ru; text.py mrkdwn in and out
    concurrency.py  per-channel order, answers in flight; seen.py the in-process duplicate guard
    http.py         the aiohttp routes: /slack/events, /api/ask, /healthz
"""
