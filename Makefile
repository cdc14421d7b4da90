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

# Three workers on two cores (pytest-xdist; a module stays on one worker, so an e2e module
# shares its one Prometheus): the tests marked `waits` (the e2e stacks waiting out `for:`,
# the demo's real minutes) are one group, run in turn by one worker while the two others
# run the rest (tests/conftest.py); the group is collected first, so it starts first. Then,
# alone, the tests that measure real time (the attacks, real training scripts against
# real-time thresholds): a neighbouring test would be part of what they measure.
test:
	$(PYTHON) -m pytest -q -n 3 --dist loadgroup --no-loadscope-reorder -m "not serial" --durations=15
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
