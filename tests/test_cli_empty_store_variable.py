"""An empty $AGENTLOG_HOME or $AGENTLOG_STORE is refused, as an empty option is."""

from __future__ import annotations

from pathlib import Path

from cli_support import error, run


def test_an_empty_store_variable_is_refused_like_an_empty_option(tmp_path: Path) -> None:
    # `AGENTLOG_HOME=$SCRATCH agentlog rm --yes x` with SCRATCH unset used to
    # act on the default store; `--home ""` was already refused.
    default = tmp_path / "xdg"
    for variable in ("AGENTLOG_HOME", "AGENTLOG_STORE"):
        result = run(None, "ls", env={variable: "", "XDG_DATA_HOME": str(default)})
        line = error(result, 2)
        assert f"${variable} is set but empty" in line
    assert not default.exists()
