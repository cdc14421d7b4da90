"""Detection quality on the simulated corpus, judged by promtool with the shipped rules.

Healthy runs (noisy losses, long warm-ups, evaluation pauses, learning-rate restarts, slow
jobs, a job that finishes and exits, ranks a few steps apart, a slow but live rank) must raise
nothing with the default thresholds; each bad run must raise its alerts (a stuck rank names
that rank, idle GPUs come from dcgm-exporter series beside the exporter's). And the
exporter and the rules tell one truth: at every minute, the state alerts firing are exactly
those the ranks' states (training_run_state) and each alert's ``for:`` call for.
bench/alert_quality.py holds the corpus and prints the table.
"""

from __future__ import annotations

import pytest

from bench.alert_quality import CORPUS, evaluate, expected_firing

pytestmark = pytest.mark.slow


def test_corpus_no_false_positives_no_misses_and_state_agrees_with_alerts() -> None:
    result = evaluate(seed=1)
    bad = {n: r for n, r in result["runs"].items() if r["false_positives"] or r["missed"]}
    assert bad == {}
    assert result["healthy_runs"] >= 10 and result["bad_runs"] >= 13
    # Every bad run was caught by exactly its own alerts; a stuck rank by its rank.
    for run in CORPUS:
        fired = set(result["runs"][run.name]["fired_first_minute"])
        assert fired == set(run.alerts), run.name
        named = result["runs"][run.name]["ranks_named"]
        assert named == ([run.stuck_rank] if run.stuck_rank else []), run.name
    multi = {r.name for r in CORPUS if r.ranks > 1}
    assert {"ranks-healthy", "rank-slow-alive", "rank-hangs", "all-hang-after-one"} <= multi
    # At every evaluation of every run, what fired is what the exporter's state said.
    disagreements = {n: r["disagreements"] for n, r in result["runs"].items() if r["disagreements"]}
    assert disagreements == {} and result["disagreements"] == 0
    assert all(r["minutes_checked"] > 60 for r in result["runs"].values())


def test_expected_firing_follows_each_alerts_for() -> None:
    # Stalled at minutes 3..5: pending at 3, firing at 4 and 5 (for: 1m); a one-minute
    # blip of diverged at 7 never fires.
    states: list[str | None] = ["running"] * 3 + ["stalled"] * 3 + ["running", "diverged", None]
    assert expected_firing(states) == {("TrainingJobStalled", 4), ("TrainingJobStalled", 5)}
