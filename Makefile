# One entry point for lint, types and tests. `make ci` is what .ci/run and the README use.
PYTHON ?= python3

.PHONY: ci test-deps check lint types test bench demo golden

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

# Regenerate golden exposition files after an intended change; review the diff.
golden:
	UPDATE_GOLDEN=1 $(PYTHON) -m pytest -q tests/test_collector.py

bench:
	$(PYTHON) -m bench.run_all

demo:
	$(PYTHON) -m exporter.cli demo
