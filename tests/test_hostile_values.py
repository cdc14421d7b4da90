"""Hostile numbers: no value any source delivers takes a view down.

A count beyond 2^53 (a tqdm frame claiming 10^29 items, a step of 2^63 in a JSON line), a
float that is not finite where a count belongs, a negative GPU count: each is dropped and
counted where it enters the tracker (``model.within_bounds``), and every view (/metrics
in both formats, /api/v1/runs, the status page, a run's page) still answers with every run.
"""

from __future__ import annotations

import json
import logging
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from exporter.core.model import MAX_STEP, ProgressReport, RunKey, within_bounds
from exporter.core.tracker import Tracker

from .conftest import get_json, http

NOW = 1_800_000_000.0
HUGE_FRAME = " 16%|█▌        | 100000000000000000000000000000/50 [00:02<00:10,  3.98it/s]"


def views(exp: Any) -> dict[str, Any]:
    """Every view of the exporter, each checked to answer and to parse."""
    status, body = http("GET", exp.url + "/metrics")
    assert status == 200 and body, "an empty /metrics is a blank node"
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    status, om = http(
        "GET", exp.url + "/metrics", headers={"Accept": "application/openmetrics-text"}
    )
    assert status == 200 and om.rstrip().endswith(b"# EOF")
    runs = get_json(exp.url + "/api/v1/runs")["runs"]
    assert http("GET", exp.url + "/")[0] == 200
    for run in runs:
        assert http("GET", f"{exp.url}/runs/{run['namespace']}/{run['pod']}")[0] == 200
    return {"families": families, "runs": runs}


def drops(families: dict[str, Any]) -> dict[tuple[str, str], float]:
    return {
        (s.labels["source"], s.labels["reason"]): s.value
        for s in families["training_exporter_drops"].samples
    }


def test_a_tqdm_frame_of_ten_to_the_29_in_a_log_blanks_nothing(
    exporter_factory: Any, tmp_path: Path
) -> None:
    log = tmp_path / "train.log"
    good = tmp_path / "good.log"
    good.write_text(" 10%|█         | 5/50 [00:01<00:09,  4.00it/s]\n")
    log.write_text(" 10%|█         | 5/50 [00:01<00:09,  4.00it/s]\n")
    exp = exporter_factory(log_paths=(str(tmp_path / "*.log"),))
    exp.poll_once()
    with log.open("a") as fh:
        fh.write(HUGE_FRAME + "\n")
    exp.poll_once()
    seen = views(exp)
    steps = {s.labels["pod"]: s.value for s in seen["families"]["training_step"].samples}
    # The absurd count is dropped and counted; the run keeps its last good step, and the
    # other run is untouched.
    assert steps == {"train": 5, "good": 5}
    assert drops(seen["families"])[("log", "step_out_of_range")] >= 1
    unrenderable = seen["families"]["training_exporter_runs_unrenderable"].samples[0].value
    assert unrenderable == 0


def test_a_step_of_two_to_the_63_in_a_json_line_is_refused(
    exporter_factory: Any, tmp_path: Path
) -> None:
    log = tmp_path / "run.log"
    log.write_text(
        json.dumps({"step": 2**63, "max_steps": 10}) + "\n" + json.dumps({"step": 3}) + "\n"
    )
    exp = exporter_factory(log_paths=(str(log),))
    exp.poll_once()
    seen = views(exp)
    assert {s.value for s in seen["families"]["training_step"].samples} == {3}


def test_within_bounds_drops_each_absurd_value_with_its_reason() -> None:
    report = ProgressReport(
        step=10**29,
        max_steps=-1,
        epoch=float("inf"),
        gpus=-8.0,
        progress=3.0,
        loss=float("nan"),  # a NaN loss is the divergence signal: kept
        eval_loss=10**400,  # an integer no float holds
        step_samples=((NOW - 10, 4), (NOW - 5, 2**64)),
        metrics=(("ok", 1.0), ("bad", 10**400)),
        start_time=float("nan"),
    )
    bounded = within_bounds(report)
    r = bounded.report
    assert (r.step, r.max_steps, r.epoch, r.gpus, r.progress, r.eval_loss) == (None,) * 6
    assert r.loss != r.loss  # NaN kept
    assert r.step_samples == ((NOW - 10, 4),) and r.metrics == (("ok", 1.0),)
    assert r.start_time is None
    assert set(bounded.problems) >= {
        "step_out_of_range",
        "max_steps_out_of_range",
        "epoch_out_of_range",
        "invalid_gpus",
        "invalid_progress",
        "invalid_eval_loss",
        "invalid_metric_value",
        "invalid_start_time",
    }
    fine = ProgressReport(step=MAX_STEP, max_steps=MAX_STEP, loss=float("inf"))
    assert within_bounds(fine).report is fine and within_bounds(fine).problems == ()


def test_a_length_of_zero_is_no_length_from_any_source() -> None:
    """``max_steps: 0`` (a push before the trainer knows its length, a log's ``step 0 / 0``)
    is no run length: dropped without an error, so no ``training_max_steps 0`` reaches
    /metrics, whichever source said it; the rest of the report stands."""
    zero = ProgressReport(step=0, max_steps=0, max_epochs=0.0, loss=2.0)
    bounded = within_bounds(zero)
    assert (bounded.report.max_steps, bounded.report.max_epochs) == (None, None)
    assert (bounded.report.step, bounded.report.loss, bounded.problems) == (0, 2.0, ())
    tracker = Tracker()
    key = RunKey("ns", "pod-0", "job")
    from exporter.core.wire import parse_native

    tracker.apply(key, parse_native({"step": 3, "max_steps": 0, "loss": 1.5}, NOW).report, NOW)
    (snap,) = tracker.snapshot(NOW + 1)
    assert (snap.step, snap.max_steps, snap.loss) == (3, None, 1.5)


def test_a_run_the_tracker_cannot_read_is_left_out_and_counted() -> None:
    """A report the tracker cannot merge (a bug, a report built in code): the tracker counts
    it, still snapshots every other run, and says how many it left out. An absurd number is
    no such report: the tracker bounds every value itself, from any caller."""
    tracker = Tracker()
    tracker.apply(RunKey("ns", "good", "good"), ProgressReport(step=5, max_steps=10), NOW)
    problems: list[str] = []
    tracker.apply(RunKey("ns", "bad", "bad"), ProgressReport(step=1), NOW, None, problems.append)
    tracker.apply(
        RunKey("ns", "bad", "bad"), ProgressReport(step=2**64), NOW + 1, None, problems.append
    )
    assert problems == ["step_out_of_range"]
    shapeless = ProgressReport(step=3, step_samples=((NOW,),))  # type: ignore[arg-type]
    tracker.apply(RunKey("ns", "bad", "bad"), shapeless, NOW + 1, None, problems.append)
    assert problems == ["step_out_of_range", "merge_error"]
    snaps = tracker.snapshot(NOW + 2)
    assert {s.key.pod for s in snaps} == {"good", "bad"}  # the merge failed whole: no damage
    assert tracker.failed_last_pass == 0


_VALUE = st.one_of(
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
)
_FIELDS = (
    "step",
    "max_steps",
    "epoch",
    "max_epochs",
    "progress",
    "eta_seconds",
    "loss",
    "eval_loss",
    "learning_rate",
    "grad_norm",
    "gpus",
    "gpu_hours_budget",
    "deadline",
    "start_time",
    "timestamp",
    "model_flops_per_token",
    "gpu_model",
    "framework",
)
# Families whose samples may be NaN or ±Inf, as docs/metrics.md says: a diverged run's
# losses, learning rate and gradient norm, and what a run reports under its own names.
NON_FINITE_ALLOWED = {
    "training_loss",
    "training_eval_loss",
    "training_learning_rate",
    "training_grad_norm",
    "training_metric",
}
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def assert_every_series_sane(families: dict[str, Any]) -> None:
    """No series is NaN or ±Inf but where docs/metrics.md allows it, no label value holds
    a control character, and MFU is a ratio."""
    for family in families.values():
        for s in family.samples:
            if family.name not in NON_FINITE_ALLOWED:
                assert math.isfinite(s.value), (s.name, s.labels, s.value)
            for name, value in s.labels.items():
                assert not CONTROL.search(value), (s.name, name, value)
    if "training_model_flops_utilization" in families:
        for s in families["training_model_flops_utilization"].samples:
            assert 0 <= s.value <= 1, s


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@example(doc={"step": 2**63, "loss": 10**400}, n=10**29, total=50)
@example(doc={"gpus": -1, "epoch": float("inf")}, n=2**64, total=2**64)
# F8: a GPU count that is almost nothing made MFU +Inf.
@example(
    doc={
        "gpus": 1e-300,
        "model_flops_per_token": 6e9,
        "gpu_model": "NVIDIA H100 80GB HBM3",
        "metrics": {"tokens_per_second": 5000.0},
        "step": 10,
    },
    n=1,
    total=2,
)
@example(doc={"gpu_model": "H100\x1b[31m\r\x00", "framework": "x\ny"}, n=1, total=2)
# Integers past a float's range: float() and int(inf) raised in the push, the status file
# and the JSON log line readers (a 500, a file and a whole log poll lost).
@example(doc={"epoch": 10**400, "step": 10**400, "deadline": 10**400}, n=1, total=2)
@given(
    doc=st.dictionaries(st.sampled_from(_FIELDS), _VALUE, min_size=1, max_size=6),
    n=st.integers(min_value=0, max_value=2**70),
    total=st.integers(min_value=0, max_value=2**70),
)
@pytest.mark.slow
def test_hostile_values_through_every_source_into_every_view(
    exporter_factory: Any,
    tmp_path_factory: Any,
    caplog: pytest.LogCaptureFixture,
    doc: dict[str, Any],
    n: int,
    total: int,
) -> None:
    """The same hostile document through a push, a status file and a JSON log line, and a
    tqdm frame of hostile counts in a log: every view answers, and a healthy run beside
    them keeps its values."""
    caplog.clear()
    tmp = tmp_path_factory.mktemp("hostile")
    (tmp / "status").mkdir()
    (tmp / "status" / "filed.json").write_text(json.dumps(doc))
    (tmp / "status" / "healthy.json").write_text('{"step": 7, "max_steps": 70}')
    (tmp / "jsonl.log").write_text(json.dumps(doc) + "\n")
    frame = f" 16%|█▌        | {n}/{total} [00:02<00:10,  3.98it/s]"
    first = f" 10%|█         | 1/{total} [00:01<00:09,  1.00it/s]"
    (tmp / "bar.log").write_text(first + "\n")
    exp = exporter_factory(status_dir=str(tmp / "status"), log_paths=(str(tmp / "*.log"),))
    http(
        "POST",
        exp.url + "/api/v1/namespaces/standalone/runs/pushed/report",
        json.dumps(doc).encode(),
        {"Content-Type": "application/json"},
    )
    exp.poll_once()
    with (tmp / "bar.log").open("a") as fh:  # the same bar, on to a hostile count
        fh.write(frame + "\n")
    exp.poll_once()
    seen = views(exp)
    steps = {s.labels["pod"]: s.value for s in seen["families"]["training_step"].samples}
    assert steps["healthy"] == 7
    assert seen["families"]["training_exporter_runs_unrenderable"].samples[0].value == 0
    for family in seen["families"].values():
        for s in family.samples:
            if s.name in ("training_step", "training_max_steps"):
                assert 0 <= s.value <= MAX_STEP
    assert_every_series_sane(seen["families"])
    # A hostile value is dropped and counted, never an exception in a reader or a handler.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
