"""--redact sees a string under a secret-sounding key as the ``key = "value"``
assignment it is. Each string of a record was scanned alone, so the key
that makes it a secret was never seen: a tool call's arguments as an
object, a custom or state record and metadata went out in clear, while the
same secret as text was redacted. Keys are scanned too; bearer tokens are
found; a name in code before a ``;`` stays."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

pytest.importorskip("detect_secrets", reason="the 'redact' extra is not installed")

from agentlog import Store  # noqa: E402
from agentlog.export import export_session  # noqa: E402
from agentlog.export.redact import Redactor  # noqa: E402

PASSWORD = "s3cr3tPassw0rd!"
API_KEY = "9f8e7d6c5b4a39281706f5e4d3c2b1a0"
AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
BEARER = "a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ"
GITHUB = "ghp_" + "1234567890abcdefghijklmnopqrstuvwxyzAB"[:36]


def redacted_exports(store: Store, sid: str) -> list[tuple[str, str]]:
    """(format, text) of the session exported with --redact in every format."""
    texts = []
    for format in ("md", "html", "bundle"):
        out = io.BytesIO()
        with store.open(sid, readonly=True) as reader:
            export_session(reader, format, out, redact=True)
        texts.append((format, out.getvalue().decode()))
    return texts


def test_values_under_secret_keys_are_redacted() -> None:
    r = Redactor()
    out = r.value(
        {
            "url": "https://api.example.com/v1",
            "headers": {"Authorization": f"Bearer {BEARER}"},
            "api_key": API_KEY,
            "env": {"DB_PASSWORD": PASSWORD, "AWS_SECRET_ACCESS_KEY": AWS, "HOME": "/root"},
            "password": "${DB_PASSWORD}",  # a reference, not the secret
            "max_tokens": "1000",
            "content": "the password is in the vault",
        }
    )
    shown = repr(out)
    for secret in (PASSWORD, API_KEY, AWS, BEARER):
        assert secret not in shown
    assert out["url"] == "https://api.example.com/v1"
    assert out["headers"]["Authorization"] == "Bearer [REDACTED:Bearer Token]"
    assert out["env"]["HOME"] == "/root"
    assert out["password"] == "${DB_PASSWORD}"
    assert out["max_tokens"] == "1000"
    assert out["content"] == "the password is in the vault"
    assert r.total == 4


def test_secrets_as_keys_are_redacted_and_kept_apart() -> None:
    other = GITHUB[:-1] + "Z"
    out = Redactor().value({GITHUB: "a", other: "b", "plain": "c"})
    assert GITHUB not in repr(out) and other not in repr(out)
    assert sorted(out.values()) == ["a", "b", "c"]


NAMES_IN_CODE = [
    "const password = process.env.DB_PASSWORD;",
    "api_key = config.api_key;",
    "const apiKey = req.body.apiKey;",
    "password = cfg.db.password;  // from config",
    "login(password, user.password)",
]


def test_a_tool_calls_object_arguments_are_redacted_in_every_export(tmp_path: Path) -> None:
    store = Store(tmp_path / "home")
    with store.create() as s:
        s.append(
            "tool_call",
            {
                "id": "c1",
                "name": "http_get",
                "arguments": {"api_key": API_KEY, "headers": {"Authorization": f"Bearer {BEARER}"}},
            },
            role="assistant",
        )
        s.append("custom", {"env": {"DB_PASSWORD": PASSWORD}})
        sid = s.id
    for format, text in redacted_exports(store, sid):
        for secret in (API_KEY, BEARER, PASSWORD):
            assert secret not in text, (format, secret)


TOKEN = "q8ZtR3vLm2XpW7kN4bHc9JdF"


@pytest.mark.parametrize(
    "line",
    [
        f"GITHUB_TOKEN={TOKEN}",
        f"ACCESS_TOKEN={TOKEN}",
        f"export SLACK_BOT_TOKEN={TOKEN}",
        f'{{"access_token": "{TOKEN}", "expires_in": 3600}}',
        f"apiToken: {TOKEN}",
        "GITHUB_TOKEN=github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789",
        "HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh",
    ],
)
def test_token_values_are_redacted(line: str) -> None:
    out = Redactor().text(line)
    assert "[REDACTED:" in out
    assert TOKEN not in out and "github_pat_11" not in out and "hf_AbCd" not in out


ONLY_NAMING_A_TOKEN = [
    "max_tokens=4096",
    "token_count: 1234",
    "token_type: Bearer",
    "the token is in the vault",
    "tokens = tokenize(text)",
    "apiToken = process.env.API_TOKEN;",
    "id_token: ${ID_TOKEN}",
]


@pytest.mark.parametrize("line", NAMES_IN_CODE + ONLY_NAMING_A_TOKEN)
def test_names_in_code_and_of_tokens_stay(line: str) -> None:
    assert Redactor().text(line) == line


def test_token_keys_in_records() -> None:
    out = Redactor().value({"token": TOKEN, "refresh_token": TOKEN, "max_tokens": "4096", "token_type": "Bearer"})
    assert out == {
        "token": "[REDACTED:Secret Keyword]",
        "refresh_token": "[REDACTED:Secret Keyword]",
        "max_tokens": "4096",
        "token_type": "Bearer",
    }


def test_a_label_named_like_a_secret_is_renamed_and_ids_stay(tmp_path: Path) -> None:
    """A label named like a token was printed whole in Markdown and HTML,
    and a redacted bundle carried a label name no label may have; an event
    id under a label named "password" was redacted, breaking the label."""
    store = Store(tmp_path / "home")
    with store.create() as s:
        event = s.append("message", {"content": "hello"}, role="user")
        s.update_meta(labels={GITHUB: event.id, "password": event.id})
        sid = s.id
    for format, text in redacted_exports(store, sid):
        assert GITHUB not in text, format
        assert "redacted-1" in text and "password" in text, format
    meta = Redactor().meta({"labels": {GITHUB: event.id, "password": event.id}, "name": "n"})
    assert meta == {"labels": {"redacted-1": event.id, "password": event.id}, "name": "n"}


def test_hex_and_uuid_secrets_under_secret_keys_are_redacted() -> None:
    """The exemption for ids (meant for label targets) let a 64-hex
    SECRET_KEY or a UUID API key through in any record."""
    hex_secret = "9f8e7d6c5b4a39281706f5e4d3c2b1a0" * 2
    uuid_secret = "2baaec9f-a5c7-42b0-beeb-32e2a05648f3"
    out = Redactor().value({"SECRET_KEY": hex_secret, "HEROKU_API_KEY": uuid_secret, "GITHUB_TOKEN": hex_secret})
    assert hex_secret not in repr(out) and uuid_secret not in repr(out)
    assert Redactor().value({"session_id": uuid_secret}) == {"session_id": uuid_secret}
