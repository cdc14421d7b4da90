"""End to end: two ``act`` processes elect a leader through a Lease on the fake API server;
a real Alertmanager sends every notification to both (one receiver, two webhooks, as
behind a Service it would reach either); the leader is killed with SIGKILL in the middle
of a stream of stalled jobs. The other must take over within the lease duration, and no
restart may be lost or doubled: every job's original pods are deleted exactly once, and
the pods its controller made again (same names, new UIDs) never, however often
Alertmanager re-sends the alerts to either replica.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ..fakekube import FakeKube, fake_kube
from ..kube import put_pod
from ..test_act import NS, TOKEN, add_trainjob
from ..test_act_replicas import LEASE, SYSTEM, lease_holder
from .stack import alertmanager, free_port

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.waits]

JOBS = 12
KILL_AFTER = 4  # alerts sent before the leader is killed
LEASE_SECONDS, RENEW_DEADLINE, RETRY_PERIOD = 3.0, 2.0, 0.5
REPEAT = "2s"  # Alertmanager's repeat_interval: re-sends reach the new leader too


@contextmanager
def act_replica(
    tmp: Path, name: str, kubeconfig: Path, token: Path, conf: Path
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp / f"act-{name}.log"
    args = [
        sys.executable, "-m", "exporter", "act",
        "--token-file", str(token), "--config", str(conf), "--listen", f"127.0.0.1:{port}",
        "--leader-elect", "--leader-elect-namespace", SYSTEM,
        "--leader-elect-lease-duration", str(LEASE_SECONDS),
        "--leader-elect-renew-deadline", str(RENEW_DEADLINE),
        "--leader-elect-retry-period", str(RETRY_PERIOD),
        "--advertise-url", url,
    ]  # fmt: skip
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            args,
            env={**os.environ, "KUBECONFIG": str(kubeconfig)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/healthz", timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"act {name} did not start") from None
                time.sleep(0.1)
        yield proc, url
    except BaseException:
        print(log.read_text(errors="replace")[-4000:])
        raise
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=15)


def deleted_uids(kube: FakeKube) -> list[str]:
    with kube.lock:
        return [
            str(obj["metadata"].get("uid"))
            for _, resource, kind, obj in kube.events
            if resource == "v1/pods" and kind == "DELETED"
        ]


def recreate_missing(kube: FakeKube, generation: dict[str, int]) -> None:
    """What the jobs' controller does: a rank whose pod was deleted is made again, same
    name, new UID."""
    for i in range(JOBS):
        for k in range(2):
            name = f"job{i}-node-0-{k}"
            with kube.lock:
                present = (NS, name) in kube.objects.get(("v1", "pods"), {})
            if present:
                continue
            generation[name] = generation.get(name, 1) + 1
            put_pod(
                kube,
                {
                    "metadata": {
                        "name": name,
                        "namespace": NS,
                        "uid": f"uid-{name}-gen{generation[name]}",
                        "labels": {
                            "trainer.kubeflow.org/trainjob-name": f"job{i}",
                            "jobset.sigs.k8s.io/jobset-name": f"job{i}",
                        },
                    },
                    "status": {"phase": "Running"},
                },
            )


def fire(am_url: str, jobs: range, starts: datetime) -> None:
    """Post the stalled alerts of ``jobs`` to Alertmanager (its API v2), as Prometheus does."""
    alerts = [
        {
            "labels": {
                "alertname": "TrainingJobStalled",
                "severity": "warning",
                "namespace": NS,
                "pod": f"job{i}-node-0-0",
                "job_name": f"job{i}",
            },
            "annotations": {"summary": "stalled"},
            "startsAt": starts.isoformat().replace("+00:00", "Z"),
            "endsAt": (starts + timedelta(minutes=10)).isoformat().replace("+00:00", "Z"),
        }
        for i in jobs
    ]
    req = urllib.request.Request(
        am_url + "/api/v2/alerts",
        json.dumps(alerts).encode(),
        {"Content-Type": "application/json"},
        method="POST",
    )
    urllib.request.urlopen(req, timeout=10).close()


def test_killing_the_leader_mid_stream_loses_and_doubles_no_action(tmp_path: Path) -> None:
    with fake_kube(tmp_path) as (kube, kubeconfig):
        for i in range(JOBS):
            add_trainjob(kube, f"job{i}", {"training-progress.io/on-stalled": "restart"})
        originals = {f"uid-job{i}-{k}" for i in range(JOBS) for k in range(2)}
        token = tmp_path / "token"
        token.write_text(TOKEN)
        conf = tmp_path / "act.yaml"
        conf.write_text(
            "dry_run: false\ncooldown: 1h\n"
            "max_actions_per_hour: 1000\nmax_actions_per_hour_per_namespace: 1000\n"
        )
        generation: dict[str, int] = {}
        stop = threading.Event()

        def controller() -> None:
            while not stop.wait(0.1):
                recreate_missing(kube, generation)

        with (
            act_replica(tmp_path, "a", kubeconfig, token, conf) as (proc_a, url_a),
            act_replica(tmp_path, "b", kubeconfig, token, conf) as (proc_b, url_b),
        ):
            deadline = time.monotonic() + 20
            while not lease_holder(kube):
                assert time.monotonic() < deadline, "no act replica took the lease"
                time.sleep(0.1)
            leader = lease_holder(kube)
            replicas = {url_a: proc_a, url_b: proc_b}
            with kube.lock:
                lease = kube.objects[("coordination.k8s.io/v1", "leases")][(SYSTEM, LEASE)]
                leader_url = lease["metadata"]["annotations"]["training-progress.io/act-url"]
            survivor_url = url_b if leader_url == url_a else url_a
            receiver = {
                "name": "act",
                "webhook_configs": [
                    {
                        "url": f"{u}/api/v1/alerts",
                        "send_resolved": False,
                        "http_config": {"authorization": {"credentials": TOKEN}},
                    }
                    for u in (url_a, url_b)
                ],
            }
            am_config = {
                "route": {
                    "receiver": "act",
                    "group_by": ["alertname", "namespace", "job_name"],
                    "group_wait": "0s",
                    "group_interval": "1s",
                    "repeat_interval": REPEAT,
                },
                "receivers": [receiver],
            }
            watcher = threading.Thread(target=controller, daemon=True)
            watcher.start()
            try:
                with alertmanager(tmp_path, "", am_config) as am_url:
                    starts = datetime.now(UTC)
                    killed_at = 0.0
                    for i in range(JOBS):
                        fire(am_url, range(i + 1), starts)
                        if i + 1 == KILL_AFTER:
                            replicas[leader_url].send_signal(signal.SIGKILL)
                            killed_at = time.monotonic()
                        time.sleep(0.5)
                    while lease_holder(kube) in ("", leader):
                        assert time.monotonic() - killed_at < 30, "nobody took over"
                        time.sleep(0.05)
                    took_over = time.monotonic() - killed_at
                    deadline = time.monotonic() + 60
                    while not originals <= set(deleted_uids(kube)):
                        assert time.monotonic() < deadline, (
                            f"restarts lost: {sorted(originals - set(deleted_uids(kube)))}"
                        )
                        time.sleep(0.2)
                    time.sleep(6)  # three repeat intervals: re-sends to both replicas
                    metrics = urllib.request.urlopen(survivor_url + "/metrics", timeout=5).read()
            finally:
                stop.set()
                watcher.join(timeout=5)
        uids = deleted_uids(kube)
        print(
            f"\nact HA: leader killed after {KILL_AFTER} of {JOBS} alerts; the other took the "
            f"lease {took_over:.2f} s later (lease {LEASE_SECONDS:g} s); "
            f"{len(uids)} pods deleted, {len(originals)} expected"
        )
        doubled = sorted(u for u in set(uids) if uids.count(u) > 1)
        assert not doubled
        assert sorted(uids) == sorted(originals), "a restarted rank was restarted again"
        # The lease duration after the last renewal the other replica observed, plus up to
        # a retry period of lag on each side; the rest is slack for a loaded machine.
        assert took_over <= LEASE_SECONDS + 2 * RETRY_PERIOD + 3.0
        assert b"training_exporter_act_leader 1.0" in metrics
        # Every action the leaders began is written down as done.
        with kube.lock:
            journal = kube.objects[("v1", "configmaps")][(SYSTEM, f"{LEASE}-journal")]
        entries = json.loads(journal["data"]["actions.json"])
        assert sorted(e["job"] for e in entries) == sorted(f"TrainJob/job{i}" for i in range(JOBS))
        assert all(e["done"] for e in entries)
