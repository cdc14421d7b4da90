"""Where the exporter meets OpenShift AI and Kubeflow Trainer, it speaks their shapes and
rules, checked against data copied from their source (tests/fixtures/upstream): the
``AnnotationStatus`` OpenShift AI's dashboard reads, the TrainJob CRD's status schema, how
their controller reads its annotations, and who owns a TrainJob's progress."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from exporter.core.model import ProgressReport, RunKey, RunMeta
from exporter.core.thresholds import Thresholds
from exporter.core.tracker import Tracker
from exporter.core.workloads import Ref
from exporter.kubernetes.pods import odh_poll_interval, training_pod
from exporter.sinks.writeback import annotation_status, duration_summary, trainer_status
from exporter.sources.http import HttpSource, HttpTarget

from .apischema import check, trainjob_status_schema
from .conftest import T0, FakeClock, get_json, http
from .fakekube import FakeKube
from .kube import T_START_TS, TRAINJOB, pod, put_pod, refs_of, trainjob_obj, wait, writes_by

UPSTREAM = Path(__file__).parent / "fixtures" / "upstream"
ODH = json.loads((UPSTREAM / "odh_annotation_status.json").read_text())
ANNOTATION = ODH["annotation"]
API = "trainer.kubeflow.org/v1alpha1"
LOGS = Path(__file__).parent / "fixtures" / "logs"
GO_RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)$")


def assert_odh_shape(doc: dict[str, Any]) -> None:
    """``doc`` decodes into their Go struct exactly: only its fields, each of its type (an
    integer for ``*int``: Go refuses 12.0 there), the fields without ``omitempty`` present."""
    fields = {f["json"]: f for f in ODH["fields"]}
    assert set(doc) <= set(fields), set(doc) - set(fields)
    for name, f in fields.items():
        if not f["omitempty"]:
            assert name in doc, name
        if name not in doc:
            continue
        value, go = doc[name], f["go"]
        if go.startswith("*") and value is None:
            assert not f["omitempty"], f"{name}: null where Go omits it"
            continue
        if go in ("*int", "int"):
            assert isinstance(value, int) and not isinstance(value, bool), (name, value)
        elif go == "*float64":
            assert isinstance(value, int | float) and not isinstance(value, bool), (name, value)
        elif go == "string":
            assert isinstance(value, str), (name, value)
        elif go.startswith("map[string]"):
            assert isinstance(value, dict) and value, (name, value)
            for k, v in value.items():
                assert isinstance(k, str) and isinstance(v, int | float), (name, k, v)
                assert v == v and abs(v) != float("inf"), (name, k, v)  # JSON has no NaN
    assert GO_RFC3339.match(doc["lastUpdatedTime"]), doc["lastUpdatedTime"]
    if "progressPercentage" in doc and doc["progressPercentage"] is not None:
        assert 0 <= doc["progressPercentage"] <= 100


@pytest.mark.parametrize(("seconds", "summary"), ODH["formatDurationSummary"]["cases"])
def test_remaining_time_summary_as_their_controller_formats_it(
    seconds: int | None, summary: str
) -> None:
    assert duration_summary(seconds) == summary


def _snapshot(reports: list[ProgressReport], meta: RunMeta | None = None) -> Any:
    tracker = Tracker()
    key = RunKey("ml", "llm-0", "llm")
    for i, report in enumerate(reports):
        tracker.apply(key, report, T0 + 10 * i, meta)
    (snap,) = tracker.snapshot(T0 + 10 * (len(reports) - 1))
    return snap


def test_annotation_status_has_their_fields_types_and_final_summaries() -> None:
    running = _snapshot(
        [
            ProgressReport(
                step=100 * (i + 1),
                max_steps=1000,
                epoch=0.5 * (i + 1),
                max_epochs=5.0,
                loss=0.25,
                learning_rate=1e-4,
                metrics=(("eval_accuracy", 0.9), ("tokens_per_second", 5e3)),
            )
            for i in range(4)
        ]
    )
    doc = {**annotation_status(running), "lastUpdatedTime": "2026-12-01T10:00:00Z"}
    assert_odh_shape(doc)
    assert doc["progressPercentage"] == 40 and doc["currentStep"] == 400
    assert doc["totalSteps"] == 1000 and doc["currentEpoch"] == 2.0 and doc["totalEpochs"] == 5
    assert doc["estimatedRemainingSeconds"] == 60
    assert doc["estimatedRemainingTimeSummary"] == "1 minute"
    assert doc["trainMetrics"] == {"loss": 0.25, "learning_rate": 1e-4, "tokens_per_second": 5e3}
    assert doc["evalMetrics"] == {"eval_accuracy": 0.9}
    done = _snapshot(
        [ProgressReport(step=500, max_steps=1000), ProgressReport(step=1000, final=True)]
    )
    final = {**annotation_status(done), "lastUpdatedTime": "2026-12-01T10:00:00Z"}
    assert_odh_shape(final)
    assert (final["estimatedRemainingSeconds"], final["estimatedRemainingTimeSummary"]) == (
        0,
        "complete",
    )
    assert final["progressPercentage"] == 100
    early = _snapshot(
        [ProgressReport(step=10, max_steps=1000), ProgressReport(step=20, final=True)]
    )
    assert annotation_status(early)["estimatedRemainingTimeSummary"] == "complete (early stopped)"
    failed = _snapshot(
        [ProgressReport(step=10, max_steps=100), ProgressReport(step=30, final=True)],
        RunMeta(pod_failed=True),
    )
    assert annotation_status(failed)["estimatedRemainingTimeSummary"] == "failed at 100%"
    # Nothing known of the progress: their non-omitempty field is there, null; a NaN loss
    # (divergence) is left out rather than written as JSON no Go decoder reads.
    unknown = _snapshot([ProgressReport(step=3, loss=float("nan"))])
    doc = {**annotation_status(unknown), "lastUpdatedTime": "2026-12-01T10:00:00Z"}
    assert_odh_shape(doc)
    assert doc["progressPercentage"] is None and "trainMetrics" not in doc
    json.dumps(doc, allow_nan=False)


def test_trainer_status_meets_the_crd_schema_at_its_limits() -> None:
    schema = trainjob_status_schema()
    for snap in (
        _snapshot([ProgressReport(step=1, max_steps=10**12), ProgressReport(step=2)]),
        _snapshot([ProgressReport(step=5, loss=float("inf"), metrics=(("acc", 0.5),))]),
        _snapshot([ProgressReport(step=50, max_steps=50, final=True)]),
    ):
        status = {
            "trainerStatus": {**trainer_status(snap), "lastUpdatedTime": "2026-12-01T10:00:00Z"}
        }
        assert check(status, schema) == ([], []), status
    # The validator can fail: what the API server would refuse, it refuses.
    bad = {"trainerStatus": {"progressPercentage": 101, "metrics": [{"name": "", "value": "1"}]}}
    errors, _ = check(bad, schema)
    assert len(errors) == 2
    assert check({"trainerStatus": {"progress": 1}}, schema)[1] == [".trainerStatus.progress"]


@pytest.mark.parametrize(("value", "seconds"), ODH["GetMetricsPollInterval"]["cases"])
def test_poll_interval_read_as_their_controller_reads_it(value: str, seconds: float) -> None:
    assert odh_poll_interval(value) == seconds


def test_a_trainjob_they_track_is_pulled_only_when_told_and_on_their_port() -> None:
    tracked = pod("ml", "llm-node-0", TRAINJOB, ip="10.0.0.9")
    refs = refs_of(tracked)
    for value, enabled in ODH["IsProgressionTrackingEnabled"]["cases"]:
        annotated = tuple(
            Ref(
                r.kind,
                r.api_version,
                r.name,
                r.uid,
                (
                    (
                        ("trainer.opendatahub.io/progression-tracking", value),
                        ("trainer.opendatahub.io/metrics-port", "8080"),
                        ("trainer.opendatahub.io/metrics-poll-interval", "45s"),
                    )
                    if r.kind == "TrainJob"
                    else ()
                ),
            )
            for r in refs
        )
        fenced = training_pod(tracked, annotated)
        told = training_pod(tracked, annotated, pull_fenced=True)
        assert fenced is not None and told is not None
        assert fenced.http_url is None  # their NetworkPolicy lets only their controller in
        if enabled:
            assert (told.http_url, told.http_interval) == ("http://10.0.0.9:8080/metrics", 45)
        else:
            assert told.http_url is None, value


def test_a_target_with_an_interval_is_pulled_that_often() -> None:
    from exporter.plumbing.ingest import Ingestor
    from exporter.plumbing.stats import ExporterStats

    now = [0.0]
    pulls: list[str] = []

    def fetch(url: str, timeout: float, max_bytes: int) -> bytes:
        pulls.append(url)
        return b'{"currentStep": 1}'

    targets = [
        HttpTarget(RunKey("ml", "a", "a"), "http://a/metrics", interval=45.0),
        HttpTarget(RunKey("ml", "b", "b"), "http://b/metrics"),
    ]
    ingestor = Ingestor(Tracker(), ExporterStats(), lambda: T0)
    source = HttpSource(lambda: targets, ingestor, fetch=fetch, monotonic=lambda: now[0])
    for second in range(0, 100, 5):
        now[0] = float(second)
        source.poll()
    source.close()
    assert pulls.count("http://a/metrics") == 3  # at 0, 45 and 90 s
    assert pulls.count("http://b/metrics") == 20  # every poll


def _apply(manager: str, body: dict[str, Any], status: bool, force: bool = False) -> None:
    """A write by another writer, through the real client (merge patch, or server-side
    apply with ``force``)."""
    from kubernetes import client, config

    api = client.CustomObjectsApi(config.new_client_from_config(os.environ["KUBECONFIG"]))
    call = (
        api.patch_namespaced_custom_object_status if status else api.patch_namespaced_custom_object
    )
    call("trainer.kubeflow.org", "v1alpha1", "ml", "trainjobs", "llm", body, field_manager=manager)


def _logs_only_job(
    kube: FakeKube, k8s_exporter: Any, tmp_path: Path, mode: str, **settings: Any
) -> Any:
    """A TrainJob whose rank-0 pod only printed what Transformers' Trainer prints (a real
    capture), read by an exporter writing back in ``mode``."""
    put_pod(kube, pod("ml", "llm-node-0", TRAINJOB, ip="10.0.0.9"))
    container = tmp_path / "pods" / "ml_llm-node-0_uid-llm-node-0" / "trainer"
    container.mkdir(parents=True)
    shutil.copy(LOGS / "transformers_trainer.cri.log", container / "0.log")
    clock = FakeClock(T_START_TS + 3600)
    exp = k8s_exporter(
        clock, log_root=str(tmp_path / "pods"), trainjob_status_writeback=mode, **settings
    )
    wait(lambda: exp.ready()[0] or exp.poll_once() is not None)
    exp.poll_once()
    exp.poll_once()
    return exp, clock


def test_openshift_ai_sees_a_logs_only_job_in_its_own_shape(
    kube: FakeKube, k8s_exporter: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from exporter.sinks import writeback

    monkeypatch.setattr(writeback, "MIN_INTERVAL", 0.0)
    kube.put(API, "trainjobs", trainjob_obj("ml", "llm"))
    exp, clock = _logs_only_job(kube, k8s_exporter, tmp_path, "annotation")
    (first, *_) = writes_by(kube, "/trainjobs/llm")
    doc = json.loads(first["metadata"]["annotations"][ANNOTATION])
    assert_odh_shape(doc)
    assert (doc["currentStep"], doc["totalSteps"]) == (60, 60)
    assert doc["currentEpoch"] == 1.875 and doc["trainMetrics"]["loss"] == 6.023
    assert doc["evalMetrics"]["eval_loss"] == 6.015
    # Quiet for the report timeout: finished, and their controller's "final status captured".
    clock.advance(Thresholds().report_timeout_seconds + 1)
    exp.poll_once()
    stored = kube.objects[(API, "trainjobs")][("ml", "llm")]
    final = json.loads(stored["metadata"]["annotations"][ANNOTATION])
    assert_odh_shape(final)
    assert (final["estimatedRemainingSeconds"], final["estimatedRemainingTimeSummary"]) == (
        0,
        "complete",
    )
    # Written with server-side apply as our field manager, and never read back as a report.
    managers = {e["manager"] for e in stored["metadata"]["managedFields"]}
    assert managers == {"training-progress-exporter"}
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert run["info"]["source"] == "log"


def test_every_status_write_meets_the_trainjob_crd(
    kube: FakeKube, k8s_exporter: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from exporter.sinks import writeback

    monkeypatch.setattr(writeback, "MIN_INTERVAL", 0.0)
    kube.put(API, "trainjobs", trainjob_obj("ml", "llm"))
    exp, clock = _logs_only_job(kube, k8s_exporter, tmp_path, "status")
    clock.advance(Thresholds().report_timeout_seconds + 1)
    exp.poll_once()
    writes = writes_by(kube, "/trainjobs/llm/status")
    assert writes
    for body in writes:
        assert check(body["status"], trainjob_status_schema()) == ([], [])
    stored = kube.objects[(API, "trainjobs")][("ml", "llm")]["status"]["trainerStatus"]
    assert stored["progressPercentage"] == 100 and stored["estimatedRemainingSeconds"] == 0
    # The stand-in refuses what the API server refuses: the checks above can fail.
    from kubernetes.client.exceptions import ApiException

    with pytest.raises(ApiException) as refused:
        _apply("someone", {"status": {"trainerStatus": {"progressPercentage": 101}}}, True)
    assert refused.value.status == 422


def test_their_controllers_annotation_is_read_and_never_overwritten(
    kube: FakeKube, k8s_exporter: Any, tmp_path: Path
) -> None:
    """OpenShift AI tracks the job (its controller pulls the pod and patches the annotation;
    its NetworkPolicy fences the pod): the exporter reads the annotation, pulls nothing, and
    its write-back leaves the annotation to their controller."""
    annotations = {"trainer.opendatahub.io/progression-tracking": "true"}
    kube.put(API, "trainjobs", trainjob_obj("ml", "llm", annotations=annotations))
    theirs = {
        "progressPercentage": 45,
        "estimatedRemainingSeconds": 9855,
        "estimatedRemainingTimeSummary": "2 hours 44 minutes",
        "currentStep": 4530,
        "totalSteps": 10000,
        "currentEpoch": 2.0,
        "totalEpochs": 5,
        "trainMetrics": {"loss": 0.234, "learning_rate": 5e-05, "throughput_samples_sec": 128.5},
        "evalMetrics": {"eval_accuracy": 0.89, "f1_score": 0.87},
        "lastUpdatedTime": datetime.fromtimestamp(T_START_TS + 3590).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    # Their controller's merge patch, under its own field manager.
    _apply("manager", {"metadata": {"annotations": {ANNOTATION: json.dumps(theirs)}}}, False)
    exp, _clock = _logs_only_job(kube, k8s_exporter, tmp_path, "annotation")
    from .kube import trainjob_source

    trainjob_source(exp)._next = 0.0  # its first poll may have come before the pod was known
    trainjob_source(exp).poll()
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert (run["step"], run["max_steps"], run["loss"]) == (4530, 10000, 0.234)
    assert run["metrics"]["eval_accuracy"] == 0.89 and run["metrics"]["eval_f1_score"] == 0.87
    assert not [p for m, p, _ in kube.writes if m == "PATCH" and "training-progress" in p]
    # Left alone either way: their fresh annotation wins over the log (a status the
    # process' own controller wrote 10 s ago), so a write-back that polls after it was read
    # has nothing of its own to write; one that saw the log's progress first finds their
    # writer and counts it. Which comes first depends on when the watch delivered the pod.
    skipped = b'reason="other_writer",source="writeback"} 1.0'
    exp.poll_once()
    source = get_json(exp.url + "/api/v1/runs")["runs"][0]["info"]["source"]
    assert source == "trainjob" or skipped in http("GET", exp.url + "/metrics")[1], source
    assert not [p for m, p, _ in kube.writes if m == "PATCH" and "training-progress" in p]
    stored = kube.objects[(API, "trainjobs")][("ml", "llm")]
    assert json.loads(stored["metadata"]["annotations"][ANNOTATION]) == theirs
    # Their final summary finishes the run.
    done = {**theirs, "progressPercentage": 100, "estimatedRemainingSeconds": 0}
    done["estimatedRemainingTimeSummary"] = "complete"
    _apply("manager", {"metadata": {"annotations": {ANNOTATION: json.dumps(done)}}}, False)
    trainjob_source(exp)._next = 0.0
    trainjob_source(exp).poll()
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert run["finished"]


@pytest.mark.slow
@pytest.mark.parametrize("age", [60.0, 7200.0])
def test_a_status_nobody_claims_is_left_alone_while_it_is_fresh(
    kube: FakeKube, k8s_exporter: Any, tmp_path: Path, age: float
) -> None:
    """No managedFields tell who wrote the job's status (an object put back from a backup):
    its lastUpdatedTime decides. Younger than the report timeout (30 min), another writer is
    active; older, the exporter may write."""
    written = datetime.fromtimestamp(T_START_TS + 3600 - age).strftime("%Y-%m-%dT%H:%M:%SZ")
    kube.put(
        API,
        "trainjobs",
        trainjob_obj("ml", "llm", {"progressPercentage": 7, "lastUpdatedTime": written}),
    )
    exp, _ = _logs_only_job(kube, k8s_exporter, tmp_path, "status")
    # The pod reaches the exporter by its watch: poll until a write comes (up to 30 s where
    # one is due: in a full run on two cores two polls may come before the pod is known; a
    # few seconds where none may come).
    stale = age > Thresholds().report_timeout_seconds
    deadline = time.monotonic() + (30 if stale else 3)
    while not writes_by(kube, "/trainjobs/llm/status") and time.monotonic() < deadline:
        exp.poll_once()
        time.sleep(0.1)
    writes = writes_by(kube, "/trainjobs/llm/status")
    assert (len(writes) > 0) == stale
