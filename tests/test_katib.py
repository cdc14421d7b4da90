"""Katib without regex: a trial's objective metrics go from what the exporter reads to Katib's
DB manager (``ReportObservationLog``), with no ``report_metrics()`` in the trial.

The DB manager is a stand-in built from Katib's own generated API (``kubeflow-katib``'s
``katib_api_pb2_grpc.DBManagerServicer``, a real gRPC server on loopback) that records each
request; the Trial and its pod come from the fake API server through the real ``kubernetes``
client; the values come from a real Transformers run's container log (a CRI capture),
appended as the run wrote it.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from exporter.core.model import ProgressReport, RunKey, RunMeta
from exporter.core.run.merge import OBSERVATIONS_KEPT
from exporter.core.tracker import Tracker
from exporter.daemon.app import Exporter
from exporter.sinks.katib.dbmanager import DBManager, KatibUnavailable
from exporter.sinks.katib.observations import (
    MAX_PENDING,
    MetricLog,
    TrialError,
    TrialLog,
    due,
    observe,
    parse_trial,
    rfc3339,
    sent,
)

from .conftest import K8S_NODE, T0, FakeClock, get_json, http, need_module
from .fakekube import FakeKube
from .kube import T_START_TS, pod, put_pod, registry_of, wait

# The katib extra (grpcio and Katib's generated API); without it this module skips.
grpc = need_module("grpc", "katib")
katib_api_pb2 = need_module("kubeflow.katib.katib_api_pb2", "katib")
katib_api_pb2_grpc = need_module("kubeflow.katib.katib_api_pb2_grpc", "katib")

CAPTURE = Path(__file__).parent / "fixtures" / "logs" / "transformers_trainer.cri.log"
TRIALS = "kubeflow.org/v1beta1"
RFC3339_NANO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)")


@dataclass
class StandIn(katib_api_pb2_grpc.DBManagerServicer):  # type: ignore[misc]
    """Katib's DB manager as far as reporting goes: records every ReportObservationLog."""

    requests: list[Any] = field(default_factory=list)
    fail_next: int = 0  # answer UNAVAILABLE this many times first
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ReportObservationLog(self, request: Any, context: Any) -> Any:
        with self.lock:
            if self.fail_next:
                self.fail_next -= 1
                context.abort(grpc.StatusCode.UNAVAILABLE, "database is down")
            for m in request.observation_log.metric_logs:
                # What Katib's MySQL backend does: time.Parse(time.RFC3339Nano, ...), and
                # the value stored as text that its suggestion services parse as a number.
                if not RFC3339_NANO.fullmatch(m.time_stamp):
                    context.abort(grpc.StatusCode.UNKNOWN, f"Error parsing {m.time_stamp}")
                float(m.metric.value)
            self.requests.append(request)
        return katib_api_pb2.ReportObservationLogReply()

    def logs(self, trial: str) -> list[tuple[str, float, str]]:
        """(metric, value, time_stamp) of every MetricLog received for ``trial``, in order."""
        with self.lock:
            return [
                (m.metric.name, float(m.metric.value), m.time_stamp)
                for r in self.requests
                if r.trial_name == trial
                for m in r.observation_log.metric_logs
            ]


@pytest.fixture
def db_manager() -> Iterator[tuple[StandIn, str]]:
    standin = StandIn()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    katib_api_pb2_grpc.add_DBManagerServicer_to_server(standin, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield standin, f"127.0.0.1:{port}"
    finally:
        server.stop(grace=None)


def trial(
    ns: str, name: str, objective: str, additional: list[str], collector: str = "Push"
) -> dict[str, Any]:
    """A Trial as Katib's controller creates it from its Experiment."""
    return {
        "apiVersion": TRIALS,
        "kind": "Trial",
        "metadata": {
            "namespace": ns,
            "name": name,
            "uid": f"uid-trial-{name}",
            "labels": {"katib.kubeflow.org/experiment": "gpt-lr"},
            "ownerReferences": [
                {
                    "apiVersion": TRIALS,
                    "kind": "Experiment",
                    "name": "gpt-lr",
                    "uid": "uid-experiment-gpt-lr",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "objective": {
                "type": "minimize",
                "goal": 1.0,
                "objectiveMetricName": objective,
                "additionalMetricNames": additional,
            },
            "metricsCollector": {"collector": {"kind": collector}},
            "parameterAssignments": [{"name": "lr", "value": "0.0003"}],
        },
    }


def trial_pod(ns: str, name: str, trial_name: str) -> dict[str, Any]:
    labels = {
        "batch.kubernetes.io/job-name": trial_name,
        "katib.kubeflow.org/trial": trial_name,
        "katib.kubeflow.org/experiment": "gpt-lr",
    }
    return pod(ns, name, labels, ip=f"10.0.1.{len(name)}")


# -- what to send, and when (pure) --------------------------------------------------------


def test_parse_trial_objective_additional_and_collector() -> None:
    spec = parse_trial(trial("ml", "t1", "eval_loss", ["loss", "eval_loss", "accuracy"]))
    assert spec.metric_names == ("eval_loss", "loss", "accuracy") and spec.pushed
    assert not parse_trial(trial("ml", "t1", "loss", [], collector="StdOut")).pushed
    no_collector = trial("ml", "t1", "loss", [])
    del no_collector["spec"]["metricsCollector"]
    assert parse_trial(no_collector).collector == "StdOut"  # Katib's default: not ours
    with pytest.raises(TrialError, match="no objective"):
        parse_trial({"metadata": {"name": "t"}, "spec": {"objective": {}}})
    hostile = trial("ml", "t1", "x" * 10_000, [3, None, "loss"])  # type: ignore[list-item]
    assert parse_trial(hostile).metric_names == ("loss",)
    for broken in ({"spec": []}, {"spec": {"objective": "loss"}}, {"metadata": 3, "spec": None}):
        with pytest.raises(TrialError):
            parse_trial(broken)
    odd = trial("ml", "t1", "loss", "accuracy")  # type: ignore[arg-type]
    odd["spec"]["metricsCollector"] = {"collector": ["Push"]}
    assert parse_trial(odd).metric_names == ("loss",) and not parse_trial(odd).pushed


def test_each_value_once_batched_by_the_interval_and_flushed_at_the_finish() -> None:
    spec = parse_trial(trial("ml", "t1", "eval_loss", ["loss", "train_accuracy"]))
    tracker = Tracker()
    key = RunKey("ml", "t1-0", "t1")
    meta = RunMeta(trial="t1")
    log = TrialLog()

    def step(report: ProgressReport, at: float) -> Any:
        tracker.apply(key, report, at, meta)
        observe(spec, *tracker.observations(key, log.cursor), log)
        (snap,) = tracker.snapshot(at)
        return snap

    step(ProgressReport(step=1, loss=2.0), T0)
    assert due(log, now=100.0, min_interval=10.0, finished=False) == [
        MetricLog("loss", 2.0, rfc3339(T0))
    ]
    sent(log, due(log, 100.0, 10.0, False), 100.0, False)
    # The same value at the next step is the next observation (Katib's StdOut collector
    # sends every printed value); a report that repeats the last one exactly is not.
    step(ProgressReport(step=2, loss=2.0), T0 + 1)
    step(ProgressReport(step=2, loss=2.0), T0 + 1.5)
    step(ProgressReport(step=3, loss=1.5, metrics=(("train_accuracy", 0.4),)), T0 + 2)
    step(ProgressReport(step=4, loss=float("nan")), T0 + 3)  # NaN: never sent
    assert due(log, now=105.0, min_interval=10.0, finished=False) == []  # not yet
    batch = due(log, now=111.0, min_interval=10.0, finished=False)
    assert batch == [
        MetricLog("loss", 2.0, rfc3339(T0 + 1)),
        MetricLog("loss", 1.5, rfc3339(T0 + 2)),
        MetricLog("train_accuracy", 0.4, rfc3339(T0 + 2)),
    ]
    sent(log, batch, 111.0, False)
    snap = step(ProgressReport(step=5, eval_loss=1.2, final=True), T0 + 4)
    assert snap.finished
    final = due(log, now=112.0, min_interval=10.0, finished=True)  # at once
    assert final == [MetricLog("eval_loss", 1.2, rfc3339(T0 + 4))]
    sent(log, final, 112.0, True)
    step(ProgressReport(step=6, eval_loss=1.1), T0 + 5)
    assert log.final and due(log, 200.0, 10.0, True) == []
    # An outage cannot grow the queue without bound: what is lost is counted.
    unbounded, other = TrialLog(), Tracker()
    for i in range(MAX_PENDING + 5):
        other.apply(key, ProgressReport(step=10 + i, loss=float(i)), T0 + 10 + i, meta)
        observe(spec, *other.observations(key, unbounded.cursor), unbounded)
    assert len(unbounded.pending) == MAX_PENDING and unbounded.dropped == 5
    assert unbounded.pending[0].value == 5.0  # the oldest went first
    # A reader that comes too late for the run's kept observations is told how many.
    late, third = TrialLog(), Tracker()
    for i in range(OBSERVATIONS_KEPT + 7):
        third.apply(key, ProgressReport(step=i, loss=float(i)), T0 + i, meta)
    assert observe(spec, *third.observations(key, late.cursor), late) == 7
    assert [m.value for m in late.pending[:2]] == [7.0, 8.0]
    # Runs that are no Katib trial keep no observations at all.
    plain = Tracker()
    plain.apply(key, ProgressReport(step=1, loss=1.0), T0)
    assert plain.observations(key, 0) == ([], 0)


def test_without_the_extra_reporting_is_off_and_says_why(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "grpc", None)  # as if grpcio were not installed
    with pytest.raises(
        KatibUnavailable, match=r"pip install 'training-progress-exporter\[katib\]'"
    ):
        DBManager("127.0.0.1:6789")
    from exporter.daemon.config import Config
    from exporter.daemon.wiring import SINKS

    class Cluster:  # what the factory reads of the cluster before it needs the API
        custom_api = pods = None

    config = Config(katib_db_manager="127.0.0.1:6789")
    with caplog.at_level(logging.WARNING):
        assert SINKS["katib"](config, None, Cluster()) is None  # type: ignore[arg-type]
    assert "Katib reporting is off" in caplog.text and "[katib]" in caplog.text


# -- end to end: Trial and pod from the API server, values from a real log ----------------


def _cri_lines() -> list[str]:
    return CAPTURE.read_text().splitlines(keepends=True)


def test_a_push_trial_gets_its_objective_from_the_log_in_order(
    kube: FakeKube,
    tmp_path: Path,
    db_manager: tuple[StandIn, str],
    k8s_exporter: Any,
    env_proxy: list[str],
) -> None:
    """(With every proxy variable set, gRPC's grpc_proxy and https_proxy among them: the DB
    manager is reached directly, and the proxy sees nothing.)"""
    standin, address = db_manager
    kube.put(TRIALS, "trials", trial("ml", "gpt-lr-abc12", "eval_loss", ["loss"]))
    kube.put(TRIALS, "trials", trial("ml", "gpt-lr-sidecar", "loss", [], collector="StdOut"))
    put_pod(kube, trial_pod("ml", "gpt-lr-abc12-x7k2p", "gpt-lr-abc12"))
    put_pod(kube, trial_pod("ml", "gpt-lr-sidecar-q9z8w", "gpt-lr-sidecar"))
    put_pod(kube, trial_pod("ml", "gpt-lr-nocrd-m2n3b", "gpt-lr-nocrd"))  # no Trial
    logs = tmp_path / "pods"
    files = {}
    for name in ("gpt-lr-abc12-x7k2p", "gpt-lr-sidecar-q9z8w", "gpt-lr-nocrd-m2n3b"):
        container = logs / f"ml_{name}_uid-{name}" / "trainer"
        container.mkdir(parents=True)
        files[name] = container / "0.log"
        files[name].write_text("")
    clock = FakeClock(T_START_TS + 60)
    exp = k8s_exporter(
        clock, log_root=str(logs), katib_db_manager=address, katib_report_interval=0.0
    )
    wait(lambda: len(registry_of(exp)) == 3)
    for line in _cri_lines():  # the run writes its log; the exporter polls as it goes
        for f in files.values():
            with f.open("a") as fh:
                fh.write(line)
        clock.advance(1.0)
        exp.poll_once()
    exp.poll_once()
    runs = get_json(exp.url + "/api/v1/runs")["runs"]
    metrics = http("GET", exp.url + "/metrics")[1].decode()
    (info,) = [
        line
        for line in metrics.splitlines()
        if line.startswith("training_run_info{") and 'pod="gpt-lr-abc12-x7k2p"' in line
    ]
    assert 'trial="gpt-lr-abc12"' in info and 'experiment="gpt-lr"' in info
    got = standin.logs("gpt-lr-abc12")
    # Every loss and eval_loss the Trainer printed, once each, in the order it printed them.
    assert [(n, v) for n, v, _ in got] == [
        ("loss", 6.031),
        ("loss", 6.034),
        ("loss", 6.036),
        ("eval_loss", 6.02),
        ("loss", 6.02),
        ("loss", 6.013),
        ("loss", 6.023),
        ("eval_loss", 6.015),
    ]
    stamps = [t for _, _, t in got]
    assert stamps == sorted(stamps) and all(t.endswith("Z") and "T" in t for t in stamps)
    assert standin.logs("gpt-lr-sidecar") == []  # its StdOut sidecar reports it, not us
    assert standin.logs("gpt-lr-nocrd") == []
    run = next(r for r in runs if r["pod"] == "gpt-lr-abc12-x7k2p")
    assert run["info"]["trial"] == "gpt-lr-abc12" and run["info"]["experiment"] == "gpt-lr"
    assert run["finished"]
    assert env_proxy == []


def test_a_db_manager_outage_loses_nothing(
    kube: FakeKube, tmp_path: Path, db_manager: tuple[StandIn, str], k8s_exporter: Any
) -> None:
    standin, address = db_manager
    standin.fail_next = 2
    kube.put(TRIALS, "trials", trial("ml", "t-out", "loss", []))
    put_pod(kube, trial_pod("ml", "t-out-0", "t-out"))
    container = tmp_path / "pods" / "ml_t-out-0_uid-t-out-0" / "trainer"
    container.mkdir(parents=True)
    log = container / "0.log"
    log.write_text("")
    clock = FakeClock(T_START_TS + 60)
    exp = k8s_exporter(
        clock,
        log_root=str(tmp_path / "pods"),
        katib_db_manager=address,
        katib_report_interval=0.0,
    )
    wait(lambda: len(registry_of(exp)) == 1)
    for line in _cri_lines():
        with log.open("a") as fh:
            fh.write(line)
        clock.advance(1.0)
        exp.poll_once()
    exp.poll_once()
    assert [v for _, v, _ in standin.logs("t-out")] == [
        6.031,
        6.034,
        6.036,
        6.02,
        6.013,
        6.023,
    ]


def test_the_documented_early_stopping_queries_pick_the_hopeless_trials(tmp_path: Path) -> None:
    """Each PromQL block of docs/katib.md's early-stopping section, on promtool's real engine,
    over series as the exporter exports them for three trials and a job that is no trial."""
    import shutil
    import subprocess

    import yaml

    doc = (Path(__file__).parent.parent / "docs" / "katib.md").read_text()
    section = doc.split("## Stopping hopeless trials early")[1].split("\n## ")[0]
    (block,) = re.findall(r"```promql\n(.*?)```", section, re.S)
    queries = [q.strip() for q in re.split(r"\n\s*\n", block) if q.strip()]
    queries = [
        "\n".join(line for line in q.splitlines() if not line.startswith("#")) for q in queries
    ]
    states = {"t-ok": "running", "t-nan": "diverged", "t-flat": "plateaued", "other": "stalled"}
    series = []
    for pod_name, state in states.items():
        trial_name = "" if pod_name == "other" else pod_name
        experiment = "" if pod_name == "other" else "gpt-lr"
        base = f'namespace="research",pod="{pod_name}-0",job_name="{pod_name}"'
        series.append(
            {
                "series": f'training_run_info{{{base},trial="{trial_name}",'
                f'experiment="{experiment}",rank="",node="n"}}',
                "values": "1x5",
            }
        )
        for s_name in ("running", "diverged", "plateaued", "stalled"):
            series.append(
                {
                    "series": f'training_run_state{{{base},state="{s_name}"}}',
                    "values": f"{int(s_name == state)}x5",
                }
            )
        series.append({"series": f"training_loss{{{base}}}", "values": "2x5"})
    expected = [
        [("t-flat-0", "plateaued"), ("t-nan-0", "diverged")],
        [("t-flat", "plateaued"), ("t-nan", "diverged")],
        [("t-flat", None), ("t-nan", None), ("t-ok", None)],
    ]
    tests = []
    for query, rows in zip(queries, expected, strict=True):
        samples = []
        for who, state in rows:
            if query.startswith("training_run_state"):
                labels = (
                    f'__name__="training_run_state",namespace="research",pod="{who}",'
                    f'job_name="{who[:-2]}",state="{state}"'
                )
            elif state is not None:
                labels = f'namespace="research",trial="{who}",state="{state}"'
            else:
                labels = f'namespace="research",trial="{who}"'
            samples.append({"labels": "{" + labels + "}", "value": 1 if state else 2})
        tests.append({"expr": query, "eval_time": "2m", "exp_samples": samples})
    spec = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": tests}],
    }
    path = tmp_path / "katib.test.yaml"
    path.write_text(yaml.safe_dump(spec))
    promtool = shutil.which("promtool")
    assert promtool, "promtool is installed by the test command"
    out = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True)
    assert "SUCCESS" in out.stdout, out.stdout + out.stderr


PACED = Path(__file__).parent / "fixtures" / "logs" / "transformers_paced.cri.log"


@pytest.mark.slow
def test_every_value_of_a_real_run_replayed_at_its_real_pace(
    kube: FakeKube, tmp_path: Path, db_manager: tuple[StandIn, str]
) -> None:
    """A real Transformers run (programs/transformers_paced.py: a loss logged about every
    second, an evaluation at steps 60 and 120), its container log written at the pace it
    was captured while the exporter polls on its own schedule, every 2 s: several lines
    land between two polls. Katib gets every loss and eval_loss, in order, each with the
    time its line was written, as Katib's own StdOut collector would send them."""
    from dataclasses import replace

    from exporter.daemon.config import Config
    from exporter.logs.cri import cri_time, parse_cri

    standin, address = db_manager
    kube.put(TRIALS, "trials", trial("ml", "paced", "eval_loss", ["loss"]))
    put_pod(kube, trial_pod("ml", "paced-0", "paced"))
    container = tmp_path / "pods" / "ml_paced-0_uid-paced-0" / "trainer"
    container.mkdir(parents=True)
    log = container / "0.log"
    log.write_text("")
    config = replace(
        Config(),
        listen="127.0.0.1:0",
        mode="kubernetes",
        node_name=K8S_NODE,
        log_root=str(tmp_path / "pods"),
        katib_db_manager=address,
        katib_report_interval=3.0,
        poll_interval=2.0,
    )
    exp = Exporter(config)
    exp.start()
    try:
        wait(lambda: len(registry_of(exp)) == 1)
        # One CRI entry per "\n" (a tqdm frame's "\r" stays inside its entry).
        lines = [f"{entry}\n" for entry in PACED.read_bytes().decode().split("\n") if entry]
        stamps = [cri_time(parse_cri(line[:-1]).time) for line in lines]  # type: ignore[union-attr]
        printed = []
        started, first = time.monotonic(), stamps[0]
        for line, at in zip(lines, stamps, strict=True):
            assert at is not None
            time.sleep(max(0.0, (at - first) - (time.monotonic() - started)))
            with log.open("a", newline="") as fh:
                fh.write(line)
            for name in ("loss", "eval_loss"):
                found = re.search(rf"'{name}': '([0-9.]+)'", line)
                if found:
                    printed.append((name, float(found.group(1)), at))
        assert len(printed) == 14  # 12 losses, 2 evaluations: the capture itself
        wait(lambda: len(standin.logs("paced")) >= len(printed), timeout=20)
    finally:
        exp.stop()
    got = standin.logs("paced")
    assert [(n, v) for n, v, _ in got] == [(n, v) for n, v, _ in printed]
    # Each with its own time: the CRI timestamp of its line, not the poll that read it.
    assert [cri_time(t) for _, _, t in got] == pytest.approx([t for _, _, t in printed], abs=1e-5)
