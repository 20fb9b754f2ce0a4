"""Schemathesis against /api/v1/openapi.json: generated requests, no server errors.

Bounded: a few examples per operation, so the whole run takes seconds.
The SSE stream is left out (it never ends by design); its errors are
covered in test_server_api.py and its behaviour in test_server_stream.py.
"""

from __future__ import annotations

import itertools

import pytest

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402

from agentlog import Store  # noqa: E402
from agentlog.server import create_app  # noqa: E402
from server_support import build_demo  # noqa: E402

STORE = Store.memory(blob_threshold=4096)
IDS = build_demo(STORE)
# Schemathesis calls the app as host 'testserver': switch off the loopback Host check.
APP = create_app(STORE, loopback_only=False)
TURN = itertools.count()
schema = schemathesis.openapi.from_asgi("/api/v1/openapi.json", APP).exclude(operation_id="stream")


@schema.parametrize()
@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case: schemathesis.Case) -> None:
    if "session_id" in (case.path_parameters or {}) and case.operation.method.upper() == "GET":
        # Half the time aim at the real session, so reads get past the 404.
        if next(TURN) % 2 == 0:
            case.path_parameters["session_id"] = IDS["session"]
    case.call_and_validate(checks=[not_a_server_error])
