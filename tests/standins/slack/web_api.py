"""The Web API: ``/api/<method>`` with Slack's tokens, errors and faults, and each method the bot calls."""

from __future__ import annotations

import asyncio
import copy
import json
import time
import uuid
from collections.abc import Callable, Mapping

from aiohttp import web

from .. import slack_events
from .common import (
    _JSON_FORM_FIELDS,
    _KNOWN_BLOCK_TYPES,
    _MAX_BLOCKS,
    _MAX_TEXT,
    BOT_SCOPES,
    ApiCall,
    ApiRequest,
    JsonDict,
    _as_int,
    _Fault,
    _is_ts,
    _SlackError,
    _ts_key,
)


class WebApi:
    """Part of ``SlackStandIn`` (its ``__init__`` sets up the state used here)."""

    def rate_limit(self, method: str, *, times: int = 1, retry_after: int = 1) -> None:
        """Answer the next ``times`` calls of ``method`` with HTTP 429, ``Retry-After`` and ``ratelimited``."""
        self._faults.setdefault(method, []).append(_Fault(times, 429, "ratelimited", retry_after))

    def fail(self, method: str, error: str, *, times: int = 1, status: int = 200) -> None:
        """Answer the next ``times`` calls of ``method`` with ``{"ok": false, "error": error}`` (HTTP ``status``)."""
        self._faults.setdefault(method, []).append(_Fault(times, status, error, None))

    def stall(self, method: str) -> asyncio.Event:
        """Carry out the next call of ``method`` but hold its response until the returned event is set: the
        caller is left waiting, as on a slow network, with the call's effect already in the workspace."""
        release = asyncio.Event()
        self._stalls.setdefault(method, []).append(release)
        return release

    # ------------------------------------------------------------------ the HTTP side of the Web API

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params, token, content_type = await self._read_params(request)

        def answer(status: int, body: JsonDict, headers: Mapping[str, str] | None = None) -> web.Response:
            error = None if body.get("ok") else str(body.get("error"))
            self.calls.append(ApiCall(method, copy.deepcopy(params)))
            self.requests.append(ApiRequest(method, copy.deepcopy(params), request.method, content_type, token,
                                            status, error))
            all_headers = {"x-oauth-scopes": BOT_SCOPES, **(headers or {})}
            return web.json_response(body, status=status, headers=all_headers)

        if method not in self._methods:
            return answer(200, {"ok": False, "error": "unknown_method", "req_method": method})
        fault = self._take_fault(method)
        if fault is not None:
            headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
            return answer(fault.status, {"ok": False, "error": fault.error}, headers)
        token_kind, handler = self._methods[method]
        auth_error = self._auth_error(token, token_kind)
        if auth_error is not None:
            return answer(200, {"ok": False, "error": auth_error})
        try:
            body = handler(params)
        except _SlackError as error:
            return answer(200, {"ok": False, "error": error.error, **error.extra})
        if self._stalls.get(method):
            await self._stalls[method].pop(0).wait()
        return answer(200, {"ok": True, **body})

    async def _read_params(self, request: web.Request) -> tuple[JsonDict, str | None, str]:
        params: JsonDict = dict(request.query)
        content_type = request.content_type if request.can_read_body else ""
        json_body = False
        if request.can_read_body:
            if content_type == "application/json":
                body = await request.json()
                if isinstance(body, dict):
                    params.update(body)
                json_body = True
            elif content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
                form = await request.post()
                params.update({k: v for k, v in form.items() if isinstance(v, str)})
        for field in _JSON_FORM_FIELDS:
            if isinstance(params.get(field), str):
                try:
                    params[field] = json.loads(params[field])
                except json.JSONDecodeError:
                    params[field] = {"__invalid_json__": params[field]}
        param_token = params.pop("token", None)
        token: str | None = None
        authorization = request.headers.get("Authorization", "")
        if authorization.startswith("Bearer "):
            token = authorization[len("Bearer "):].strip() or None
        elif isinstance(param_token, str) and not json_body:
            token = param_token
        return params, token, content_type

    def _take_fault(self, method: str) -> _Fault | None:
        queue = self._faults.get(method, [])
        while queue and queue[0].remaining <= 0:
            queue.pop(0)
        if not queue:
            return None
        queue[0].remaining -= 1
        return queue[0]

    def _auth_error(self, token: str | None, kind: str) -> str | None:
        if not token:
            return "not_authed"
        expected = self.app_token if kind == "app" else self.bot_token
        if token == expected:
            return None
        if token in (self.app_token, self.bot_token):
            return "not_allowed_token_type"
        return "invalid_auth"

    # ------------------------------------------------------------------ methods

    def _auth_test(self, params: JsonDict) -> JsonDict:
        return {"url": "https://standin.slack.com/", "team": self.team_name, "user": self.bot_name,
                "team_id": self.team_id, "user_id": self.bot_user_id, "bot_id": self.bot_id,
                "is_enterprise_install": False}

    def _chat_post_message(self, params: JsonDict) -> JsonDict:
        channel = self._channel_param(params, create=True)
        content = self._message_content(params)
        ts = self.new_ts()
        message: JsonDict = {
            "user": self.bot_user_id,
            "type": "message",
            "ts": ts,
            "bot_id": self.bot_id,
            "app_id": self.app_id,
            **content,
            "team": self.team_id,
            "bot_profile": {"id": self.bot_id, "app_id": self.app_id, "name": self.bot_name, "deleted": False,
                            "team_id": self.team_id, "icons": {}, "updated": int(time.time())},
        }
        thread_ts = params.get("thread_ts")
        if thread_ts:
            if not _is_ts(thread_ts):
                raise _SlackError("invalid_thread_ts")
            message["thread_ts"] = thread_ts
            parent = self._history[channel].get(thread_ts)
            if parent is not None and "user" in parent:
                message["parent_user_id"] = parent["user"]
        if isinstance(params.get("metadata"), dict):
            message["metadata"] = params["metadata"]
        self._history[channel][ts] = message
        thread = self.assistant_threads.get((channel, str(thread_ts)))
        if thread is not None:
            thread["status"] = ""  # Slack clears the status line when the app replies in the thread
        return {"channel": channel, "ts": ts, "message": copy.deepcopy(message)}

    def _chat_update(self, params: JsonDict) -> JsonDict:
        channel = self._channel_param(params)
        ts = params.get("ts")
        stored = self._history[channel].get(ts) if isinstance(ts, str) else None
        if stored is None:
            raise _SlackError("message_not_found")
        if stored.get("user") != self.bot_user_id:
            raise _SlackError("cant_update_message")
        content = self._message_content(params)
        for key in ("text", "blocks", "attachments"):
            stored.pop(key, None)
        stored.update(content)
        stored["edited"] = {"user": self.bot_user_id, "ts": self.new_ts()}
        rendered = self._render(channel, stored)
        return {"channel": channel, "ts": ts, "text": stored.get("text", ""), "message": rendered}

    def _chat_post_ephemeral(self, params: JsonDict) -> JsonDict:
        channel = self._channel_param(params, create=True)
        user = params.get("user")
        if not user:
            raise _SlackError("user_not_found")
        if channel in self._members and user not in self._members[channel]:
            raise _SlackError("user_not_in_channel")  # Slack shows an ephemeral message only to a member
        content = self._message_content(params)
        ts = self.new_ts()
        self._ephemerals.append({"channel": channel, "user": user, "ts": ts, "thread_ts": params.get("thread_ts"),
                                 **content})
        return {"message_ts": ts}

    def _chat_get_permalink(self, params: JsonDict) -> JsonDict:
        channel = self._channel_param(params)
        ts = params.get("message_ts")
        if not isinstance(ts, str) or ts not in self._history[channel]:
            raise _SlackError("message_not_found")
        return {"channel": channel, "permalink": f"https://standin.slack.com/archives/{channel}/p{ts.replace('.', '')}"}

    def _reactions_add(self, params: JsonDict) -> JsonDict:
        stored, name = self._reaction_target(params)
        if not self._add_reaction(stored, name, self.bot_user_id):
            raise _SlackError("already_reacted")
        return {}

    def _reactions_remove(self, params: JsonDict) -> JsonDict:
        stored, name = self._reaction_target(params)
        if not self._remove_reaction(stored, name, self.bot_user_id):
            raise _SlackError("no_reaction")
        return {}

    def _conversations_replies(self, params: JsonDict) -> JsonDict:
        channel = self._channel_param(params)
        ts = params.get("ts")
        stored = self._history[channel].get(ts) if isinstance(ts, str) else None
        if stored is None:
            raise _SlackError("thread_not_found")
        is_reply = stored.get("thread_ts") not in (None, ts)
        messages = [self._render(channel, stored)] if is_reply else self.thread(channel, str(ts))
        return self._page(_with_metadata(messages, params), params)

    def _conversations_history(self, params: JsonDict) -> JsonDict:
        channel = self._channel_param(params)
        top_level = [m for m in self.messages(channel) if m.get("thread_ts") in (None, m["ts"])]
        return self._page(_with_metadata(list(reversed(top_level)), params), params)

    def _conversations_info(self, params: JsonDict) -> JsonDict:
        channel = self._channel_param(params)
        return {"channel": copy.deepcopy(self._channels[channel])}

    def _users_info(self, params: JsonDict) -> JsonDict:
        user = params.get("user")
        if not isinstance(user, str) or user not in self._users:
            raise _SlackError("user_not_found")
        shown = copy.deepcopy(self._users[user])
        if str(params.get("include_locale", "")).lower() not in ("true", "1"):
            shown.pop("locale", None)
        return {"user": shown}

    def _conversations_members(self, params: JsonDict) -> JsonDict:
        channel = self._channel_param(params)
        members = list(self._members.get(channel, []))
        limit = _as_int(params.get("limit"), 100) or 100
        cursor = params.get("cursor") or ""
        start = _as_int(cursor[len("offset:"):], 0) if isinstance(cursor, str) and cursor.startswith("offset:") else 0
        more = start + limit < len(members)
        return {"members": members[start:start + limit],
                "response_metadata": {"next_cursor": f"offset:{start + limit}" if more else ""}}

    def _assistant_set(self, what: str) -> Callable[[JsonDict], JsonDict]:
        """assistant.threads.setStatus / setTitle / setSuggestedPrompts: only in an assistant thread."""

        def method(params: JsonDict) -> JsonDict:
            channel, thread_ts = params.get("channel_id"), params.get("thread_ts")
            if not isinstance(channel, str) or channel not in self._channels or not channel.startswith("D"):
                raise _SlackError("channel_not_found")
            thread = self.assistant_threads.get((channel, str(thread_ts)))
            if thread is None:
                raise _SlackError("thread_not_found")
            if what == "prompts":
                prompts = params.get("prompts")
                if not isinstance(prompts, list) or not prompts or len(prompts) > 4 or not all(
                        isinstance(p, dict) and p.get("title") and p.get("message") for p in prompts):
                    raise _SlackError("invalid_arguments")
                thread["prompts"] = {"title": params.get("title"), "prompts": copy.deepcopy(prompts)}
            elif not isinstance(params.get(what), str):
                raise _SlackError("invalid_arguments")
            else:
                thread[what] = params[what]
            return {}

        return method

    def _usergroups_users_list(self, params: JsonDict) -> JsonDict:
        usergroup = params.get("usergroup")
        if not isinstance(usergroup, str) or usergroup not in self._usergroups:
            raise _SlackError("no_such_subteam")
        return {"users": list(self._usergroups[usergroup])}

    def _apps_connections_open(self, params: JsonDict) -> JsonDict:
        ticket = str(uuid.uuid4())
        self._tickets.add(ticket)
        ws_base = self.base_url.replace("http://", "ws://", 1)
        return {"url": f"{ws_base}/socket?ticket={ticket}&app_id={self.app_id}"}

    # ------------------------------------------------------------------ method helpers

    def _channel_param(self, params: JsonDict, *, create: bool = False) -> str:
        channel = params.get("channel")
        if not isinstance(channel, str) or not channel:
            raise _SlackError("channel_not_found")
        if channel not in self._channels:
            if not create:
                raise _SlackError("channel_not_found")
            self.add_channel(channel)
        return channel

    def _message_content(self, params: JsonDict) -> JsonDict:
        content: JsonDict = {}
        text = params.get("text")
        markdown_text = params.get("markdown_text")
        if isinstance(text, str) and text:
            content["text"] = text
        elif isinstance(markdown_text, str) and markdown_text:
            content["text"] = markdown_text
        if "blocks" in params and params["blocks"] not in (None, ""):
            content["blocks"] = self._checked_blocks(params["blocks"])
        if isinstance(params.get("attachments"), list) and params["attachments"]:
            content["attachments"] = params["attachments"]
        if not content:
            raise _SlackError("no_text")
        if len(content.get("text", "")) > _MAX_TEXT:
            raise _SlackError("msg_too_long")
        content.setdefault("text", "")
        return content

    def _checked_blocks(self, blocks: object) -> list[JsonDict]:
        problems: list[str] = []
        if not isinstance(blocks, list):
            problems.append("must provide an array [json-pointer:/blocks]")
            blocks = []
        elif len(blocks) > _MAX_BLOCKS:
            problems.append(f"no more than {_MAX_BLOCKS} items allowed [json-pointer:/blocks]")
        checked: list[JsonDict] = []
        for i, block in enumerate(blocks):
            where = f"/blocks/{i}"
            if not isinstance(block, dict) or block.get("type") not in _KNOWN_BLOCK_TYPES:
                problems.append(f"missing required field: type [json-pointer:{where}]")
                continue
            problems.extend(_block_problems(block, where))
            block = copy.deepcopy(block)
            block.setdefault("block_id", slack_events.random_id("", 5))
            checked.append(block)
        if problems:
            raise _SlackError("invalid_blocks", errors=problems,
                              response_metadata={"messages": [f"[ERROR] {p}" for p in problems]})
        return checked

    def _reaction_target(self, params: JsonDict) -> tuple[JsonDict, str]:
        channel = self._channel_param(params)
        name = params.get("name")
        if not isinstance(name, str) or not name.strip(":"):
            raise _SlackError("invalid_name")
        ts = params.get("timestamp")
        if not ts:
            raise _SlackError("no_item_specified")
        stored = self._history[channel].get(str(ts))
        if stored is None:
            raise _SlackError("message_not_found")
        return stored, name.strip(":")

    @staticmethod
    def _add_reaction(stored: JsonDict, name: str, user: str) -> bool:
        reactions: list[JsonDict] = stored.setdefault("reactions", [])
        entry = next((r for r in reactions if r["name"] == name), None)
        if entry is None:
            reactions.append({"name": name, "users": [user], "count": 1})
            return True
        if user in entry["users"]:
            return False
        entry["users"].append(user)
        entry["count"] = len(entry["users"])
        return True

    @staticmethod
    def _remove_reaction(stored: JsonDict, name: str, user: str) -> bool:
        reactions: list[JsonDict] = stored.get("reactions", [])
        entry = next((r for r in reactions if r["name"] == name), None)
        if entry is None or user not in entry["users"]:
            return False
        entry["users"].remove(user)
        entry["count"] = len(entry["users"])
        if not entry["users"]:
            reactions.remove(entry)
        if not reactions:
            stored.pop("reactions", None)
        return True

    def _page(self, messages: list[JsonDict], params: JsonDict) -> JsonDict:
        limit = _as_int(params.get("limit"), 1000) or 1000
        cursor = params.get("cursor") or ""
        start = 0
        if cursor:
            if not isinstance(cursor, str) or not cursor.startswith("offset:"):
                raise _SlackError("invalid_cursor")
            start = _as_int(cursor[len("offset:"):], 0)
        page = messages[start:start + limit]
        more = start + limit < len(messages)
        return {"messages": page, "has_more": more,
                "response_metadata": {"next_cursor": f"offset:{start + limit}" if more else ""}}

    def _render(self, channel: str, message: JsonDict) -> JsonDict:
        """A stored message as the API shows it: thread parents carry reply counts, as in Slack."""
        rendered = copy.deepcopy(message)
        ts = message["ts"]
        replies = [m for m in self._history.get(channel, {}).values()
                   if m.get("thread_ts") == ts and m["ts"] != ts]
        if replies:
            replies.sort(key=lambda m: _ts_key(m["ts"]))
            users = list(dict.fromkeys(m.get("user", m.get("bot_id", "")) for m in replies))
            rendered.update({"thread_ts": ts, "reply_count": len(replies), "reply_users_count": len(users),
                             "latest_reply": replies[-1]["ts"], "reply_users": users, "is_locked": False,
                             "subscribed": False})
        return rendered


def _with_metadata(messages: list[JsonDict], params: JsonDict) -> list[JsonDict]:
    """Slack shows a message's metadata only to a caller that asks for it (``include_all_metadata``)."""
    if str(params.get("include_all_metadata", "")).lower() in ("true", "1"):
        return messages
    return [{k: v for k, v in m.items() if k != "metadata"} for m in messages]


def _block_problems(block: JsonDict, where: str) -> list[str]:
    """Block Kit limits Slack enforces on the blocks a bot is most likely to overfill."""
    problems: list[str] = []
    kind = block["type"]
    block_id = block.get("block_id")
    if isinstance(block_id, str) and len(block_id) > 255:
        problems.append(f"must be less than 256 characters [json-pointer:{where}/block_id]")
    text = block.get("text")
    if kind == "section":
        if isinstance(text, dict) and len(str(text.get("text", ""))) > 3000:
            problems.append(f"must be less than 3001 characters [json-pointer:{where}/text/text]")
        fields = block.get("fields") or []
        if len(fields) > 10:
            problems.append(f"no more than 10 items allowed [json-pointer:{where}/fields]")
        for j, field in enumerate(fields):
            if isinstance(field, dict) and len(str(field.get("text", ""))) > 2000:
                problems.append(f"must be less than 2001 characters [json-pointer:{where}/fields/{j}/text]")
        if text is None and not fields:
            problems.append(f"must provide either text or fields [json-pointer:{where}]")
    elif kind == "header":
        if not isinstance(text, dict) or text.get("type") != "plain_text":
            problems.append(f"must be a plain_text object [json-pointer:{where}/text]")
        elif len(str(text.get("text", ""))) > 150:
            problems.append(f"must be less than 151 characters [json-pointer:{where}/text/text]")
    elif kind == "context":
        elements = block.get("elements") or []
        if not elements:
            problems.append(f"must provide at least 1 item [json-pointer:{where}/elements]")
        if len(elements) > 10:
            problems.append(f"no more than 10 items allowed [json-pointer:{where}/elements]")
    if isinstance(text, dict) and text.get("type") not in ("plain_text", "mrkdwn"):
        problems.append(f"must be one of plain_text, mrkdwn [json-pointer:{where}/text/type]")
    return problems
