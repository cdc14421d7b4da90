# One entry point for lint, types and tests. `make ci` is what .ci/run and the README use.
PYTHON ?= python3

.PHONY: ci test-deps check lint types test test-fast bench demo golden

ci: test-deps check

test-deps:
	./scripts/install-test-deps.sh

check: lint types test

lint:
	$(PYTHON) -m ruff check exporter reporter tests bench alerts grafana
	$(PYTHON) -m ruff format --check exporter reporter tests bench alerts grafana
	$(PYTHON) alerts/generate.py --check
	$(PYTHON) grafana/build.py --check

types:
	$(PYTHON) -m mypy

test:
	$(PYTHON) -m pytest -q

# The inner loop: everything but the tests marked slow (real training, browsers, pip
# installs, the detection corpus, e2e). `make ci` runs them all.
test-fast:
	$(PYTHON) -m pytest -q -m "not slow"

# Regenerate golden exposition files after an intended change; review the diff.
golden:
	UPDATE_GOLDEN=1 $(PYTHON) -m pytest -q tests/test_collector.py

bench:
	$(PYTHON) -m bench.run_all

demo:
	$(PYTHON) -m exporter.cli demo
