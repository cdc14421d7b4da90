"""The stuck rank: one definition (exporter.core.ranks) that ``top`` shares with the rule."""

from __future__ import annotations

from exporter.commands.top import render
from exporter.commands.toprows import STUCK_RANK_QUERY, rows_from_exporter
from exporter.core.ranks import DONE_STATES, RankView, stuck_rank

from . import rulefiles


def view(rank: str, last_step: float | None, state: str = "running") -> RankView:
    return RankView(rank, f"llm-{rank}", f"node-{rank}", last_step, 120.0, state)


def test_the_rank_behind_the_newest_by_more_than_its_threshold_is_stuck() -> None:
    laggard = stuck_rank([view("0", 1000), view("1", 995), view("2", 700)])
    assert laggard is not None and (laggard.rank, laggard.behind_seconds) == ("2", 300)
    assert laggard.describe() == "rank 2 (pod llm-2 on node-2) stopped 5m before the newest rank"
    assert laggard.short() == "2@node-2"


def test_no_one_is_named_when_ranks_stopped_together_are_done_or_alone() -> None:
    assert stuck_rank([view("0", 1000), view("1", 950), view("2", 990)]) is None  # within 120 s
    assert stuck_rank([view("0", 1000), view("1", 700, "finished")]) is None
    assert stuck_rank([view("0", 1000), view("1", None)]) is None  # never stepped: no evidence
    assert stuck_rank([view("0", 1000)]) is None
    two = stuck_rank([view("0", 1000), view("1", 800), view("2", 600)])
    assert two is not None and two.rank == "2"  # the furthest behind first


def test_the_rule_and_top_read_the_same_series_and_done_states() -> None:
    alert = next(r for r in rulefiles.rules() if r.get("alert") == "TrainingRankStalled")
    for text in (alert["expr"], STUCK_RANK_QUERY):
        assert "namespace_pod_job_name:training_rank_lag_seconds:behind_newest" in text
        assert "training_rank_lag_threshold_seconds" in text
        assert "|".join(DONE_STATES) in text


def test_top_names_the_stuck_rank_from_one_exporters_runs() -> None:
    def run(rank: str, last_step: float, state: str = "running") -> dict[str, object]:
        return {
            "namespace": "ml",
            "job_name": "llm",
            "pod": f"llm-{rank}",
            "state": state,
            "info": {"rank": rank, "node": "node-a"},
            "last_step_timestamp_seconds": last_step,
            "thresholds": {"rank_lag_seconds": 60.0},
            "progress_ratio": 0.5,
            "loss_history": [],
        }

    doc = {"time": 2000.0, "runs": [run("0", 1990), run("1", 1700), run("2", 1985)]}
    (row,) = rows_from_exporter(doc)
    assert row.stuck_rank.startswith(
        "rank 1 (pod llm-1 on node-a) stopped 4m50s before the newest rank"
    )
    assert "└ stuck: rank 1" in render([row], width=120)
    doc["runs"][1]["last_step_timestamp_seconds"] = 1950  # within its 60 s
    (row,) = rows_from_exporter(doc)
    assert row.stuck_rank == "" and "stuck" not in render([row], width=120)
