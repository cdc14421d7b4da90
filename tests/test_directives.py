"""Checkpoint directives: when the exporter tells a run to save, that it tells it once per
reason, in the native push's answer only, and that the reporter turns it into
``should_checkpoint()``. (A real Transformers run saving on it is in
tests/test_integrations_ml.py.)"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

import pytest
from training_progress_reporter import ProgressReporter
from training_progress_reporter.channels import directives_of

from exporter.core.directives import Facts, due, reasons, remembered
from exporter.core.model import ProgressReport, RunKey, RunMeta
from exporter.core.tracker import Tracker
from exporter.kubernetes.pods import training_pod

from .conftest import T0, http
from .kube import refs_of

KEY = RunKey("ml", "llm-0", "llm")


def read(p: dict[str, Any]) -> Any:
    """``training_pod`` with the owners the pod's labels imply (as discovery reads them)."""
    return training_pod(p, refs_of(p))


def test_reasons_are_the_deadline_a_deletion_and_each_new_request() -> None:
    none = Facts(
        eta_lower_timestamp=T0 + 100, deadline_timestamp=T0 + 200, deleting=False, request=None
    )
    assert reasons(none) == frozenset()
    late = replace(none, deadline_timestamp=T0 + 50)
    assert reasons(late) == {f"deadline:{T0 + 50!r}"}
    assert reasons(replace(none, deleting=True)) == {"deleting"}
    assert reasons(replace(none, request="1")) == {"requested:pod:1"}
    assert reasons(replace(none, job_request="1")) == {"requested:job:1"}
    assert reasons(replace(none, draining=True)) == {"draining"}
    assert due(frozenset({"deadline:1.0"}), frozenset())
    assert not due(frozenset({"deadline:1.0"}), frozenset({"deadline:1.0"}))
    assert due(frozenset({"requested:pod:2"}), frozenset({"requested:pod:1"}))


def test_a_forecast_wavering_across_the_deadline_tells_the_run_once() -> None:
    """The flake CI caught (a real Lightning run saved twice): a push 0.01 s after the
    save's push made the ETA band's lower end dip under the deadline for one answer, and
    the next put it back over: the same deadline, told again. A reason about one event
    (this deadline) is remembered while the event lasts; a new deadline is a new reason;
    the cordon and the risk, which an uncordon or a checkpoint end, are told again when
    they start again; and what is remembered stays bounded by the run's current events."""
    late = Facts(T0 + 100, T0 + 50, deleting=False, request=None)
    early = replace(late, eta_lower_timestamp=T0 + 10)  # the band dips under the deadline
    delivered: frozenset[str] = frozenset()
    told = []
    for f in (late, early, late, early, late):
        now = reasons(f)
        told.append(due(now, delivered))
        delivered = remembered(now, delivered, f)
    assert told == [True, False, False, False, False]
    moved = replace(late, deadline_timestamp=T0 + 60)  # someone moved the deadline
    assert due(reasons(moved), delivered)
    # A cordon that is lifted and comes back is told again; so is a risk after a save.
    for field, on, off in (("draining", True, False), ("at_risk_gpu_seconds", 10.0, 0.0)):
        base = replace(early, risk_threshold_gpu_seconds=5.0)
        start = replace(base, **{field: on})
        delivered = remembered(reasons(start), frozenset(), start)
        ended = replace(base, **{field: off})
        delivered = remembered(reasons(ended), delivered, ended)
        assert due(reasons(start), delivered), field
    # A report sending a new deadline on every push does not grow what is remembered.
    delivered = frozenset()
    for i in range(1000):
        f = replace(late, deadline_timestamp=T0 + 50 - i)
        delivered = remembered(reasons(f), delivered, f)
    assert len(delivered) == 1


def test_the_tracker_tells_a_wavering_deadline_once() -> None:
    """The same through the tracker, in the Lightning run's own rhythm: a push every 0.3 s
    of 5 steps, 100 steps in all, due 2 s from the start; the push told to save is followed
    0.01 s later by the save's own push (one step on), whose near-instant pace pulls the
    band's lower end under the deadline for one answer. One ``checkpoint`` in all."""
    tracker = Tracker()
    told, t, step = 0, T0, 0
    for i in range(30):
        t, step = t + 0.3, step + 5
        pushes = [(t, step), (t + 0.01, step + 1)] if i == 1 else [(t, step)]
        for at, value in pushes:
            report = ProgressReport(step=value, max_steps=100, deadline_timestamp=T0 + 2.0)
            ok, said = tracker.push(KEY, report, at)
            assert ok
            told += said.count("checkpoint")
        step = pushes[-1][1]
    assert told == 1


def steady(tracker: Tracker, until: int, deadline: float | None = None) -> None:
    for i in range(until):
        tracker.apply(
            KEY, ProgressReport(step=i * 10, max_steps=100_000, deadline_timestamp=deadline), T0 + i
        )


def test_tracker_tells_each_reason_once() -> None:
    tracker = Tracker()
    steady(tracker, 5, deadline=T0 + 10_000_000)
    assert tracker.directives(KEY, T0 + 5) == ()
    # The deadline moves before the predicted completion: told once.
    tracker.apply(KEY, ProgressReport(step=60, deadline_timestamp=T0 + 60), T0 + 6)
    assert tracker.directives(KEY, T0 + 6) == ("checkpoint",)
    assert tracker.directives(KEY, T0 + 7) == ()
    # Its pod is being deleted: a new reason.
    tracker.set_meta(KEY, RunMeta(deleting=True), T0 + 8)
    assert tracker.directives(KEY, T0 + 8) == ("checkpoint",)
    assert tracker.directives(KEY, T0 + 9) == ()
    # Someone annotates the job, then annotates it again with a new value.
    tracker.set_meta(KEY, RunMeta(deleting=True, checkpoint_request="a"), T0 + 10)
    assert tracker.directives(KEY, T0 + 10) == ("checkpoint",)
    assert tracker.directives(KEY, T0 + 11) == ()
    tracker.set_meta(KEY, RunMeta(deleting=True, checkpoint_request="b"), T0 + 12)
    assert tracker.directives(KEY, T0 + 12) == ("checkpoint",)
    assert tracker.directives(RunKey("ml", "other", "other"), T0) == ()


def test_a_push_is_merged_judged_and_answered_in_one_hold_of_the_lock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A push takes the tracker's lock once and the run is judged once after its merge
    (for its timeline, its directives and its stacks request alike); the answer is what a
    separate ``directives`` call would have said."""
    import threading

    import exporter.core.run.view as view

    class CountingLock:
        def __init__(self) -> None:
            self.inner, self.holds = threading.Lock(), 0

        def __enter__(self) -> None:
            self.inner.acquire()
            self.holds += 1

        def __exit__(self, *exc: object) -> None:
            self.inner.release()

    judged = []
    real_judge = view.judge

    def counting_judge(*args: Any) -> Any:
        judged.append(args)
        return real_judge(*args)

    tracker, twin = Tracker(), Tracker()
    steady(tracker, 5, deadline=T0 + 10_000_000)
    steady(twin, 5, deadline=T0 + 10_000_000)
    lock = CountingLock()
    tracker._lock = lock  # type: ignore[assignment]
    monkeypatch.setattr("exporter.core.tracker.judge", counting_judge)
    late = ProgressReport(step=60, deadline_timestamp=T0 + 60)
    ok, told = tracker.push(KEY, late, T0 + 6)
    assert ok and told == ("checkpoint",) and lock.holds == 1 and len(judged) == 1
    twin.apply(KEY, late, T0 + 6)
    assert twin.directives(KEY, T0 + 6) == told
    # A source that cannot answer is not judged for an answer.
    judged.clear()
    assert tracker.push(KEY, ProgressReport(step=61), T0 + 6.5, answer=False) == (True, ())
    assert len(judged) <= 1  # only if the timeline's row is due


def test_pod_deletion_and_annotation_reach_the_run_meta() -> None:
    pod = {
        "metadata": {
            "name": "llm-0",
            "namespace": "ml",
            "labels": {"batch.kubernetes.io/job-name": "llm"},
            "annotations": {"training-progress.io/checkpoint": "2026-11-30T10:00"},
            "deletionTimestamp": "2026-11-30T10:01:00Z",
        },
        "spec": {"containers": [{"name": "train"}]},
        "status": {"phase": "Running"},
    }
    info = read(pod)
    assert info is not None and info.deleting
    assert info.checkpoint_request == "2026-11-30T10:00"


def test_native_answer_carries_directives_and_kubeflow_answer_does_not(
    exporter_factory: Any, clock: Any
) -> None:
    exp = exporter_factory()
    url = exp.url + "/api/v1/namespaces/ml/runs/llm/report"
    answers = []
    for i in range(5):
        body = {"step": i * 10, "max_steps": 100_000, "deadline": T0 + 30}
        status, resp = http(
            "POST", url, json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        assert status == 200
        answers.append(json.loads(resp)["directives"])
        clock.advance(1)
    # No ETA before two step reports; then even its lower bound passes the deadline: told
    # once.
    assert answers == [[], ["checkpoint"], [], [], []]
    kf = exp.url + "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/llm/status"
    body = json.dumps({"trainerStatus": {"progressPercentage": 10}}).encode()
    status, resp = http("POST", kf, body, {"Content-Type": "application/json"})
    assert status == 200 and json.loads(resp) == {"trainerStatus": {"progressPercentage": 10}}


@pytest.mark.slow
def test_reporter_should_checkpoint_once_after_a_directive(
    exporter_factory: Any, clock: Any
) -> None:
    exp = exporter_factory()
    url = exp.url + "/api/v1/namespaces/ml/runs/llm/report"
    assert directives_of(b'{"status": "ok", "directives": ["checkpoint"]}') == ["checkpoint"]
    assert directives_of(b"not json") == [] and directives_of(b'{"directives": "x"}') == []
    reporter = ProgressReporter(
        total_steps=100_000,
        interval=0.05,
        heartbeat_seconds=0,
        deadline=T0 + 30,
        environ={"TPE_REPORT_URL": url},
    )
    try:
        for i in range(6):
            reporter.update(step=i * 10)
            time.sleep(0.3)  # the reporter sends it (every 0.05 s at most)
            clock.advance(1)
        assert reporter.should_checkpoint() is True
        assert reporter.should_checkpoint() is False  # once
    finally:
        reporter.close()


def test_a_deadline_calls_for_a_checkpoint_only_when_even_the_lower_bound_passes_it() -> None:
    """The ETA passing the deadline is not enough: the pace may still be within the band
    that makes it. Only a deadline before the band's optimistic end asks for a save."""
    for between in (True, False):
        tracker = Tracker()
        steady(tracker, 40)
        (snap,) = tracker.snapshot(T0 + 40)
        assert snap.eta_seconds is not None and snap.eta_lower_seconds is not None
        assert snap.eta_lower_seconds < snap.eta_seconds
        target = (
            (snap.eta_lower_seconds + snap.eta_seconds) / 2
            if between
            else 0.5 * (snap.eta_lower_seconds)
        )
        tracker.apply(KEY, ProgressReport(step=400, deadline_timestamp=T0 + 40 + target), T0 + 40)
        told = tracker.directives(KEY, T0 + 40)
        assert told == (() if between else ("checkpoint",)), between
