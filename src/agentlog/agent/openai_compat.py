"""OpenAICompatModel: a streaming chat-completions client.

Speaks ``POST {base_url}/chat/completions`` with ``stream: true`` to OpenAI
and to the many servers that copy its protocol (vLLM, llama.cpp, Ollama,
OpenRouter, LiteLLM...). Server-sent events are parsed line by line;
tool-call fragments are assembled by ``index``; the final usage chunk
(``stream_options.include_usage``) becomes :class:`Usage`. A server that
answers with a plain JSON completion instead of a stream is accepted too.

Only the standard library is used (``http.client``): one POST and a line
reader is all the protocol needs, and agentlog's core should not pull a
network stack into every install.

No retries happen here. A failure raises ModelError once, with ``status``
set to the HTTP status (None for network and protocol failures), so the
caller decides whether and how often to try again.
"""

from __future__ import annotations

import http.client
import json
import ssl
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from ..errors import ModelError
from ..tokens import Usage
from .models import Completion, Delta, StreamItem, ToolCall, ToolCallDelta

__all__ = ["OpenAICompatModel"]

_MAX_LINE = 16 * 1024 * 1024  # one SSE line; a larger one is a broken server
_MAX_ERROR_BODY = 64 * 1024
_MAX_MESSAGE = 300


def _error(message: str, status: int | None = None) -> ModelError:
    """A one-line ModelError carrying the HTTP status (or None)."""
    line = " ".join(message.split())
    if len(line) > _MAX_MESSAGE:
        line = line[: _MAX_MESSAGE - 3] + "..."
    err = ModelError(line)
    err.status = status
    return err


class OpenAICompatModel:
    """A Model backed by an OpenAI-compatible chat-completions endpoint.

    ``timeout`` bounds connecting and each wait for more bytes (an idle
    timeout), not the whole generation. ``extra_body`` is merged into each
    request (``temperature``, ``max_tokens``...)."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        model: str,
        context_window: int = 128_000,
        timeout: float = 60.0,
        name: str | None = None,
        extra_body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise _error(f"base_url {base_url!r} is not an http(s) URL")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.model = model
        self.name = name or model
        self.context_window = context_window
        self.timeout = timeout
        self.extra_body = dict(extra_body or {})
        self.headers = dict(headers or {})
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._path = (parts.path.rstrip("/") or "") + "/chat/completions"
        self._where = f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"

    def request_body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = tools
        body.update(self.extra_body)
        return body

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> Iterator[StreamItem]:
        try:
            payload = json.dumps(self.request_body(messages, tools)).encode()
        except (TypeError, ValueError) as exc:
            raise _error(f"request for {self.name} is not JSON-serializable: {exc}") from None
        return self._run(payload)

    # --- transport --------------------------------------------------------------

    def _connect(self) -> http.client.HTTPConnection:
        if self._scheme == "https":
            return http.client.HTTPSConnection(
                self._host,
                self._port,
                timeout=self.timeout,
                context=ssl.create_default_context(),
            )
        return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)

    def _run(self, payload: bytes) -> Iterator[StreamItem]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream, application/json",
            **self.headers,
        }
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        conn = self._connect()
        resp: http.client.HTTPResponse | None = None
        try:
            try:
                conn.request("POST", self._path, body=payload, headers=headers)
                resp = conn.getresponse()
                if resp.status >= 400:
                    raise self._http_error(resp)
                ctype = (resp.getheader("Content-Type") or "").lower()
                if "text/event-stream" in ctype:
                    yield from self._read_stream(resp)
                else:
                    yield from self._read_json(resp)
            except ModelError:
                raise
            except TimeoutError:
                raise _error(f"{self.name}: no response from {self._where} within {self.timeout:g}s") from None
            except ConnectionRefusedError:
                raise _error(f"{self.name}: cannot connect to {self._where}: connection refused") from None
            except (http.client.HTTPException, OSError) as exc:
                raise _error(f"{self.name}: connection to {self._where} failed: {type(exc).__name__}: {exc}") from None
        finally:
            # Also runs when the consumer abandons the stream. The response owns
            # the socket once the server said "Connection: close", so close both.
            if resp is not None:
                resp.close()
            conn.close()

    def _http_error(self, resp: http.client.HTTPResponse) -> ModelError:
        body = resp.read(_MAX_ERROR_BODY)
        detail = body.decode("utf-8", "replace").strip() or resp.reason
        try:
            err = json.loads(body)
            if isinstance(err, dict):
                detail = _error_text(err.get("error", err)) or detail
        except ValueError:
            pass  # a non-JSON error body: its text, already in detail, is the message
        return _error(f"{self.name}: HTTP {resp.status} from {self._where}: {detail}", resp.status)

    # --- protocol ---------------------------------------------------------------

    def _read_json(self, resp: http.client.HTTPResponse) -> Iterator[StreamItem]:
        body = resp.read()
        try:
            doc = json.loads(body)
        except ValueError:
            raise _error(
                f"{self.name}: response from {self._where} is neither an event stream nor JSON: "
                f"{body[:120].decode('utf-8', 'replace')}"
            ) from None
        if not isinstance(doc, dict):
            raise _error(f"{self.name}: response from {self._where} is not a JSON object")
        if "error" in doc:
            raise _error(f"{self.name}: error from {self._where}: {_error_text(doc['error'])}")
        acc = _Assembler(self.name)
        acc.take_message(doc)
        completion = acc.finish(require_end=False)
        if completion.reasoning:
            yield Delta(reasoning=completion.reasoning)
        if completion.content:
            yield Delta(text=completion.content)
        yield completion

    def _read_stream(self, resp: http.client.HTTPResponse) -> Iterator[StreamItem]:
        acc = _Assembler(self.name)
        data: list[str] = []
        for raw_line in _lines(resp, self.name):
            line = raw_line.decode("utf-8", "replace").rstrip("\r\n")
            if line:
                field_name, _, value = line.partition(":")
                if field_name == "data":
                    data.append(value[1:] if value.startswith(" ") else value)
                continue  # comments (":") and other fields: nothing to do
            if not data:
                continue
            text, data = "\n".join(data), []
            if text.strip() == "[DONE]":
                yield acc.finish(require_end=False)
                return
            yield from acc.take_chunk(self._decode(text))
        if data:  # a last event the server did not terminate with a blank line
            text = "\n".join(data)
            if text.strip() == "[DONE]":
                yield acc.finish(require_end=False)
                return
            yield from acc.take_chunk(self._decode(text))
        # Some servers close without [DONE]; a finish_reason shows the turn ended.
        yield acc.finish(require_end=True)

    def _decode(self, text: str) -> dict[str, Any]:
        try:
            chunk = json.loads(text)
        except ValueError:
            raise _error(f"{self.name}: malformed stream chunk from {self._where}: {text[:120]}") from None
        if not isinstance(chunk, dict):
            raise _error(f"{self.name}: stream chunk from {self._where} is not an object: {text[:120]}")
        if "error" in chunk:
            raise _error(f"{self.name}: error in stream from {self._where}: {_error_text(chunk['error'])}")
        return chunk


def _lines(resp: http.client.HTTPResponse, name: str) -> Iterator[bytes]:
    while True:
        line = resp.readline(_MAX_LINE + 1)
        if not line:
            return
        if len(line) > _MAX_LINE:
            raise _error(f"{name}: stream line longer than {_MAX_LINE} bytes")
        yield line


def _error_text(err: Any) -> str:
    if isinstance(err, dict):
        message = err.get("message") or err.get("detail") or json.dumps(err)
        kind = err.get("type") or err.get("code")
        return f"{message} ({kind})" if kind else str(message)
    return str(err)


class _Assembler:
    """Accumulates chunks into a Completion and a chat.completion ``raw``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.meta: dict[str, Any] = {}
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.reasoning_key = "reasoning_content"
        self.calls: dict[int, dict[str, Any]] = {}
        self.last_index: int | None = None
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.message_extra: dict[str, Any] = {}

    def take_chunk(self, chunk: dict[str, Any]) -> Iterator[Delta]:
        for key, value in chunk.items():
            if key not in ("choices", "usage", "object") and key not in self.meta:
                self.meta[key] = value
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # n > 1 is not used by the loop; keep the first choice
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise _error(f"{self.name}: stream delta is not an object")
            yield from self._take_delta(delta)

    def _take_delta(self, delta: dict[str, Any]) -> Iterator[Delta]:
        for key, value in delta.items():
            if key in ("reasoning_content", "reasoning") and isinstance(value, str):
                # Providers disagree on the field's name; keep the one they use.
                self.reasoning_key = key
                if value:
                    self.reasoning.append(value)
                    yield Delta(reasoning=value)
            elif key == "content":
                if isinstance(value, str) and value:
                    self.content.append(value)
                    yield Delta(text=value)
            elif key == "tool_calls":
                for piece in value or ():
                    yield Delta(tool_call_delta=self._take_call(piece))
            elif key != "role" and value is not None:
                before = self.message_extra.get(key)
                if isinstance(before, str) and isinstance(value, str):
                    self.message_extra[key] = before + value  # e.g. a streamed refusal
                else:
                    self.message_extra.setdefault(key, value)

    def _take_call(self, piece: Any) -> ToolCallDelta:
        if not isinstance(piece, dict):
            raise _error(f"{self.name}: tool call delta is not an object")
        index = piece.get("index")
        if not isinstance(index, int):
            # Some servers omit the index: a new id starts a call, else continue the last.
            if piece.get("id") and all(c["id"] != piece["id"] for c in self.calls.values()):
                index = len(self.calls)
            else:
                index = self.last_index if self.last_index is not None else 0
        self.last_index = index
        call = self.calls.setdefault(index, {"id": None, "name": None, "arguments": []})
        fn = piece.get("function") or {}
        if piece.get("id"):
            call["id"] = piece["id"]
        if fn.get("name"):
            call["name"] = fn["name"]
        args = fn.get("arguments")
        if isinstance(args, dict):  # a few servers send parsed arguments
            args = json.dumps(args)
        if args:
            call["arguments"].append(args)
        return ToolCallDelta(index, piece.get("id"), fn.get("name"), args or "")

    def take_message(self, doc: dict[str, Any]) -> None:
        """A whole non-streaming chat.completion."""
        choices = doc.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise _error(f"{self.name}: completion has no choices")
        choice = choices[0]
        message = dict(choice.get("message") or {})
        if isinstance(message.get("tool_calls"), list):
            # Whole calls need no index from the server: their position is it.
            message["tool_calls"] = [
                {**call, "index": i} if isinstance(call, dict) else call for i, call in enumerate(message["tool_calls"])
            ]
        for _ in self.take_chunk({**doc, "choices": [{**choice, "delta": message}]}):
            pass

    def finish(self, *, require_end: bool) -> Completion:
        if require_end and self.finish_reason is None:
            raise _error(f"{self.name}: stream ended before the turn finished (no [DONE])")
        calls = []
        for index in sorted(self.calls):
            call = self.calls[index]
            if not call["name"]:
                raise _error(f"{self.name}: tool call {index} arrived without a name")
            calls.append(
                ToolCall(
                    id=call["id"] or f"call_{uuid.uuid4().hex[:24]}",
                    name=call["name"],
                    arguments="".join(call["arguments"]),
                )
            )
        content = "".join(self.content)
        reasoning = "".join(self.reasoning) if self.reasoning else None
        usage = _usage(self.usage)
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        if reasoning is not None:
            message[self.reasoning_key] = reasoning
        if calls:
            message["tool_calls"] = [c.to_openai() for c in calls]
        message.update(self.message_extra)
        raw: dict[str, Any] = {
            **self.meta,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
        }
        if self.usage is not None:
            raw["usage"] = self.usage
        return Completion(
            content=content,
            reasoning=reasoning,
            tool_calls=calls,
            usage=usage,
            finish_reason=self.finish_reason,
            model=str(self.meta.get("model") or self.name),
            raw=raw,
        )


def _usage(raw: dict[str, Any] | None) -> Usage:
    if not raw:
        return Usage()

    def num(key: str) -> int:
        value = raw.get(key)
        return int(value) if isinstance(value, (int, float)) else 0

    inp, out = num("prompt_tokens"), num("completion_tokens")
    cost = raw.get("cost")
    return Usage(
        input_tokens=inp,
        output_tokens=out,
        total_tokens=num("total_tokens") or inp + out,
        cost_usd=float(cost) if isinstance(cost, (int, float)) else None,
    )
