# tpsviz: two commands do all the set-up on a fresh machine.
#   make run    start the dashboard on the embedded demo data (http://localhost:8501)
#   make test   install everything the tests need (venv, packages, Debian chromium) and run them
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test setup browser bench demo-data clean

$(BIN)/.installed: requirements.txt requirements-dev.txt
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements-dev.txt
	touch $@

setup: $(BIN)/.installed

browser:
	@test -x /usr/bin/chromium || { $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }
	@/usr/bin/chromium --version

run: setup
	$(BIN)/python serve.py --browser.gatherUsageStats false

test: setup browser
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: setup
	$(BIN)/python bench/bench_scores.py
	$(BIN)/python bench/bench_inference.py
	$(BIN)/python bench/bench_verdict.py --sizes 450,10000
	$(BIN)/python bench/bench_machinery.py

demo-data: setup
	$(BIN)/python -m tpsviz demo-data --out demo_data

clean:
	rm -rf $(VENV) test-output .pytest_cache .hypothesis
