"""One word, one meaning: no two modules of agentlog define a public class
or function of the same name.

There were three ``Usage`` classes and two ``estimate_tokens`` with
different meanings; now ``agentlog.tokens`` holds the one ``Usage`` (what
a model call consumed) and the one ``estimate_tokens`` (characters / 4),
and everything else imports them.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections import defaultdict

import agentlog
import agentlog.agent
import agentlog.agent.models
import agentlog.state
import agentlog.tokens


def _definitions() -> dict[str, set[str]]:
    """Public class and function name -> the modules that define one."""
    found: dict[str, set[str]] = defaultdict(set)
    for info in pkgutil.walk_packages(agentlog.__path__, "agentlog."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue  # running it is its only use
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if name.startswith("_") or not (inspect.isclass(value) or inspect.isfunction(value)):
                continue
            if getattr(value, "__module__", None) == info.name:
                found[name].add(info.name)
    return found


def test_no_two_modules_define_the_same_public_name():
    definitions = _definitions()
    assert definitions["Usage"] == {"agentlog.tokens"}
    assert definitions["estimate_tokens"] == {"agentlog.tokens"}
    repeated = {name: sorted(modules) for name, modules in definitions.items() if len(modules) > 1}
    assert repeated == {}


def test_the_agent_and_the_checkpoint_use_the_one_usage():
    assert agentlog.agent.Usage is agentlog.tokens.Usage
    assert agentlog.agent.models.Completion("").usage == agentlog.tokens.Usage()
    totals = agentlog.state.UsageTotals()
    totals.add(agentlog.tokens.Usage(10, 5, 15, 0.25))
    totals.add(agentlog.tokens.Usage(1, 2, 3))
    assert totals == agentlog.state.UsageTotals(11, 7, 0.25, 2)
    assert agentlog.agent.estimate_request_tokens([{"role": "user", "content": "hi"}]) == (
        agentlog.tokens.estimate_tokens('[{"content": "hi", "role": "user"}]')
    )
