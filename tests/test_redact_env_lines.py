"""--redact finds secrets as an agent sees them in `env`, `printenv` or `cat .env`.

detect-secrets reads the lines of a file it does not know for quoted
values only, so ``AWS_SECRET_ACCESS_KEY=...`` went out in clear while the
same key written ``aws_secret_access_key = "..."`` was redacted; and it has
no detector for Anthropic's keys."""

from __future__ import annotations

import pytest

pytest.importorskip("detect_secrets", reason="the 'redact' extra is not installed")

from agentlog.export.redact import Redactor  # noqa: E402

AWS_SECRET = "BNGdP2UPTq2WWipmo8tJnHcTOCt3rDUHB9r7oBE2"
ANTHROPIC = "sk-ant-api03-" + "Xq7_Lm2pR9vT" * 8  # made up, in the shape of one
ENV = f"""DB_PASSWORD=h03jTtKWHDQ4aDk7
AWS_SECRET_ACCESS_KEY={AWS_SECRET}
ANTHROPIC_API_KEY={ANTHROPIC}
SECRET_KEY=ZLEMimOnwuYUWCAqAAa79kStW7s0wFEbt8PaXBgQWZD9rjAKXI
STRIPE_SECRET_KEY=sk_live_UEJFOJqzpcLGdhyQ2183T9Ly"""


def test_unquoted_values_of_secret_keys_are_redacted() -> None:
    r = Redactor()
    out = r.text(ENV)
    assert out.splitlines() == [
        "DB_PASSWORD=[REDACTED:Secret Keyword]",
        "AWS_SECRET_ACCESS_KEY=[REDACTED:Secret Keyword]",
        "ANTHROPIC_API_KEY=[REDACTED:Anthropic API Key]",
        "SECRET_KEY=[REDACTED:Secret Keyword]",
        "STRIPE_SECRET_KEY=[REDACTED:Stripe Access Key]",
    ]
    assert r.total == 5


def test_an_anthropic_key_is_found_without_a_key_name() -> None:
    r = Redactor()
    line = f'curl -H "x-api-key: {ANTHROPIC[:40]}" https://api.anthropic.com/v1/messages'
    assert r.text(line) == 'curl -H "x-api-key: [REDACTED:Anthropic API Key]" https://api.anthropic.com/v1/messages'


@pytest.mark.parametrize(
    "line",
    [
        "password: see below for how to set it",
        '    password = os.environ["PW"]',
        "api_key: ${API_KEY}",
        "my_secret = 42",
        "secret: true",
        "commit 3f2a9b1c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a",
        "The password is stored in the vault.",
        "self.password = password_manager",
        "password=args.password",
        "if password == confirm_password:",
        "PASSWORD_MIN_LENGTH=12345678",
        "api_key = get_api_key_from_environment()",
        "secret = os.getenv('SECRET')",
        "export API_KEY=$API_KEY_FROM_VAULT",
    ],
)
def test_prose_references_and_short_values_are_left_alone(line: str) -> None:
    r = Redactor()
    assert r.text(line) == line and r.total == 0


@pytest.mark.parametrize(
    ("line", "redacted"),
    [
        ("DB_PASSWORD=h03j$TtKWHDQ4aDk7", "DB_PASSWORD=[REDACTED:Secret Keyword]"),
        ("DB_PASSWORD=h03jTtKWHDQ4aDk7 and more", "DB_PASSWORD=[REDACTED:Secret Keyword] and more"),
        ("mysql -u root --password=Sup3rS3cretPass db", "mysql -u root --password=[REDACTED:Secret Keyword] db"),
        # two detectors on one secret, one longer: its tail goes with it
        ("API_KEY=ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789!extrasecret", "API_KEY=[REDACTED:GitHub Token]"),
    ],
)
def test_a_value_with_symbols_or_words_after_it_is_redacted(line: str, redacted: str) -> None:
    assert Redactor().text(line) == redacted
