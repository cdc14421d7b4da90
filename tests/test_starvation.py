"""Prometheus gets its scrape: three hostile clients, from an address of their own, against
the exporter process serving 500 runs (bench/starvation.py, the same code); at least 29 of
30 scrapes, from another address, answer 200 within 10 s under each."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.common import free_port
from bench.scale import start, state_file
from bench.starvation import ATTACKS, measure

# Run alone (make test): a test running beside it would be part of the load it measures.
pytestmark = pytest.mark.serial


@pytest.fixture(scope="module")
def exporter_port() -> Iterator[int]:
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state.json"
        state_file(state, 500)
        port = free_port()
        proc = start(port, state, 500)
        try:
            yield port
        finally:
            proc.terminate()
            proc.wait(30)


@pytest.mark.slow
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_scrapes_are_answered_under_attack(exporter_port: int, attack: str) -> None:
    # 400 slow clients here (3,000 in the bench): over the connection bound, and the
    # suite's two cores are not spent on the attacker.
    options = {"clients": 400} if attack == "slow" else {}
    # Unread views pile up one a second: the scrapes must outlast a few of them.
    interval = 0.5 if attack == "nonreading" else 0.1
    result = measure(exporter_port, attack, count=30, interval=interval, **options)
    assert result["answered_within_10s"] >= 29, result
