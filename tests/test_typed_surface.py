"""The package ships ``py.typed``: a harness checked with ``mypy --strict``
must meet an explicit, precise surface, as it finds agentlog installed.

tests/typed_user/harness.py uses the API broadly (store, session, events,
errors, export, search, the agent loop with scripted and home-made models)
and pins key result types with ``assert_type``; one mypy run must find
nothing to report in it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api")

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "typed_user" / "harness.py"


def test_a_strict_harness_type_checks_clean(tmp_path: Path) -> None:
    # A config of its own (none of the project's ``files``), a cache in the
    # test's directory: the run checks the harness, and agentlog as imported.
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nstrict = True\npython_version = 3.11\n", encoding="utf-8")
    stdout, stderr, status = api.run(
        [
            "--config-file",
            str(config),
            "--cache-dir",
            str(tmp_path / "mypy_cache"),
            "--no-error-summary",
            "--show-error-codes",
            str(PROGRAM),
        ]
    )
    assert (status, stdout, stderr) == (0, "", "")
