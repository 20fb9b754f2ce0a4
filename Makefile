# The two commands a new user runs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench bench-peers crash-test fuzz clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m agentlog.demo

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) -m bench

# Side by side with the stores users would otherwise pick (installs the `bench` extra).
bench-peers: $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	$(PY) -m bench path
	$(PY) -m bench.plots

crash-test: $(STAMP)
	AGENTLOG_EXHAUSTIVE=1 $(PY) -m pytest -q tests/reliability -k crash

fuzz: $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,fuzz]'
	AGENTLOG_EXHAUSTIVE=1 $(PY) -m pytest -q tests/reliability -k fuzz

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
