"""The Slack edge: Slack's payloads in, replies and flags out. Nothing here imports Weaviate, Cohere, storage or
retrieval: it parses, calls the services it is handed (the answer path, claims, flags and votes), renders.

    app.py          create_app(settings, deps) -> AsyncApp (no module-level app)
    deps.py         SlackDeps, SlackOptions, build_web_client (SLACK_API_URL, 429 retries), who is a lead
    listeners.py    Bolt listeners (plain functions) and the one error handler
    events.py       payload -> frozen SlackQuestion / Reaction / AssistantThread / FeedbackClick, at the edge
    answering.py    one question: guard, claim, :eyes:, answer and record (bot.answer.ask), reply in the thread
    threads.py      is this thread ours, and its earlier turns (exchange log; conversations.replies fallback)
    reactions.py    reactions on the bot's replies -> flags on the answer or one citation
    assistant.py    the assistant pane: a thread started (suggested prompts) or its channel context changed
    visibility.py   what a private question (DM, assistant pane) may see: DM_VISIBILITY, channel membership
    dm_visibility.py  DM_VISIBILITY parsed (settings check it without importing the edge)
    feedback.py     👍 / 👎 clicks on an answer -> that user's feedback on the exchange
    errors.py       how a Web API call fails (SLACK_ERRORS) and its few words for a log line
    blocks.py       Block Kit rendering (pure); messages.py its words in en/ja/ru; text.py mrkdwn in and out
    recovery.py     the sweep: questions a crashed instance left behind, taken over and answered
    concurrency.py  per-channel order (the answers in flight: bot.in_flight); seen.py the in-process duplicate guard
    http.py         /slack/events: Bolt's aiohttp adapter (the HTTP API beside it is ``bot.api``)
"""
