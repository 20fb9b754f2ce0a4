"""Tokens, host checks, CORS, and `agentlog serve` refusing unsafe binds."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from importlib import resources
from typing import Any

import pytest
from click.testing import CliRunner

from server_support import build_demo, call

httpx = pytest.importorskip("httpx")

from agentlog import Store  # noqa: E402
from agentlog.cli import main  # noqa: E402
from agentlog.cli import serve as serve_cli  # noqa: E402
from agentlog.server import create_app, security  # noqa: E402
from agentlog.server.run import viewer_url  # noqa: E402

TOKEN = "s3cret-token-for-tests"


@pytest.fixture
def demo() -> tuple[Store, dict[str, Any]]:
    store = Store.memory(blob_threshold=4096)
    return store, build_demo(store)


def test_token_missing_wrong_and_right(demo: tuple[Store, dict[str, Any]]) -> None:
    store, ids = demo
    app = create_app(store, token=TOKEN)
    url = f"/api/v1/sessions/{ids['session']}/path"
    for headers in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Cookie": "agentlog_token=nope"},
    ):
        response = call(app, "GET", url, headers=headers)
        assert response.status_code == 401, headers
        assert response.json()["error"]["code"] == "unauthorized"
        assert response.headers["www-authenticate"].startswith("Bearer")
    assert call(app, "GET", url, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    # Writes and the viewer's files are guarded too.
    assert call(app, "POST", f"/api/v1/sessions/{ids['session']}/events", json={"kind": "message"}).status_code == 401
    assert call(app, "GET", "/static/viewer.js").status_code == 401
    assert call(app, "GET", "/").status_code == 401


def test_viewer_url_token_becomes_a_cookie(demo: tuple[Store, dict[str, Any]]) -> None:
    store, ids = demo
    app = create_app(store, token=TOKEN)
    assert call(app, "GET", "/?token=wrong").status_code == 401
    entry = call(app, "GET", f"/?token={TOKEN}")
    assert entry.status_code == 303 and entry.headers["location"] == "/"
    cookie = entry.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    jar = {"Cookie": f"agentlog_token={TOKEN}"}
    assert call(app, "GET", "/", headers=jar).status_code == 200
    assert call(app, "GET", f"/api/v1/sessions/{ids['session']}", headers=jar).status_code == 200
    # The query token only opens the viewer page, not the API.
    assert call(app, "GET", f"/api/v1/sessions?token={TOKEN}").status_code == 401


def test_tokens_are_compared_with_compare_digest(
    monkeypatch: pytest.MonkeyPatch, demo: tuple[Store, dict[str, Any]]
) -> None:
    store, _ = demo
    seen: list[tuple[bytes, bytes]] = []
    real = security.hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(security.hmac, "compare_digest", spy)
    app = create_app(store, token=TOKEN)
    assert call(app, "GET", "/api/v1/sessions", headers={"Authorization": "Bearer guess"}).status_code == 401
    assert call(app, "GET", "/api/v1/sessions", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert (b"guess", TOKEN.encode()) in seen and (TOKEN.encode(), TOKEN.encode()) in seen
    assert all(isinstance(a, bytes) and isinstance(b, bytes) for a, b in seen)


def test_loopback_server_refuses_foreign_host_headers(demo: tuple[Store, dict[str, Any]]) -> None:
    store, _ = demo
    app = create_app(store)
    for host in ("localhost:8765", "127.0.0.1:8765", "[::1]:8765", "localhost"):
        assert call(app, "GET", "/api/v1/sessions", headers={"Host": host}).status_code == 200
    rebound = call(app, "GET", "/api/v1/sessions", headers={"Host": "evil.example:8765"})
    assert rebound.status_code == 421 and rebound.json()["error"]["code"] == "bad_host"


def test_cors_is_closed(demo: tuple[Store, dict[str, Any]]) -> None:
    store, _ = demo
    app = create_app(store)
    origin = {"Origin": "https://evil.example"}
    response = call(app, "GET", "/api/v1/sessions", headers=origin)
    assert "access-control-allow-origin" not in response.headers
    preflight = call(app, "OPTIONS", "/api/v1/sessions", headers={**origin, "Access-Control-Request-Method": "POST"})
    assert preflight.status_code == 405
    assert "access-control-allow-origin" not in preflight.headers


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "example.com"])
def test_serve_refuses_public_bind_without_token(tmp_path: Any, monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    monkeypatch.delenv("AGENTLOG_TOKEN", raising=False)
    result = CliRunner().invoke(main, ["--home", str(tmp_path), "serve", "--host", host])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1
    assert "refusing to bind" in result.output and "token" in result.output


def test_serve_refuses_an_empty_token(tmp_path: Any) -> None:
    result = CliRunner().invoke(main, ["--home", str(tmp_path), "serve", "--token", " "])
    assert result.exit_code == 2 and "token is empty" in result.output


def test_serve_without_the_extra_is_one_line(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    real = serve_cli.importlib.util.find_spec

    def hide(name: str, *args: Any) -> Any:
        return None if name in ("uvicorn", "sse_starlette") else real(name, *args)

    monkeypatch.setattr(serve_cli.importlib.util, "find_spec", hide)
    result = CliRunner().invoke(main, ["--home", str(tmp_path), "serve"])
    assert result.exit_code == 1
    assert result.output == (
        "agentlog: error: agentlog serve needs the 'server' extra (missing: "
        "uvicorn, sse_starlette); install it with: pip install "
        "'agentlog[server]'\n"
    )


def test_loopback_names_and_printed_url() -> None:
    assert all(security.is_loopback(h) for h in ("127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost"))
    assert not any(security.is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "example.com", ""))
    assert viewer_url("127.0.0.1", 8765, None) == "http://127.0.0.1:8765/"
    assert viewer_url("0.0.0.0", 80, "a b") == "http://127.0.0.1:80/?token=a%20b"
    assert viewer_url("::1", 1, None) == "http://[::1]:1/"


def test_serve_reports_a_busy_port_in_one_line(tmp_path: Any) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = CliRunner().invoke(main, ["--home", str(tmp_path), "serve", "--port", str(port)])
    assert result.exit_code == 1
    assert result.output.startswith(f"agentlog: error: cannot serve on 127.0.0.1:{port}: ")
    assert result.output.count("\n") == 1


def test_serve_process_with_a_token(tmp_path: Any) -> None:
    """The real command: prints its URL (--json), demands the token, takes
    it from AGENTLOG_TOKEN, and hands the browser a cookie for it."""
    env = {**os.environ, "AGENTLOG_TOKEN": TOKEN}
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from agentlog.cli import main; main()",
            "--home",
            str(tmp_path),
            "serve",
            "--port",
            "0",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        lines = [server.stdout.readline()]
        while lines[-1] not in ("}\n", ""):  # --json prints one indented document
            lines.append(server.stdout.readline())
        announced = json.loads("".join(lines))
        url = announced["url"]
        assert url.endswith(f"/?token={TOKEN}") and url.startswith("http://127.0.0.1:")
        base = url.split("/?")[0]
        with httpx.Client(base_url=base) as client:
            assert client.get("/api/v1/health").status_code == 401
            ok = client.get("/api/v1/health", headers={"Authorization": f"Bearer {TOKEN}"})
            assert ok.status_code == 200 and ok.json()["ok"] is True
            entry = client.get(f"/?token={TOKEN}")
            assert entry.status_code == 303 and "agentlog_token" in entry.headers["set-cookie"]
    finally:
        server.terminate()
        server.wait(30)


def test_core_never_imports_the_server_packages() -> None:
    code = (
        "import sys, agentlog, agentlog.cli, agentlog.agent\n"
        "heavy = {'starlette', 'uvicorn', 'sse_starlette', 'watchfiles', 'agentlog.server'}\n"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_viewer_assets_ship_inside_the_package() -> None:
    static = resources.files("agentlog.server") / "static"
    for name in ("index.html", "viewer.js", "viewer.css"):
        assert (static / name).is_file()
    page = (static / "index.html").read_text(encoding="utf-8")
    assert "http://" not in page and "https://" not in page  # no CDN, nothing fetched elsewhere
