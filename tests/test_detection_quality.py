"""Detection quality on the simulated corpus, judged by promtool with the shipped rules.

Healthy runs (noisy losses, long warm-ups, evaluation pauses, learning-rate restarts, slow
jobs, a job that finishes and exits) must raise nothing with the default thresholds; each
bad run must raise its alert. bench/alert_quality.py holds the corpus and prints the table.
"""

from __future__ import annotations

from bench.alert_quality import CORPUS, evaluate


def test_corpus_has_no_false_positives_and_no_misses() -> None:
    result = evaluate(seed=1)
    bad = {n: r for n, r in result["runs"].items() if r["false_positives"] or r["missed"]}
    assert bad == {}
    assert result["healthy_runs"] >= 6 and result["bad_runs"] >= 7
    # Every bad run was caught by exactly its own alert.
    for run in CORPUS:
        fired = set(result["runs"][run.name]["fired_first_minute"])
        assert fired == ({run.expected} if run.expected else set()), run.name
