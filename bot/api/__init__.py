"""The HTTP API beside Slack: ``/api/ask`` for other tools, ``/healthz``, ``/readyz`` and ``/metrics`` for
operators. It never imports the Slack edge; the server (``bot.serve``) mounts Slack's ``/slack/events``
(``bot.slack.http``) on the same aiohttp application.

    app.py          web_application(deps, state, api_token, metrics_token): the routes, JSON refusals under /api/
    deps.py         ApiDeps (what the API is given at start-up), ServerState (mode, draining)
    ask.py          POST /api/ask: body -> Question -> bot.answer.ask -> the ``ask --json`` object
    operations.py   GET /healthz, /readyz (the store's ``ready()``, ``storage.db.ping``), /metrics
    bearer.py       the bearer rule of /api/ask and /metrics (404 when the token is unset, 401 without it)
"""
