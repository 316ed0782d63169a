# Everything a newcomer needs goes through these targets; each installs what it uses.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PORT   ?= 8501

.PHONY: install demo test test-concurrent test-nightly lint typecheck unit browser-deps bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,openai]'
	touch $(STAMP)

install: $(STAMP)

## The main job: demo scenarios -> OTLP -> embedded store, receiver and dashboard up.
demo: install
	$(BIN)/janux serve --demo --ui-port $(PORT)

## Debian's Chromium drives the real-browser test; installed here so a fresh machine needs nothing by hand.
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

lint: install
	$(BIN)/ruff check janux runtime tracing dashboard tests bench docs/examples
	$(BIN)/lint-imports

typecheck: install
	$(BIN)/mypy

# pytest, failing when it collects nothing (exit status 5) as well as when a test fails.
PYTEST = run_pytest() { $(BIN)/pytest -q -p no:cacheprovider "$$@"; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: treating as failure"; return 1; fi; \
	return $$rc; }; run_pytest

## The ingest, telemetry and source tests, 4 at a time on this machine's 2 cores: timing assumptions
## (a sleep instead of a wait) fail here rather than on a user's loaded machine.
CONCURRENT_TESTS = tests/tracing/otlp tests/tracing/receiver tests/tracing/sources tests/tracing/sdk

## All tests: lint, type check, unit, property, end-to-end, AppTest and real-browser (two at a time,
## one per core; a file's tests stay on one worker so its module fixtures are built once), then the
## ingest and telemetry tests, which run only in the concurrent step.
test: install browser-deps lint typecheck
	@$(PYTEST) -n 2 --dist loadfile $(addprefix --ignore=,$(CONCURRENT_TESTS))
	@$(MAKE) --no-print-directory test-concurrent

test-concurrent: install
	@$(PYTEST) -n 4 $(CONCURRENT_TESTS)

## Nightly-style: the property tests with many more examples (hypothesis profile `nightly`,
## tests/conftest.py), above all the random delegation trees with injected failures.
test-nightly: install
	@export HYPOTHESIS_PROFILE=nightly; $(PYTEST) tests/runtime/test_exit_properties.py

## Benchmarks print tables; see README "Benchmarks".
bench: install
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
