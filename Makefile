# One entry point for lint, types and tests. `make ci` is what .ci/run and the README use.
PYTHON ?= python3

.PHONY: ci test-deps check lint types test test-fast bench demo golden

ci: test-deps check

test-deps:
	./scripts/install-test-deps.sh

check: lint types test

lint:
	$(PYTHON) -m ruff check exporter reporter tests bench alerts grafana docs
	$(PYTHON) -m ruff format --check exporter reporter tests bench alerts grafana docs
	$(PYTHON) alerts/generate.py --check
	$(PYTHON) grafana/build.py --check
	$(PYTHON) docs/readme.py --check

types:
	$(PYTHON) -m mypy

# Two at a time (pytest-xdist; a module stays on one worker, so an e2e module shares its one
# Prometheus, and the modules of one xdist_group share one worker: tests/conftest.py), in
# the order collected (the e2e modules, which wait longest, first), then, alone, the tests that measure real time (the attacks, real training
# scripts against real-time thresholds): a neighbouring test would be part of what they measure.
test:
	$(PYTHON) -m pytest -q -n 2 --dist loadgroup --no-loadscope-reorder -m "not serial" --durations=15
	$(PYTHON) -m pytest -q -m serial --durations=10

# The inner loop: everything but the tests marked slow (a second or more each: real
# training, browsers, pip installs, the detection corpus, e2e, big inputs, real waits), two
# at a time (pytest-xdist). `make ci` runs them all.
test-fast:
	$(PYTHON) -m pytest -q -m "not slow" -n 2

# Regenerate golden exposition files after an intended change; review the diff.
golden:
	UPDATE_GOLDEN=1 $(PYTHON) -m pytest -q tests/test_collector.py

bench:
	$(PYTHON) -m bench.run_all

demo:
	$(PYTHON) -m exporter demo
