# The two commands a new user runs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench bench-peers crash-test fuzz clean chromium

# setup.py and the C file too: the editable install builds agentlog._speedups
# in place, and a changed C file needs building again.
$(STAMP): pyproject.toml setup.py src/agentlog/_speedups.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,postgres,redact,server,server-test,openai-agents,adk,langgraph,integration-tests]'
	touch $(STAMP)

# The browser tests drive Debian's chromium (Playwright's own download does
# not work here). Installed when missing and we are root; otherwise those
# tests skip and say why.
chromium:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing Debian's chromium for the browser tests"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
			|| echo "warning: could not install chromium; the browser tests will be skipped"; \
	else echo "warning: no chromium and not root; the browser tests will be skipped"; fi

demo: $(STAMP)
	$(PY) -m agentlog.demo

# AGENTLOG_REQUIRE_SPEEDUPS: the C loop must have built (tests/test_speedups.py).
test: $(STAMP) chromium lint
	AGENTLOG_REQUIRE_SPEEDUPS=1 $(PY) -m pytest -q

# Lint, formatting and the strict type check (config in pyproject.toml),
# run by `make test` before the tests.
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) -m bench

# Side by side with the stores users would otherwise pick (installs the `bench` extra):
# runs every figure, redraws docs/img/peers-*.png and rewrites the Peers tables of
# docs/performance.md. `make bench-peers PEERS_ARGS=--quick` for the scaled-down run,
# whose tables and plots go to bench-home/peers-quick.md and bench-home/quick-img/.
PEERS_ARGS ?=
bench-peers: $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	$(PY) -m bench.peers $(PEERS_ARGS)
	$(PY) -m bench.plots $(PEERS_ARGS)
	$(PY) -m bench.peers_report $(PEERS_ARGS)

# Every crash state of every workload, and a kill storm of 1,035 SIGKILLs
# (docs/reliability.md gives the counts and the time); the `off` states run
# beside the rest, one per core.
crash-test: $(STAMP)
	AGENTLOG_EXHAUSTIVE=1 $(PY) -m pytest -q -p no:cacheprovider tests/reliability -k "crash and not off" & \
	AGENTLOG_EXHAUSTIVE=1 $(PY) -m pytest -q -p no:cacheprovider tests/reliability -k "crash and off"; \
	off=$$?; wait $$!; rest=$$?; exit $$((off || rest))

# 1,000,000 coverage-guided cases (atheris: the `fuzz` extra) beside the
# exhaustive hypothesis run; the two run at once, one per core.
fuzz: $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,fuzz]'
	AGENTLOG_EXHAUSTIVE=1 $(PY) -m pytest -q -p no:cacheprovider tests/reliability/test_fuzz.py -k atheris & \
	AGENTLOG_EXHAUSTIVE=1 $(PY) -m pytest -q -p no:cacheprovider tests/reliability -k "fuzz and not atheris"; \
	rest=$$?; wait $$!; atheris=$$?; exit $$((rest || atheris))

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
