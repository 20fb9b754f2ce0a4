# The two commands a new user runs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench crash-test fuzz clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,postgres,redact]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m agentlog.demo

test: $(STAMP)
	$(PY) -m pytest -q

# Lint and the strict type check (config in pyproject.toml). Not yet a
# prerequisite of test: it becomes one once the whole tree passes.
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) -m bench

crash-test: $(STAMP)
	AGENTLOG_EXHAUSTIVE=1 $(PY) -m pytest -q tests/reliability -k crash

fuzz: $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,fuzz]'
	AGENTLOG_EXHAUSTIVE=1 $(PY) -m pytest -q tests/reliability -k fuzz

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
