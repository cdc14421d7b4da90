"""Kubernetes-mode discovery load: 1,000 pods on one node, then 10 pod events per second.

A fake API server (the one the tests use, speaking the real list/watch protocol) holds 1,000
training pods on the node; the exporter runs as a separate process in Kubernetes mode against
it, lists them, and then follows a steady churn of 10 events/s (pods created, updated and
deleted) for the measured period. Its CPU time and memory come from /proc.

Run: ``python -m bench.discovery_load [--seconds 60]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.fakekube import fake_kube

from .common import free_port, proc_sample, stop, wait_http

NODE = "gpu-node-1"


def pod(i: int, generation: int = 0) -> dict[str, Any]:
    name = f"job-{i}-worker-0"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": f"team-{i % 20}",
            "name": name,
            "uid": f"uid-{i}",
            "labels": {
                "batch.kubernetes.io/job-name": f"job-{i}",
                "batch.kubernetes.io/job-completion-index": "0",
            },
            "annotations": {"generation": str(generation)},
        },
        "spec": {
            "nodeName": NODE,
            "containers": [
                {"name": "trainer", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "8"}}}
            ],
        },
        "status": {
            "phase": "Running",
            "podIP": f"10.{i // 250}.{i % 250}.1",
            "startTime": "2026-11-29T10:00:00Z",
        },
    }


def run(seconds: float = 60.0, pods: int = 1000, rate: float = 10.0) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, fake_kube(Path(tmp)) as (kube, kubeconfig):
        for i in range(pods):
            kube.put("v1", "pods", pod(i))
        port = free_port()
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "NODE_NAME": NODE}
        env.pop("KUBERNETES_SERVICE_HOST", None)
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "exporter",
                "run",
                "--mode",
                "kubernetes",
                "--listen",
                f"127.0.0.1:{port}",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_http(f"http://127.0.0.1:{port}/healthz")
            deadline = time.monotonic() + 60
            while "ok:" not in _readyz(port) and time.monotonic() < deadline:
                time.sleep(0.2)
            listed = _readyz(port)
            before, t0 = proc_sample(proc.pid), time.monotonic()
            events = 0
            next_at = t0
            while time.monotonic() - t0 < seconds:
                i = events % pods
                kind = events % 10
                if kind == 0:  # delete and recreate: a pod replaced
                    kube.delete("v1", "pods", f"team-{i % 20}", f"job-{i}-worker-0")
                else:
                    kube.put("v1", "pods", pod(i, generation=events))
                events += 1
                next_at += 1 / rate
                time.sleep(max(0.0, next_at - time.monotonic()))
            after, t1 = proc_sample(proc.pid), time.monotonic()
        finally:
            stop(proc)
    return {
        "pods": pods,
        "events": events,
        "events_per_second": events / (t1 - t0),
        "ready": listed,
        "cpu_percent_of_one_core": 100 * (after.cpu_seconds - before.cpu_seconds) / (t1 - t0),
        "rss_mib": after.rss_bytes / 2**20,
        "peak_rss_mib": after.hwm_bytes / 2**20,
    }


def _readyz(port: int) -> str:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as resp:
            return str(resp.read().decode())
    except OSError as exc:
        return str(exc)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    print(json.dumps(run(args.seconds), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
