"""docs/cli.md documents every command, and its reference matches --help."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentlog.cli import all_commands
from agentlog.cli._docgen import BEGIN, END, command_help, regenerate

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


@pytest.fixture(scope="module")
def page() -> str:
    return DOC.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(all_commands()))
def test_every_command_has_a_section(page, name):
    assert f"### `agentlog {name}`" in page, (
        f"docs/cli.md has no section for `agentlog {name}`: run python -m agentlog.cli._docgen"
    )
    assert command_help(name) in page


@pytest.mark.parametrize("name", sorted(all_commands()))
def test_every_command_says_what_it_does(name):
    command = all_commands()[name]
    assert command.help and command.help.strip(), f"{name} has no help text"
    assert any(p.name == "as_json" for p in command.params), f"{name} has no --json"


def test_reference_is_up_to_date(page):
    assert page.count(BEGIN) == 1 and page.count(END) == 1
    assert regenerate(page) == page, "docs/cli.md is stale: run python -m agentlog.cli._docgen"
