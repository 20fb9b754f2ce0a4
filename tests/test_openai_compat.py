"""OpenAICompatModel against a local stub server (tests/stub_openai.py).

The stub listens on 127.0.0.1 with an ephemeral port; no other address is
ever contacted. Every wait is bounded.
"""

from __future__ import annotations

import socket

import pytest

from agentlog import ModelError, Store
from agentlog.agent import (
    Completion,
    Delta,
    Model,
    OpenAICompatModel,
    ToolCallDelta,
    complete,
)
from stub_openai import (
    Disconnect,
    Hang,
    Json,
    Stream,
    StubOpenAI,
    chunk,
    text_events,
    usage_chunk,
)

MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Say hello."},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def model_for(stub: StubOpenAI, **kw) -> OpenAICompatModel:
    kw.setdefault("model", "gpt-test")
    kw.setdefault("timeout", 5.0)
    return OpenAICompatModel(stub.url, **kw)


def drain(model: OpenAICompatModel, tools=None) -> tuple[list[Delta], Completion]:
    items = list(model.stream(MESSAGES, tools))
    assert isinstance(items[-1], Completion)
    assert all(isinstance(i, Delta) for i in items[:-1])
    return items[:-1], items[-1]


def test_is_a_model():
    assert isinstance(OpenAICompatModel("http://127.0.0.1:1/v1", model="m"), Model)


def test_text_streams_in_order_and_settles():
    with StubOpenAI([Stream(text_events("Hel", "lo", " world", usage=(11, 3)))]) as stub:
        deltas, done = drain(model_for(stub, api_key="sk-test"))

    assert [d.text for d in deltas] == ["Hel", "lo", " world"]
    assert done.content == "Hello world"
    assert done.reasoning is None
    assert done.tool_calls == []
    assert done.finish_reason == "stop"
    assert done.model == "stub-model"  # the server's name for the model wins
    assert (done.usage.input_tokens, done.usage.output_tokens, done.usage.total_tokens) == (11, 3, 14)
    assert done.usage.cost_usd is None
    assert done.raw["object"] == "chat.completion"
    assert done.raw["id"] == "chatcmpl-stub"
    assert done.raw["choices"][0]["message"] == {"role": "assistant", "content": "Hello world"}
    assert done.raw["usage"]["prompt_tokens"] == 11


def test_request_body_and_headers():
    with StubOpenAI([Stream(text_events("a")), Stream(text_events("b"))]) as stub:
        drain(model_for(stub, api_key="sk-test", extra_body={"temperature": 0}), tools=TOOLS)
        drain(model_for(stub))  # no key, no tools

    with_tools, plain = stub.requests
    assert with_tools.method == "POST"
    assert with_tools.path == "/v1/chat/completions"
    assert with_tools.headers["authorization"] == "Bearer sk-test"
    assert with_tools.headers["content-type"] == "application/json"
    assert with_tools.body == {
        "model": "gpt-test",
        "messages": MESSAGES,
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": TOOLS,
        "temperature": 0,
    }
    assert "authorization" not in plain.headers
    assert "tools" not in plain.body


def tool_events() -> list:
    """Two calls, ids and names first, arguments in pieces, interleaved by index."""
    return [
        chunk({"role": "assistant", "content": "Reading both."}),
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": ""}}
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"pa'}}]}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path"'},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'th": "a.txt"}'}}]}),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": ': "b.txt"}'}}]}),
        chunk({}, "tool_calls"),
        usage_chunk(40, 25),
    ]


def test_tool_calls_assembled_by_index():
    with StubOpenAI([Stream(tool_events())]) as stub:
        deltas, done = drain(model_for(stub), tools=TOOLS)

    assert done.finish_reason == "tool_calls"
    assert done.content == "Reading both."
    assert [(c.id, c.name, c.arguments) for c in done.tool_calls] == [
        ("call_a", "read_file", '{"path": "a.txt"}'),
        ("call_b", "read_file", '{"path": "b.txt"}'),
    ]
    assert [c.parsed_arguments() for c in done.tool_calls] == [{"path": "a.txt"}, {"path": "b.txt"}]
    pieces = [d.tool_call_delta for d in deltas if d.tool_call_delta]
    assert pieces[0] == ToolCallDelta(0, "call_a", "read_file", "")
    assert "".join(p.arguments for p in pieces if p.index == 1) == '{"path": "b.txt"}'
    message = done.raw["choices"][0]["message"]
    assert [c["id"] for c in message["tool_calls"]] == ["call_a", "call_b"]


def test_settled_turn_becomes_durable_records():
    with StubOpenAI([Stream(tool_events())]) as stub:
        _, done = drain(model_for(stub), tools=TOOLS)
    store = Store.memory()
    with store.create() as session:
        events = session.append_many(done.to_records())
        stored = [(e.kind, e.role, e.record) for e in session.transcript()]

    assert [(e.kind, e.role) for e in events] == [
        ("message", "assistant"),
        ("tool_call", "assistant"),
        ("tool_call", "assistant"),
    ]
    message = stored[0][2]
    assert message["content"] == "Reading both."
    assert message["usage"] == {"input_tokens": 40, "output_tokens": 25, "total_tokens": 65}
    assert message["model"] == "stub-model"
    assert message["finish_reason"] == "tool_calls"
    assert message["provider"]["choices"][0]["message"]["tool_calls"][1]["id"] == "call_b"
    assert [s[2] for s in stored[1:]] == [
        {"id": "call_a", "name": "read_file", "arguments": '{"path": "a.txt"}'},
        {"id": "call_b", "name": "read_file", "arguments": '{"path": "b.txt"}'},
    ]


def test_reasoning_and_cost_are_kept():
    events = [
        chunk({"role": "assistant", "reasoning_content": "Think"}),
        chunk({"reasoning_content": "ing."}),
        chunk({"content": "Done."}, "stop"),
        usage_chunk(5, 7, cost=0.00042),
    ]
    with StubOpenAI([Stream(events)]) as stub:
        deltas, done = drain(model_for(stub))
    assert [d.reasoning for d in deltas if d.reasoning] == ["Think", "ing."]
    assert done.reasoning == "Thinking."
    assert done.content == "Done."
    assert done.usage.cost_usd == pytest.approx(0.00042)
    assert done.raw["choices"][0]["message"]["reasoning_content"] == "Thinking."
    record = done.to_records()[0][1]
    assert record["reasoning"] == "Thinking."
    assert record["usage"]["cost_usd"] == pytest.approx(0.00042)


def test_deltas_arrive_before_the_stream_ends():
    # The stub stops after two events until the test has seen the first delta;
    # a client that buffered the response would never get here (the stub
    # cuts the stream short if it is not resumed).
    reply = Stream(text_events("first", " second"), pause_after=2)
    with StubOpenAI([reply]) as stub:
        it = model_for(stub).stream(MESSAGES)
        first = next(it)
        assert first == Delta(text="first")
        assert reply.paused.wait(5)  # the rest is still held back by the stub
        reply.resume.set()
        rest = list(it)
    assert rest[-1].content == "first second"


def test_abandoning_the_stream_closes_the_connection():
    reply = Stream(text_events("one", " two"), pause_after=2, await_close=True)
    with StubOpenAI([reply]) as stub:
        it = model_for(stub).stream(MESSAGES)
        assert next(it) == Delta(text="one")
        it.close()
        assert reply.client_closed.wait(5)


@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_framing_variants(chunked, newline):
    events = [": keep-alive" + newline + newline, *text_events("x", "y")]
    with StubOpenAI([Stream(events, chunked=chunked, newline=newline)]) as stub:
        _, done = drain(model_for(stub))
    assert done.content == "xy"
    assert done.usage.total_tokens == 14


def test_multiline_data_event_is_joined():
    # SSE allows one event's data over several "data:" lines, joined by "\n".
    event = (
        'data: {"id": "c", "model": "m",\n'
        'data: "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}\n\n'
    )
    with StubOpenAI([Stream([event])]) as stub:
        _, done = drain(model_for(stub))
    assert done.content == "ok"
    assert done.model == "m"


def test_stream_without_done_but_finished_is_accepted():
    with StubOpenAI([Stream(text_events("fine"), done=False)]) as stub:
        _, done = drain(model_for(stub))
    assert done.content == "fine"


def test_stream_cut_before_the_turn_finished_is_an_error():
    events = [chunk({"content": "partial"})]
    with StubOpenAI([Stream(events, done=False)]) as stub:
        it = model_for(stub).stream(MESSAGES)
        assert next(it) == Delta(text="partial")
        with pytest.raises(ModelError, match="ended before the turn finished"):
            next(it)


def test_non_streaming_json_completion_is_accepted():
    body = {
        "id": "chatcmpl-json",
        "object": "chat.completion",
        "model": "json-model",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
                        {"type": "function", "function": {"name": "pwd", "arguments": "{}"}},
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
    }
    with StubOpenAI([Json(body)]) as stub:
        done = complete(model_for(stub), MESSAGES)
    assert [c.name for c in done.tool_calls] == ["ls", "pwd"]
    assert done.tool_calls[0].id == "c1"
    assert done.tool_calls[1].id.startswith("call_")  # the server sent none
    assert done.model == "json-model"
    assert done.usage.total_tokens == 13
    assert done.content == ""


def test_non_streaming_text_yields_one_delta():
    body = {"model": "m", "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}
    with StubOpenAI([Json(body)]) as stub:
        deltas, done = drain(model_for(stub))
    assert deltas == [Delta(text="hi")]
    assert done.content == "hi"
    assert done.usage.total_tokens == 0  # none reported


@pytest.mark.parametrize(
    "reply, status, fragment",
    [
        (
            Json({"error": {"message": "Incorrect API key", "type": "invalid_request_error"}}, 401),
            401,
            "HTTP 401 from 127.0.0.1:",
        ),
        (
            Json({"error": {"message": "Rate limit\nreached", "code": "rate_limit"}}, 429),
            429,
            "Rate limit reached (rate_limit)",
        ),
        (Json("<html>\n<body>Bad Gateway</body>\n</html>", 502, "text/html"), 502, "HTTP 502"),
        (Json({"detail": "not found"}, 404), 404, "not found"),
    ],
)
def test_http_errors_become_one_line_model_errors(reply, status, fragment):
    with StubOpenAI([reply]) as stub:
        with pytest.raises(ModelError) as info:
            list(model_for(stub).stream(MESSAGES))
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)
    assert info.value.status == status


def test_error_json_with_status_200_is_an_error():
    with StubOpenAI([Json({"error": {"message": "model overloaded"}})]) as stub:
        with pytest.raises(ModelError, match="model overloaded"):
            list(model_for(stub).stream(MESSAGES))


def test_error_event_inside_the_stream():
    events = [chunk({"content": "so far"}), {"error": {"message": "upstream died"}}]
    with StubOpenAI([Stream(events)]) as stub:
        with pytest.raises(ModelError, match="upstream died"):
            list(model_for(stub).stream(MESSAGES))


def test_malformed_sse_chunk():
    with StubOpenAI([Stream(["data: {not json\n\n"])]) as stub:
        with pytest.raises(ModelError, match="malformed stream chunk") as info:
            list(model_for(stub).stream(MESSAGES))
    assert info.value.status is None


def test_tool_call_without_a_name():
    events = [chunk({"tool_calls": [{"index": 0, "id": "x", "function": {"arguments": "{}"}}]}, "tool_calls")]
    with StubOpenAI([Stream(events)]) as stub:
        with pytest.raises(ModelError, match="without a name"):
            list(model_for(stub).stream(MESSAGES))


def test_unparseable_response_body():
    with StubOpenAI([Json("this is not json", 200, "text/plain")]) as stub:
        with pytest.raises(ModelError, match="neither an event stream nor JSON"):
            list(model_for(stub).stream(MESSAGES))


def test_connection_refused():
    # A bound socket that never listens refuses connections, and no other
    # process can take its port while we hold it.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        model = OpenAICompatModel(f"http://127.0.0.1:{port}/v1", model="m", timeout=5)
        with pytest.raises(ModelError, match="connection refused") as info:
            list(model.stream(MESSAGES))
    assert info.value.status is None


def test_timeout_waiting_for_the_server():
    with StubOpenAI([Hang()]) as stub:
        with pytest.raises(ModelError, match=r"no response from 127\.0\.0\.1:\d+ within 0\.2s"):
            list(model_for(stub, timeout=0.2).stream(MESSAGES))


def test_server_closes_without_answering():
    with StubOpenAI([Disconnect()]) as stub:
        with pytest.raises(ModelError, match="connection to 127.0.0.1:.* failed"):
            list(model_for(stub).stream(MESSAGES))


def test_bad_base_url():
    with pytest.raises(ModelError, match="not an http"):
        OpenAICompatModel("ftp://example/v1", model="m")


def test_unserializable_request():
    model = OpenAICompatModel("http://127.0.0.1:1/v1", model="m")
    with pytest.raises(ModelError, match="not JSON-serializable"):
        model.stream([{"role": "user", "content": object()}])


def test_complete_passes_deltas_and_returns_the_completion():
    seen: list[str] = []
    with StubOpenAI([Stream(text_events("a", "b", "c"))]) as stub:
        done = complete(model_for(stub), MESSAGES, on_delta=lambda d: seen.append(d.text))
    assert seen == ["a", "b", "c"]
    assert done.content == "abc"
