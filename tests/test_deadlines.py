"""Deadlines (#57): the kill deadlines Kubernetes states, read from each kind's own field as
its API reference names it (tests/fixtures/deadlines/, one object per kind, cited), through
the owner chain and the fake API server to ``/metrics``; and the chance of missing a
deadline, from the ETA's band, checked against the ETA corpus."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.core.deadlines import (
    KILL_FIELDS,
    kept,
    kill_deadline,
    miss_probabilities,
    miss_probability,
)
from exporter.core.model import ProgressReport, RunKey, RunMeta
from exporter.core.tracker import Tracker
from exporter.kubernetes.pods import training_pod

from .conftest import FakeClock, http
from .fakekube import FakeKube
from .kube import KF, T_START_TS, TRAINJOB, pod, put_pod, refs_of, registry_of, wait

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "deadlines"
CASES = sorted(FIXTURES.glob("*.json"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_each_kinds_kill_deadline_is_read_from_its_own_field(path: Path) -> None:
    """Each object as its API serves it: the deadline its reference states, or none (a
    suspended Job has no start; a JobSet states none of its own); and what an owner cache
    keeps of it gives the same answer."""
    case = json.loads(path.read_text())
    obj = case["object"]
    assert case["reference"].startswith("http") or case["reference"].startswith("as ")
    assert kill_deadline(case["kind"], obj) == case["kill_deadline"]
    assert kill_deadline(case["kind"], kept(case["kind"], obj)) == case["kill_deadline"]


def test_every_kind_with_a_field_has_a_fixture() -> None:
    kinds = {json.loads(p.read_text())["kind"] for p in CASES}
    kubeflow_v1 = {"TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob"}  # PyTorchJob's field
    assert set(KILL_FIELDS) - kubeflow_v1 <= kinds


@pytest.mark.parametrize(
    "seconds", [0, -5, True, 1.5, "3600", None, 10**12], ids=lambda v: repr(v)[:12]
)
def test_an_invalid_active_deadline_is_no_deadline(seconds: Any) -> None:
    obj = {
        "spec": {"activeDeadlineSeconds": seconds},
        "status": {"startTime": "2026-11-29T10:00:00Z"},
    }
    assert kill_deadline("Job", obj) is None
    bad_start = {"spec": {"activeDeadlineSeconds": 60}, "status": {"startTime": "yesterday"}}
    assert kill_deadline("Job", bad_start) is None


def test_the_band_maps_to_the_probability_exactly() -> None:
    """0.5 at the ETA, 1.44 % at the upper bound (where the corpus' truth lands past it),
    0.9 at the lower bound, 1 once passed."""
    eta, lower, upper = 1000.0, 600.0, 1800.0
    assert miss_probability(eta, lower, upper, eta) == pytest.approx(0.5)
    assert miss_probability(eta, lower, upper, upper) == pytest.approx(0.0143, abs=1e-4)
    assert miss_probability(eta, lower, upper, lower) == pytest.approx(0.9)
    assert miss_probability(eta, lower, upper, 0) == 1.0
    assert miss_probability(eta, lower, upper, -5) == 1.0
    assert miss_probability(eta, eta, eta, eta * 1.01) == 0.0  # no width: a step
    assert miss_probability(eta, eta, eta, eta * 0.99) == 1.0


@given(
    eta=st.floats(1, 1e7),
    low=st.floats(0.05, 1.0),
    high=st.floats(1.0, 20.0),
    a=st.floats(1, 1e8),
    b=st.floats(1, 1e8),
)
def test_the_probability_falls_as_the_deadline_moves_away(
    eta: float, low: float, high: float, a: float, b: float
) -> None:
    p_a = miss_probability(eta, eta * low, eta * high, a)
    p_b = miss_probability(eta, eta * low, eta * high, b)
    assert 0.0 <= p_a <= 1.0 and math.isfinite(p_a)
    if a < b:
        assert p_a >= p_b


def test_a_run_with_both_deadlines_states_both_chances() -> None:
    tracker = Tracker()
    key = RunKey("ml", "llm-0", "llm")
    t0 = 1_800_000_000.0
    meta = RunMeta(source="push", kill_deadline_timestamp=t0 + 150, kill_deadline_kind="TrainJob")
    for i in range(60):
        report = ProgressReport(step=i * 10, max_steps=2000, deadline_timestamp=t0 + 10_000)
        tracker.apply(key, report, t0 + i, meta)
    (snap,) = tracker.snapshot(t0 + 60)
    chances = dict(snap.deadline_miss_probability)
    # ~140 s left at 10 steps/s; the kill comes in 90 s, the user's deadline in hours.
    assert chances["kill"] > 0.9 and chances["user"] < 0.01
    assert snap.kill_deadline_timestamp == t0 + 150
    assert miss_probabilities(None, 1, 2, t0, (("user", t0 + 5),)) == ()


def test_the_earliest_of_pod_and_owners_kills_first() -> None:
    p = pod("ml", "llm-node-0-0", TRAINJOB)
    p["spec"]["activeDeadlineSeconds"] = 7200  # from the pod's startTime, T_START
    info = training_pod(p, refs_of(p))
    assert info is not None and not hasattr(info, "reason")
    assert (info.kill_deadline_timestamp, info.kill_deadline_kind) == (T_START_TS + 7200, "Pod")  # type: ignore[union-attr]
    del p["spec"]["activeDeadlineSeconds"]
    info = training_pod(p, refs_of(p))
    assert info.kill_deadline_timestamp is None and info.kill_deadline_kind == ""  # type: ignore[union-attr]


def test_kill_deadlines_reach_metrics_through_the_fake_api(
    kube: FakeKube, k8s_exporter: Any
) -> None:
    """A TrainJob with activeDeadlineSeconds from its creation and its Job with a nearer one
    from its startTime, in the fake API server: the exporter reads both through the owner
    chain and exports the Job's, the nearer, with its kind."""
    created, started = "2026-11-29T09:58:00Z", "2026-11-29T09:59:00Z"
    kube.put(
        "trainer.kubeflow.org/v1alpha1",
        "trainjobs",
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {
                "namespace": "ml",
                "name": "llm",
                "uid": "uid-trainjob-llm",
                "creationTimestamp": created,
            },
            "spec": {"activeDeadlineSeconds": 86400, "runtimeRef": {"name": "torch"}},
        },
    )
    put_pod(kube, pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1"))
    job = kube.objects[("batch/v1", "jobs")][("ml", "llm-node-0")]
    job["spec"] = {"activeDeadlineSeconds": 3600}
    job["status"] = {"startTime": started}
    exp = k8s_exporter(FakeClock(T_START_TS + 60))
    wait(lambda: len(registry_of(exp)) == 1)
    info = registry_of(exp).get("ml", "llm-0")
    assert (info.kill_deadline_timestamp, info.kill_deadline_kind) == (
        T_START_TS - 60 + 3600,
        "Job",
    )
    body = json.dumps({"trainerStatus": {"metrics": [{"name": "current_step", "value": "5"}]}})
    assert http("POST", exp.url + KF.format(ns="ml", name="llm"), body.encode())[0] == 200
    status, text = http("GET", exp.url + "/metrics")
    assert status == 200
    line = next(
        ln for ln in text.decode().splitlines()
        if ln.startswith("training_kill_deadline_timestamp_seconds{")
    )  # fmt: skip
    assert 'kind="Job"' in line and float(line.rsplit(" ", 1)[1]) == T_START_TS - 60 + 3600


@pytest.mark.slow
def test_the_miss_probability_is_calibrated_on_the_held_out_runs() -> None:
    """bench.deadline_calibration over the ETA corpus' held-out runs: every decile within
    10 points of its miss rate (the goal, docs/eta.md; measured 2026-12-05: 6.6 at worst),
    and the high end's constant is the share of the corpus' truth that fell past it (so
    a change of the estimator that moves it shows here, not as a silent drift)."""
    from bench.deadline_calibration import measure, tails
    from bench.eta_accuracy import corpus_runs
    from exporter.core.deadlines import Z_UPPER_END

    rows = [d for d in measure() if d.count]
    assert len(rows) == 10 and sum(d.count for d in rows) > 50_000
    for d in rows:
        gap = 100 * (d.missed - d.said)
        assert -10 <= gap <= 10, (d.low, d.said, d.missed)
    assert tails(corpus_runs()).z_upper == pytest.approx(Z_UPPER_END, abs=0.05)


def test_a_save_is_asked_once_before_the_kill_leaving_the_runs_own_save_time() -> None:
    """A run that reports its saves take 600 s, killed at t0 + 3000: the checkpoint
    directive comes once, from kill - 600 - 120 s, not before; a run whose band ends before
    the kill is never asked; one that never said how long it saves gets 300 s."""
    from exporter.core.directives import KILL_MARGIN_SECONDS, Facts, reasons, save_before_kill

    t0 = 1_800_000_000.0
    kill = t0 + 3000
    base = Facts(None, None, False, None, kill_deadline_timestamp=kill, save_seconds=600.0)
    first = kill - 600 - KILL_MARGIN_SECONDS
    assert not save_before_kill(Facts(**{**base.__dict__, "now": first - 1}))
    assert f"kill_deadline:{kill!r}" in reasons(Facts(**{**base.__dict__, "now": first}))
    assert not save_before_kill(Facts(**{**base.__dict__, "now": kill}))  # too late: killed
    sure = Facts(**{**base.__dict__, "now": first, "eta_upper_timestamp": kill - 10})
    assert not save_before_kill(sure)
    unsaid = Facts(**{**base.__dict__, "save_seconds": None, "now": kill - 300 - 120})
    assert save_before_kill(unsaid) and not save_before_kill(
        Facts(**{**unsaid.__dict__, "now": kill - 421})
    )

    # Through the tracker and a native push's answer: once, with the run's own save time.
    tracker = Tracker()
    key = RunKey("ml", "llm-0", "llm")
    meta = RunMeta(source="push", kill_deadline_timestamp=kill, kill_deadline_kind="Job")
    said: list[float] = []
    for i in range(0, 3000, 10):
        report = ProgressReport(
            step=i, max_steps=100_000, checkpoint_step=0, checkpoint_timestamp=t0,
            checkpoint_seconds=600.0,
        )  # fmt: skip
        tracker.apply(key, report, t0 + i, meta)
        if "checkpoint" in tracker.directives(key, t0 + i):
            said.append(i)
    assert said == [int(first - t0)]


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_each_kinds_node_count_is_read_from_its_spec(path: Path) -> None:
    """Where a fixture states the nodes its spec runs on, node_count reads them, also from
    what the owner cache keeps (pod templates left out)."""
    from exporter.core.scaling import node_count
    from exporter.core.workloads import kept_fields

    case = json.loads(path.read_text())
    if "nodes" not in case:
        return
    kind, obj = case["kind"], case["object"]
    assert node_count(kind, obj) == case["nodes"]
    slim = kept_fields(kind, obj)
    assert node_count(kind, slim) == case["nodes"]
    assert "containers" not in json.dumps(slim)  # the cache holds no pod template


def test_fewest_nodes_follow_the_pace_per_node_and_the_restart() -> None:
    """An hour left at 2 nodes, a deadline in 40 minutes: more nodes make it (paying the
    restart), fewer never; a deadline in 3 hours leaves headroom (1 node makes it)."""
    from exporter.core.scaling import RESTART_SECONDS, eta_at, exponent_from_history, fewest_units

    eta, lower, upper = 3600.0, 3000.0, 4300.0
    needed = fewest_units(eta, lower, upper, 2400, 2, 0.9, 0.8)
    assert needed is not None and needed > 2
    e, lo, hi = eta_at(eta, lower, upper, 2, needed, 0.9)
    assert e >= RESTART_SECONDS and 1 - miss_probability(e, lo, hi, 2400) >= 0.8
    e, lo, hi = eta_at(eta, lower, upper, 2, needed - 1, 0.9)
    assert 1 - miss_probability(e, lo, hi, 2400) < 0.8
    assert fewest_units(eta, lower, upper, 3 * 3600, 2, 0.9, 0.8) == 1
    assert fewest_units(eta, lower, upper, 60, 2, 0.9, 0.8) is None  # out of reach
    # The run's own sizes: 2 nodes at 1 step/s, 4 nodes at 1.8: 0.848.
    assert exponent_from_history([(2, 1.0), (4, 1.8)]) == pytest.approx(math.log(1.8) / math.log(2))
    assert exponent_from_history([(2, 1.0), (2, 1.1)]) is None
    assert exponent_from_history([(2, 1.0), (4, 9.0)]) == 1.0  # superlinear: kept at 1


def test_a_run_states_the_nodes_its_deadline_needs_with_the_basis() -> None:
    """Through the tracker: a run on 2 nodes that will miss its deadline at this pace needs
    more, on the default scaling; after an attempt at 4 nodes ran 1.8x as fast, the basis
    is its history; a run with no node count is sized in GPUs; /metrics shows the series."""
    from exporter.views.collector import iter_runs_text

    tracker = Tracker()
    t0 = 1_800_000_000.0
    key = RunKey("ml", "llm-0", "llm")
    meta = RunMeta(source="push", nodes=2, gpus=16, deadline_timestamp=t0 + 900, pod_uid="a")
    for i in range(
        120
    ):  # 2 steps/s, 2,000 steps: ~ 1,000 s left at t0 + 119, 781 s to the deadline
        tracker.apply(key, ProgressReport(step=2 * i, max_steps=2240), t0 + i, meta)
    (snap,) = tracker.snapshot(t0 + 119)
    assert snap.size == 2 and snap.size_unit == "nodes" and snap.scaling_basis == "default"
    needed = dict(snap.deadline_size_needed)["user"]
    assert needed >= 3, snap
    text = "".join(iter_runs_text([snap]))
    assert 'training_deadline_nodes_needed{basis="default",deadline="user"' in text
    assert "training_nodes{" in text and "training_deadline_gpus_needed{" not in text

    # A second attempt (a new pod) on 4 nodes runs 1.8x as fast: the exponent is its own.
    bigger = RunMeta(source="push", nodes=4, gpus=32, deadline_timestamp=t0 + 900, pod_uid="b")
    for i in range(120):
        step = 238 + round(3.6 * i)
        tracker.apply(key, ProgressReport(step=step, max_steps=2240), t0 + 130 + i, bigger)
    (snap,) = [s for s in tracker.snapshot(t0 + 249) if s.key == key]
    assert snap.attempt == 2 and snap.size == 4, snap
    assert snap.scaling_basis == "history", snap

    bare = RunKey("ml", "solo", "solo")
    solo = RunMeta(source="push", gpus=4, deadline_timestamp=t0 + 100_000)
    for i in range(120):
        tracker.apply(bare, ProgressReport(step=2 * i, max_steps=2240), t0 + i, solo)
    (one,) = [s for s in tracker.snapshot(t0 + 119) if s.key == bare]
    assert one.size_unit == "gpus" and dict(one.deadline_size_needed)["user"] == 1
    assert "training_deadline_gpus_needed{" in "".join(iter_runs_text([one]))


def test_the_deadline_probability_setting_is_bounded_and_reaches_the_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from exporter.daemon.config import ConfigError, load

    monkeypatch.setenv("TPE_DEADLINE_PROBABILITY", "0.3")
    with pytest.raises(ConfigError, match=r"deadline_probability must be from 0\.5 to 0\.99"):
        load({})
    monkeypatch.setenv("TPE_DEADLINE_PROBABILITY", "0.95")
    assert load({}).tracker_config().run.deadline_probability == 0.95


def test_the_views_show_the_deadlines_their_chance_and_the_nodes_needed() -> None:
    """The detail page, ``top`` (from the exporter's JSON) and ``kubectl progress`` (from a
    TrainJob with activeDeadlineSeconds) all say when, how likely missed, what size makes it."""
    from exporter.commands.kubectl_progress import render, trainjob_row
    from exporter.commands.top import render as top_render
    from exporter.commands.toprows import rows_from_exporter
    from exporter.core.model import json_safe
    from exporter.views.api import runs_document
    from exporter.views.runpage import run_detail

    tracker = Tracker()
    t0 = 1_800_000_000.0
    key = RunKey("ml", "llm-0", "llm")
    meta = RunMeta(
        source="push", nodes=2, gpus=16, deadline_timestamp=t0 + 900,
        kill_deadline_timestamp=t0 + 5000, kill_deadline_kind="Job",
    )  # fmt: skip
    for i in range(120):
        tracker.apply(key, ProgressReport(step=2 * i, max_steps=2240), t0 + i, meta)
    now = t0 + 119
    (snap,) = tracker.snapshot(now)
    page = run_detail(snap, now)
    assert "deadline in 13m" in page and "% chance to miss" in page and "nodes make it" in page
    assert "kill (Job) in 1h21m, 0% chance to miss, 1 node makes it" in page, page
    doc = json_safe(runs_document(tracker.snapshot(now), now))
    (row,) = rows_from_exporter(doc)
    assert [d.kind for d in row.deadlines] == ["user", "kill"]
    text = top_render([row], width=200, now=now)
    assert "└ deadline in 13m" in text and "kill (Job) in 1h21m" in text, text

    trainjob = {
        "metadata": {"namespace": "ml", "name": "llm", "creationTimestamp": "2026-11-29T09:58:00Z"},
        "spec": {"activeDeadlineSeconds": 10**6},
        "status": {"trainerStatus": {"progressPercentage": 40, "estimatedRemainingSeconds": 600}},
    }
    tj_row, age = trainjob_row(trainjob, T_START_TS)
    out = render([(tj_row, age)], all_namespaces=False)
    assert "DEADLINE" in out.splitlines()[0] and "kill:" in out.splitlines()[1], out


def test_the_restart_cost_of_a_resize_is_a_setting_that_moves_the_nodes_needed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A short job behind its deadline: with the default 5-minute restart no size makes it;
    with a 5 s restart (resize_restart_seconds), more nodes do."""
    from exporter.core.tracker import TrackerConfig
    from exporter.daemon.config import load

    monkeypatch.setenv("TPE_RESIZE_RESTART_SECONDS", "5s")
    assert load({}).tracker_config().run.resize_restart_seconds == 5.0
    t0 = 1_800_000_000.0
    key = RunKey("ml", "e-0", "e")
    meta = RunMeta(source="push", nodes=2, deadline_timestamp=t0 + 150)
    needed = {}
    for restart in (300.0, 5.0):
        tracker = Tracker(TrackerConfig(resize_restart_seconds=restart))
        for i in range(30):  # 10 steps/s, 2,000 steps: 170 s left at t0 + 29, 121 s to go
            tracker.apply(key, ProgressReport(step=10 * i, max_steps=2000), t0 + i, meta)
        (snap,) = tracker.snapshot(t0 + 29)
        needed[restart] = dict(snap.deadline_size_needed).get("user")
    assert needed[300.0] is None and needed[5.0] is not None and needed[5.0] > 2, needed


@given(
    eta=st.floats(1, 1e6),
    low=st.floats(0.3, 1.0),
    high=st.floats(1.0, 4.0),
    left=st.floats(1, 2e6),
    current=st.integers(1, 64),
    exponent=st.floats(0.3, 1.0),
    level=st.floats(0.5, 0.99),
    restart=st.floats(0, 3600),
)
def test_the_bisection_finds_what_trying_every_size_finds(
    eta: float, low: float, high: float, left: float, current: int,
    exponent: float, level: float, restart: float,
) -> None:  # fmt: skip
    """fewest_units bisects each side of the current size; trying every size in order,
    as it once did, gives the same answer."""
    from exporter.core.scaling import MAX_FACTOR, eta_at, fewest_units

    lower, upper = eta * low, eta * high
    linear = None
    for size in range(1, current * MAX_FACTOR + 1):
        e, lo, hi = eta_at(lower=lower, upper=upper, eta=eta, current=current, size=size,
                           exponent=exponent, restart=restart)  # fmt: skip
        if 1.0 - miss_probability(e, lo, hi, left) >= level:
            linear = size
            break
    found = fewest_units(eta, lower, upper, left, current, exponent, level, restart=restart)
    assert found == linear
