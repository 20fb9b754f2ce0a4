"""Secret redaction for exports, with Yelp's ``detect-secrets`` detectors.

Hand-written patterns age badly (every provider invents a key format);
detect-secrets is maintained, ships a detector per provider (AWS, GitHub,
GitLab, OpenAI, Slack, Stripe, private keys, JWTs, basic-auth URLs...) and
a keyword detector for ``password = "..."`` lines, plus high-entropy
string detectors. Every string of a record is scanned line by line; each
secret found is replaced by ``[REDACTED:<type>]`` and counted by type.
Two detectors find less than the secret, so the span is widened: a
private key is matched by its BEGIN marker alone (the key is on the
lines after it), and a JWT without its signature.

The library is the optional extra ``redact``; without it ``--redact``
fails with a clear error rather than exporting secrets.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from ..errors import RedactionUnavailable

__all__ = ["RedactionUnavailable", "Redactor"]

#: High-entropy detectors at detect-secrets' own default limits: lower
#: ones flag ordinary words and ids.
_ENTROPY = [{"name": "Base64HighEntropyString", "limit": 4.5}, {"name": "HexHighEntropyString", "limit": 3.0}]
#: Left out: public IP addresses are not secrets, and redacting them would
#: mangle logs that are about networking.
_SKIPPED = frozenset({"IPPublicDetector"})
#: A captured group shorter than this names a token's prefix (``ghp``), not
#: the secret: the whole match is redacted instead.
_MIN_GROUP = 8
#: Ids agentlog itself writes are high-entropy hex; they are not secrets.
_UUID = re.compile(r"\A[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
_DIGEST = re.compile(r"\A(sha256:)?[0-9a-f]{64}\Z")
#: Where a private key detect-secrets found by its BEGIN marker ends: the
#: PEM END line, or a PuTTY key's last line. The detector matches only the
#: marker, and the key material is on the lines after it.
_KEY_END = re.compile(r"-----END[^\n]*?-----|Private-MAC:[^\n]*")
#: What can continue a token past where a detector's pattern stopped (the
#: JWT pattern ends lazily after the payload, leaving the signature).
_TOKEN_TAIL = re.compile(r"(?:[A-Za-z0-9_+/=-]|\.(?=[A-Za-z0-9_+/=-]))*")
#: Keys detect-secrets has no detector for, that an agent's session is the
#: likeliest place to hold: Anthropic's (``sk-ant-api03-``, ``-admin01-``,
#: ``-oat01-``...).
_OWN = [
    ("Anthropic API Key", re.compile(r"\bsk-ant-[a-z]+\d{2}-[A-Za-z0-9_-]{20,}")),
    # An HTTP bearer token, as curl commands, request logs and a tool's
    # headers hold it ("Authorization: Bearer ..."): any provider's.
    # (The token is the group; "bearer" in any case, with any spaces.)
    ("Bearer Token", re.compile(r"\b(?i:bearer)[ \t]+([A-Za-z0-9._~+/-]{15,}[A-Za-z0-9_~+/-]=*)")),  # no "." ends it
    # GitHub's fine-grained personal access tokens (detect-secrets knows only
    # ghp_/gho_/ghu_/ghs_/ghr_) and Hugging Face's.
    ("GitHub Token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}")),
    ("Hugging Face Token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
]
#: A key whose value is a token (``GITHUB_TOKEN=``, ``"access_token":``,
#: ``apiToken``), which detect-secrets' keyword list does not have: its
#: last word is "token". ``max_tokens``, ``token_count`` and
#: ``token_type`` are not such keys.
_TOKEN_KEY = re.compile(r"(?:^|[^A-Za-z]|(?<=[a-z]))[Tt](?:oken|OKEN)\Z")
#: ``KEY=value``, ``KEY: value``, ``"key": "value"`` in text, the key a token's.
_TOKEN_LINE = re.compile(r"""([A-Za-z][A-Za-z0-9_.-]*)["']?\s*[:=]\s*["']?([^\s"'`,;]+)""")
#: An unquoted value after a secret-sounding key (``DB_PASSWORD=...``, as
#: ``env``, ``printenv`` and ``cat .env`` print them) is redacted when it is
#: one token of at least this many characters that looks like a value, not
#: code: prose (``password: see below``), references (``${API_KEY}``,
#: ``$PW``, ``os.environ[``, ``get()``), names (``password_manager``,
#: ``args.password``, ``confirm_password:``) and plain numbers
#: (``PASSWORD_MIN_LENGTH=12345678``) are no secret values.
_MIN_BARE = 8
_BARE_VALUE = re.compile(r"[^\s'\"`$(\[{<][^\s'\"`()\[\]{}<>]*\Z")
#: A name or a dotted path in code: letters, ``_``, ``.``, with no digit,
#: and a colon (``if password == confirm_password:``) or the ``;``, ``,``
#: or ``)`` that ends a statement or an argument at the end
#: (``const password = process.env.DB_PASSWORD;``).
_NAME = re.compile(r"[A-Za-z_][A-Za-z_.]*[:;,)]?\Z")
_NUMBER = re.compile(r"[0-9_.]+\Z")


class Redactor:
    """Replaces secrets in JSON values and counts what it replaced."""

    def __init__(self) -> None:
        try:
            from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
            from detect_secrets.plugins.base import RegexBasedDetector
            from detect_secrets.settings import get_plugins, transient_settings
        except ImportError as exc:
            raise RedactionUnavailable(
                "--redact needs the detect-secrets library: pip install 'agentlog[redact]'"
            ) from exc
        detectors: list[type] = list(get_mapping_from_secret_type_to_class().values())
        names = sorted(c.__name__ for c in detectors if c.__name__ not in _SKIPPED and "HighEntropy" not in c.__name__)
        settings = {"plugins_used": [{"name": n} for n in names] + _ENTROPY}
        with transient_settings(settings):
            self._plugins = list(get_plugins())
        self._regex_based = RegexBasedDetector
        self._keys = [p for p in self._plugins if isinstance(p, RegexBasedDetector) and p.secret_type == "Private Key"]
        self._keyword = next(p for p in self._plugins if p.secret_type == "Secret Keyword")
        self._settings = settings
        self._transient = transient_settings
        self.counts: Counter[str] = Counter()

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def text(self, value: str) -> str:
        """``value`` with every secret replaced (and counted)."""
        if not value.strip():
            return value
        with self._transient(self._settings):
            out: list[str] = []
            end = 0
            for start, stop, kind in self._private_keys(value):
                out.append(self._lines(value[end:start]))
                out.append(f"[REDACTED:{kind}]")
                self.counts[kind] += 1
                end = stop
            out.append(self._lines(value[end:]))
            return "".join(out)

    def _lines(self, text: str) -> str:
        return "\n".join(self._line(line) for line in text.split("\n"))

    def _private_keys(self, value: str) -> list[tuple[int, int, str]]:
        """Spans of whole private keys: from the BEGIN marker the detector
        found to the END marker (or, with none, to the end of the text:
        a key cut short is still secret, and showing its lines would
        export the key material the marker announced)."""
        spans: list[tuple[int, int, str]] = []
        for plugin in self._keys:
            for regex in plugin.denylist:
                for match in regex.finditer(value):
                    start = match.start()
                    while start and value[start - 1] == "-":
                        start -= 1
                    closing = _KEY_END.search(value, match.end())
                    spans.append((start, closing.end() if closing else len(value), str(plugin.secret_type)))
        merged: list[tuple[int, int, str]] = []
        for start, stop, kind in sorted(spans):
            if merged and start < merged[-1][1]:  # a key inside one already found
                merged[-1] = (merged[-1][0], max(stop, merged[-1][1]), merged[-1][2])
            else:
                merged.append((start, stop, kind))
        return merged

    def _line(self, line: str) -> str:
        spans: list[tuple[int, int, str]] = []
        for plugin in self._plugins:
            found = plugin.analyze_line(filename="export.txt", line=line, line_number=0)
            if not found:
                continue
            kind = str(next(iter(found)).type)
            if isinstance(plugin, self._regex_based):
                for regex in plugin.denylist:
                    for match in regex.finditer(line):
                        group = match.lastindex or 0
                        if group and len(match.group(group) or "") >= _MIN_GROUP:
                            spans.append((match.start(group), match.end(group), kind))
                        else:
                            tail = _TOKEN_TAIL.match(line, match.end())
                            spans.append((match.start(), tail.end() if tail else match.end(), kind))
            else:
                for secret in found:
                    value = secret.secret_value or ""
                    if not value or _UUID.match(value) or _DIGEST.match(value):
                        continue
                    start = line.find(value)
                    while start != -1:
                        spans.append((start, start + len(value), kind))
                        start = line.find(value, start + len(value))
        spans += self._bare_values(line)
        spans += self._token_values(line)
        for kind, pattern in _OWN:
            spans += [(m.start(m.lastindex or 0), m.end(m.lastindex or 0), kind) for m in pattern.finditer(line)]
        if not spans:
            return line
        out: list[str] = []
        end = 0
        # Where two detectors agree, the one that knows the provider names it.
        for start, stop, kind in sorted(spans, key=lambda s: (s[0], s[2] == "Secret Keyword", s[1])):
            if start < end:  # overlaps one already replaced (two detectors agree)
                end = max(end, stop)  # the longer one's tail is secret too: replaced with it
                continue
            out.append(line[end:start])
            out.append(f"[REDACTED:{kind}]")
            self.counts[kind] += 1
            end = stop
        out.append(line[end:])
        return "".join(out)

    def _bare_values(self, line: str) -> list[tuple[int, int, str]]:
        """Unquoted values of secret-sounding keys. detect-secrets reads an
        unknown file's lines for quoted values only (``password = "..."``);
        read as a config file's, ``KEY=value`` is found too, and only a value
        that is one long token is taken (``_MIN_BARE``)."""
        spans = []
        for secret in self._keyword.analyze_line(filename="export.cfg", line=line, line_number=0):
            # the first token: a value with words after it on the line
            value = next(iter((secret.secret_value or "").split()), "")
            if not _looks_like_a_value(value):
                continue
            start = line.find(value)
            while start != -1:
                spans.append((start, start + len(value), str(secret.type)))
                start = line.find(value, start + len(value))
        return spans

    def value(self, value: Any) -> Any:
        """A copy of a JSON value with every string redacted: keys too, and
        a string under a secret-sounding key (``{"password": ...}``) as the
        ``password = "..."`` line it is. Scanned alone, such a value passed:
        the key that makes it a secret was never seen."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                shown = self.text(key) if isinstance(key, str) else key
                while shown in out:  # two secrets as keys: both kept, told apart
                    shown = f"{shown} (another)"
                out[shown] = (
                    self._keyed(key, item) if isinstance(key, str) and isinstance(item, str) else self.value(item)
                )
            return out
        return value

    def _token_values(self, line: str) -> list[tuple[int, int, str]]:
        """Values of token keys in text, taken as ``_bare_values`` takes a
        secret-sounding key's: one long token that looks like a value."""
        return [
            (found.start(2), found.end(2), "Secret Keyword")
            for found in _TOKEN_LINE.finditer(line)
            if _TOKEN_KEY.search(found.group(1)) and _looks_like_a_value(found.group(2))
        ]

    def meta(self, meta: dict[str, Any]) -> dict[str, Any]:
        """A session's metadata redacted. A label whose name was a secret is
        renamed ``redacted-1``, ``redacted-2``...: "[REDACTED:GitHub Token]"
        is no name a label may have (a ref could not name it)."""
        out: dict[str, Any] = {}
        for key, value in meta.items():
            if key == "labels" and isinstance(value, dict):
                # A label's target is an event id, which names an event and
                # is never a secret (under a label named "password" it was
                # taken for one); its name is scanned.
                renamed: dict[Any, Any] = {}
                taken = set(value)
                n = 0
                for name, target in value.items():
                    shown = self.text(name) if isinstance(name, str) else name
                    if shown != name:
                        n += 1
                        while f"redacted-{n}" in taken:  # never over a label of that name
                            n += 1
                        shown = f"redacted-{n}"
                        taken.add(shown)
                    renamed[shown] = target
                out[key] = renamed
            else:
                out.update(self.value({key: value}))
        return out

    def _keyed(self, key: str, value: str) -> str:
        """``value``, the string under ``key``, redacted: its own secrets,
        or, if the keyword detector takes it whole as ``key``'s secret, all
        of it. A reference (``$VAR``, ``${VAR}``) stays, as in text."""
        redacted = self.text(value)
        if redacted != value or not value.strip() or "\n" in value or value.startswith("$"):
            return redacted
        if _TOKEN_KEY.search(key) and _looks_like_a_value(value):
            self.counts["Secret Keyword"] += 1
            return "[REDACTED:Secret Keyword]"
        quoted = value.replace('"', "'")
        with self._transient(self._settings):
            found = self._keyword.analyze_line(filename="export.cfg", line=f'{key} = "{quoted}"', line_number=0)
        kinds = [str(secret.type) for secret in found if secret.secret_value == quoted]
        if not kinds:
            return value
        self.counts[kinds[0]] += 1
        return f"[REDACTED:{kinds[0]}]"


def _looks_like_a_value(value: str) -> bool:
    """One token of at least ``_MIN_BARE`` characters that is no reference,
    name in code or plain number (see ``_MIN_BARE``)."""
    return (
        len(value) >= _MIN_BARE
        and _BARE_VALUE.match(value) is not None
        and not _NAME.match(value)
        and not _NUMBER.match(value)
    )
