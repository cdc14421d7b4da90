"""The one classifier (exporter/core/states.py): each state's predicate, the order in which they
win, when a run entered its state, and the one table checked against docs, rules and
dashboards."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from pathlib import Path

import pytest

from exporter.core.states import (
    BLOCKS_COMPLETION,
    BY_NAME,
    NAMES,
    NO_ETA,
    STATES,
    TRAINING,
    Observation,
    classify,
    entered,
    reason,
    severity,
    state_code_promql,
)
from exporter.core.thresholds import Thresholds

from . import rulefiles

ROOT = Path(__file__).resolve().parent.parent
TH = Thresholds(
    stall_seconds=300,
    plateau_seconds=600,
    report_timeout_seconds=300,
    finished_grace_seconds=120,
    divergence_ratio=3,
    throughput_drop_ratio=0.6,
)
T = 1_000_000.0
# A healthy run seen at T: stepped and improved just now, reports flowing.
HEALTHY = Observation(
    now=T,
    first_report=T - 3600,
    last_report=T - 5,
    last_step=T - 5,
    last_improvement=T - 60,
    finished=False,
    progress=0.5,
    loss=1.0,
    eval_loss=None,
    best_train_loss=0.9,
    gpus=8,
    gone_since=None,
    steps_per_second=2.0,
    typical_steps_per_second=2.1,
)


def state(o: Observation, th: Thresholds = TH) -> str:
    return classify(o, th).state


def test_healthy_run_is_running() -> None:
    assert state(HEALTHY) == "running"


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        # The step froze 301 s ago while reports (a heartbeat) keep coming.
        ({"last_step": T - 301}, "stalled"),
        # Exactly at the threshold counts (>=), one second before does not.
        ({"last_step": T - 300}, "stalled"),
        ({"last_step": T - 299}, "running"),
        # Silent for longer than both thresholds with nothing to tell it lives: silent.
        ({"last_step": T - 400, "last_report": T - 400}, "silent"),
        # The same silence while its pod runs (Kubernetes mode): a hang, so stalled.
        ({"last_step": T - 400, "last_report": T - 400, "alive": True}, "stalled"),
        # Quiet for less than the report timeout: still running.
        ({"last_step": T - 200, "last_report": T - 200}, "running"),
        ({"loss": math.nan}, "diverged"),
        ({"loss": math.inf}, "diverged"),
        ({"eval_loss": math.nan}, "diverged"),
        ({"loss": 2.71, "best_train_loss": 0.9}, "diverged"),  # over 3 x 0.9
        ({"loss": 2.69, "best_train_loss": 0.9}, "running"),
        ({"loss": 5.0, "best_train_loss": -1.0}, "running"),  # a negative best cannot scale
        # The train loss against its own best, not the eval loss's: a real Keras run's
        # epoch-running train loss 0.0088 is 12x its validation best (0.00075) as both
        # converge, and under 3x its own best (0.0033).
        ({"loss": 0.0088, "best_train_loss": 0.0033, "eval_loss": 0.0007}, "running"),
        ({"loss": 0.0100, "best_train_loss": 0.0033, "eval_loss": 0.0007}, "diverged"),
        # An eval loss is held to nothing but being finite (overfitting is not divergence).
        ({"eval_loss": 5.0}, "running"),
        ({"last_improvement": T - 600}, "plateaued"),
        ({"last_improvement": T - 599}, "running"),
        ({"steps_per_second": 1.0, "typical_steps_per_second": 2.0}, "degraded"),
        ({"steps_per_second": 1.3, "typical_steps_per_second": 2.0}, "running"),
        ({"steps_per_second": 1.0, "typical_steps_per_second": None}, "running"),
        ({"last_step": None}, "waiting"),
        ({"finished": True, "last_step": T - 60}, "finished"),
        ({"progress": 1.0, "last_step": T - 60}, "finished"),  # step == max_steps, no flag
        ({"finished": True, "last_step": T - 121}, "finished-but-running"),
        ({"progress": 1.0, "last_step": T - 121}, "finished-but-running"),
        ({"finished": True, "last_step": T - 121, "gpus": 0}, "finished"),  # holds no GPU
        ({"finished": True, "last_step": T - 121, "gone_since": T - 1}, "finished"),
        ({"gone_since": T - 10}, "gone"),
        ({"alive": False}, "gone"),
        ({"gone_since": T - 10, "pod_failed": True}, "failed"),
    ],
)
def test_each_predicate(changes: dict[str, object], expected: str) -> None:
    assert state(replace(HEALTHY, **changes)) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        # A finished run is finished whatever else its last report said.
        ({"finished": True, "loss": math.nan, "last_step": T - 10}, "finished"),
        # A hang outranks the loss it had when it hung.
        ({"last_step": T - 400, "loss": math.nan}, "stalled"),
        ({"last_step": T - 400, "last_improvement": T - 9000}, "stalled"),
        # Diverged outranks a plateau and a slowdown.
        ({"loss": math.nan, "last_improvement": T - 9000}, "diverged"),
        ({"last_improvement": T - 9000, "steps_per_second": 0.1}, "plateaued"),
        # A gone run is gone, not stalled (its pod was deleted).
        ({"gone_since": T - 1, "last_step": T - 9000}, "gone"),
    ],
)
def test_precedence(changes: dict[str, object], expected: str) -> None:
    assert state(replace(HEALTHY, **changes)) == expected  # type: ignore[arg-type]


def test_onsets_of_time_based_states_are_exact() -> None:
    assert classify(replace(HEALTHY, last_step=T - 400), TH).onset == T - 100
    silent = replace(HEALTHY, last_step=T - 400, last_report=T - 350)
    assert classify(silent, TH).onset == T - 50
    assert classify(replace(HEALTHY, last_improvement=T - 700), TH).onset == T - 100
    lingering = replace(HEALTHY, finished=True, last_step=T - 200)
    assert classify(lingering, TH).onset == T - 80
    assert classify(replace(HEALTHY, loss=math.nan), TH).onset is None


def test_entered_keeps_since_while_the_state_holds() -> None:
    verdict = classify(replace(HEALTHY, last_step=T - 400), TH)
    # First seen stalled now, though it became stalled 100 s ago: the exact onset.
    assert entered("running", T - 3000, verdict, T) == T - 100
    # Still stalled later: unchanged.
    assert entered("stalled", T - 100, verdict, T + 50) == T - 100
    # A state cannot have begun before the previous one was last entered.
    assert entered("diverged", T - 20, verdict, T) == T - 20
    # No onset known (diverged): when first seen.
    assert entered("running", T - 3000, classify(replace(HEALTHY, loss=math.nan), TH), T) == T


def test_reasons_say_how_long_and_the_threshold() -> None:
    stalled = replace(HEALTHY, last_step=T - 42 * 60)
    th = replace(TH, stall_seconds=1800)
    assert reason("stalled", stalled, th) == "stalled for 42m (threshold 30m)"
    silent = replace(HEALTHY, last_report=T - 35 * 60, last_step=T - 35 * 60)
    assert reason("silent", silent, replace(th, report_timeout_seconds=1800)) == (
        "silent for 35m (timeout 30m)"
    )
    assert reason("diverged", replace(HEALTHY, loss=math.nan), TH) == "loss is not finite"
    assert reason("diverged", replace(HEALTHY, loss=5.0, best_train_loss=1.0), TH) == (
        "loss 5 > 3x best 1"
    )
    # Where the best is not known (top reading Prometheus, the other kind's best).
    unknown = replace(HEALTHY, loss=5.0, best_train_loss=None)
    assert reason("diverged", unknown, TH) == "loss above 3x its best"
    done = replace(HEALTHY, finished=True, last_step=T - 900)
    assert reason("finished-but-running", done, TH) == (
        "finished 15m ago, still holds 8 GPUs (grace 2m)"
    )
    slow = replace(HEALTHY, steps_per_second=1.0, typical_steps_per_second=2.5)
    assert reason("degraded", slow, TH) == ("1 steps/s, 40% of its typical 2.5 (threshold 60%)")


def test_table_is_in_order_of_urgency_with_unique_names_and_codes() -> None:
    codes = [s.code for s in STATES]
    assert codes == sorted(codes, reverse=True) and len(set(codes)) == len(codes)
    assert len(set(NAMES)) == len(NAMES)
    assert [severity(n) for n in NAMES] == list(range(len(NAMES)))
    assert severity("no-such-state") == len(NAMES)
    assert set(NO_ETA) | set(TRAINING) == set(NAMES)
    for d in STATES:
        assert re.fullmatch(r"#[0-9a-f]{6}", d.css_color), d
        assert re.fullmatch(r"[0-9;]+", d.ansi), d


def _rules() -> list[dict[str, object]]:
    return rulefiles.rules()


def test_each_state_alert_reads_exactly_its_state() -> None:
    alerts = {str(r["alert"]): str(r["expr"]) for r in _rules() if "alert" in r}
    for d in STATES:
        if not d.alert:
            continue
        expr = alerts[d.alert]
        assert re.findall(r'training_run_state\{state="([a-z-]+)"\}', expr) == [d.name], d.alert
    paged = {d.alert for d in STATES if d.alert}
    names = {d.name for d in STATES}
    for name, expr in alerts.items():
        if name in paged:
            continue
        # The others never reimplement a state: where they look at one (a stuck rank that
        # is not finished, idle GPUs of a run that is not stalled), they read the exporter's.
        uses = re.findall(r"training_run_state(\{[^}]*\})? == 1", expr)
        assert len(uses) == expr.count("training_run_state"), name
        for selector in uses:
            (pattern,) = re.findall(r'state=~"([a-z|-]+)"', selector)
            assert set(pattern.split("|")) <= names, (name, pattern)


def test_capacity_rules_and_dashboards_use_the_tables_sets() -> None:
    text = rulefiles.text()
    assert f'training_run_state{{state=~"{"|".join(BLOCKS_COMPLETION)}"}}' in text
    jobs = json.loads((ROOT / "grafana" / "dashboards" / "training-jobs.json").read_text())
    exprs = [t["expr"] for p in jobs["panels"] for t in p.get("targets", [])]
    assert any(f'state=~"{"|".join(TRAINING)}"' in e for e in exprs)
    selector = 'cluster=~"$cluster", namespace=~"$namespace"'
    assert any(e == state_code_promql(selector) for e in exprs)
    state_panel = next(p for p in jobs["panels"] if p["title"] == "Training jobs")
    mapping = next(
        prop["value"][0]["options"]
        for o in state_panel["fieldConfig"]["overrides"]
        if o["matcher"]["options"] == "State"
        for prop in o["properties"]
        if prop["id"] == "mappings"
    )
    assert {int(k): v["text"] for k, v in mapping.items()} == {d.code: d.label for d in STATES}


def test_docs_table_matches_the_code() -> None:
    text = (ROOT / "docs" / "metrics.md").read_text()
    body = text.split("<!-- states-table:", 1)[1].split("<!-- /states-table -->", 1)[0]
    rows = [line for line in body.splitlines() if line.startswith("| `")]
    expected = [f"| `{d.name}` | {d.code} | {d.alert} | {d.meaning} |" for d in STATES]
    assert rows == [line.replace("|  |", "| |") for line in expected]


def test_state_code_promql_reads_only_the_state_series() -> None:
    expr = state_code_promql('namespace="a"')
    assert set(re.findall(r"\b(training_[a-z_]+)\b", expr)) == {"training_run_state"}
    for d in STATES:
        assert f'training_run_state{{state="{d.name}", namespace="a"}} * {d.code}' in expr
    assert BY_NAME["stalled"].code > BY_NAME["running"].code > BY_NAME["gone"].code


def test_the_views_record_the_state_code_as_the_one_definition_writes_it() -> None:
    """alerts/views.rules.yaml holds the state code top and kubectl progress read: the
    expression exporter.core.states writes, not a copy that could drift from it."""
    import yaml

    from exporter.core.states import state_code_promql

    doc = yaml.safe_load((ROOT / "alerts" / "views.rules.yaml").read_text())
    (rule,) = [
        r
        for g in doc["groups"]
        for r in g["rules"]
        if r["record"] == "namespace_job_name:training_state_code:max"
    ]
    assert rule["expr"].strip() == state_code_promql("").strip()
