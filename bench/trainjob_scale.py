"""TrainJob source cost on a large cluster: what one exporter pays per poll
to find the TrainJobs of its node, with 20,000 TrainJobs in the cluster and 10 on the node.

Two ways, side by side on the same API server and objects, each in a fresh process so that
its peak RSS is its own:

* ``list``: what the source did before, a cluster-wide LIST of every TrainJob through the
  real ``kubernetes`` client (deserialized, as the client does by default), every poll;
* ``get``: what it does now (``exporter.sources.trainjob.TrainJobSource``): one GET per
  TrainJob whose rank-0 pod is on this node.

The API server is the tests' stand-in (``tests/fakekube.py``, the real HTTP protocol), run in
its own process; it counts the bytes it sends. Each TrainJob is about 2.9 KB of JSON, the
size of objects measured on a real cluster (58 MB for 20,000). Figures per poll and per minute
(a poll every 15 s), and the API server's total for 2,000 nodes.

Run: ``python -m bench.trainjob_scale [--trainjobs 20000] [--polls 3]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

POLLS_PER_MINUTE = 60 / 15
NODES = 2000
ON_NODE = 10
NODE = "node-a"


def trainjob(i: int) -> dict[str, Any]:
    """A TrainJob of realistic size (~2.9 KB): spec with its runtime and trainer, a status."""
    name = f"job-{i:05d}"
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {
            "name": name,
            "namespace": f"team-{i % 50:02d}",
            "uid": f"00000000-0000-0000-0000-{i:012d}",
            "labels": {"app.kubernetes.io/part-of": "llm-finetune", "team": f"team-{i % 50}"},
            "annotations": {"description": "fine-tune of a 7B model on the support corpus " * 22},
            "creationTimestamp": "2026-11-30T10:00:00Z",
        },
        "spec": {
            "runtimeRef": {"name": "torch-distributed", "kind": "ClusterTrainingRuntime"},
            "trainer": {
                "image": "registry.example.com/ml/trainer:2026.11.3",
                "command": ["torchrun", "--nnodes=4", "train.py"],
                "args": [f"--config=/configs/{name}.yaml", "--epochs=3", "--lr=2e-5"],
                "numNodes": 4,
                "resourcesPerNode": {"limits": {"nvidia.com/gpu": "8", "memory": "640Gi"}},
                "env": [{"name": f"VAR_{k}", "value": f"value-{k}-" * 3} for k in range(12)],
            },
            "suspend": False,
        },
        "status": {
            "conditions": [
                {
                    "type": "Created",
                    "status": "True",
                    "reason": "JobsCreationSucceeded",
                    "message": "Succeeded to create Jobs",
                    "lastTransitionTime": "2026-11-30T10:00:01Z",
                }
            ],
            "trainerStatus": {
                "progressPercentage": i % 100,
                "estimatedRemainingSeconds": 3600,
                "metrics": [
                    {"name": n, "value": str(v)}
                    for n, v in (("loss", 1.23), ("learning_rate", 2e-5), ("current_step", i))
                ],
                "lastUpdatedTime": "2026-11-30T10:05:00Z",
            },
        },
    }


def serve(count: int, ready: Path) -> None:
    """The API server stand-in with ``count`` TrainJobs, until killed."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.fakekube import fake_kube

    with tempfile.TemporaryDirectory() as tmp, fake_kube(Path(tmp)) as (kube, kubeconfig):
        for i in range(count):
            kube.put("trainer.kubeflow.org/v1alpha1", "trainjobs", trainjob(i))
        kube.events.clear()
        ready.write_text(kubeconfig.read_text())
        while True:
            time.sleep(3600)


def _stats(server: str) -> dict[str, int]:
    with urllib.request.urlopen(server + "/_fake/stats", timeout=30) as resp:
        return dict(json.loads(resp.read()))


def _peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def client(mode: str, kubeconfig: str, trainjobs: int, polls: int) -> dict[str, Any]:
    """``polls`` polls the ``mode`` way; prints per-poll bytes and CPU, and the peak RSS."""
    import os

    from exporter.core.model import RunMeta
    from exporter.core.tracker import Tracker
    from exporter.kubernetes.client import apis
    from exporter.plumbing.discovery import PodInfo
    from exporter.plumbing.ingest import Ingestor
    from exporter.plumbing.stats import ExporterStats
    from exporter.sources.trainjob import GROUP, PLURAL, VERSION, TrainJobSource

    os.environ["KUBECONFIG"] = kubeconfig
    os.environ.pop("KUBERNETES_SERVICE_HOST", None)
    api = apis().custom()
    server = api.api_client.configuration.host
    pods = [
        PodInfo(
            namespace=f"team-{i % 50:02d}",
            name=f"job-{i:05d}-node-0-0",
            uid=str(i),
            ip="",
            host_network=False,
            job_name=f"job-{i:05d}",
            job_kind="TrainJob",
            rank="0",
            container="trainer",
            gpus=8,
            start_timestamp=None,
            finished=False,
            deadline_timestamp=None,
            gpu_seconds_budget=None,
            thresholds=(),
        )
        for i in range(0, trainjobs, max(1, trainjobs // ON_NODE))
    ]
    tracker = Tracker()
    ingestor = Ingestor(tracker, ExporterStats(), time.time)
    source = TrainJobSource(lambda: api, lambda: pods, lambda p: RunMeta(), ingestor)
    cpu, sent = [], []
    for _ in range(polls):
        before = _stats(server)["bytes_sent"]
        started = time.process_time()
        if mode == "list":  # the source as it was: every TrainJob of the cluster
            doc: Any = api.list_cluster_custom_object(GROUP, VERSION, PLURAL, _request_timeout=300)
            assert len(doc["items"]) > 0
        else:
            source._next = 0.0  # the 15 s rate limit: one poll per iteration here
            source.poll()
        cpu.append(time.process_time() - started)
        sent.append(_stats(server)["bytes_sent"] - before)
    return {
        "mode": mode,
        "bytes_per_poll": sum(sent[1:] or sent) / len(sent[1:] or sent),
        "cpu_seconds_per_poll": sum(cpu[1:] or cpu) / len(cpu[1:] or cpu),
        "peak_rss_mib": _peak_rss_mib(),
        "runs": len(tracker),  # what the polls found (list: none, it only lists)
    }


def run(trainjobs: int = 20_000, polls: int = 3) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        ready = Path(tmp) / "kubeconfig"
        server = subprocess.Popen(
            [sys.executable, "-m", "bench.trainjob_scale", "--serve", str(trainjobs), str(ready)],
            stderr=subprocess.DEVNULL,  # a client closing its keep-alive connection is not news
        )
        try:
            deadline = time.time() + 600
            while not ready.exists() or not ready.read_text():
                if server.poll() is not None or time.time() > deadline:
                    raise RuntimeError("the API server stand-in did not start")
                time.sleep(0.5)
            results = {}
            for mode in ("list", "get"):
                out = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "bench.trainjob_scale",
                        "--client",
                        mode,
                        str(ready),
                        str(trainjobs),
                        "--polls",
                        str(polls),
                    ],
                    capture_output=True,
                    text=True,
                    timeout=1800,
                    check=True,
                )
                results[mode] = json.loads(out.stdout.strip().splitlines()[-1])
        finally:
            server.kill()
            server.wait()
    for r in results.values():
        r["mb_per_minute_per_node"] = r["bytes_per_poll"] * POLLS_PER_MINUTE / 1e6
        r["cluster_mb_per_second"] = r["bytes_per_poll"] * NODES / 15 / 1e6
    return {"trainjobs": trainjobs, "on_node": ON_NODE, **results}


def table(r: dict[str, Any]) -> str:
    lines = [
        "| source | API bytes per poll | per node per minute | CPU per poll | peak RSS | "
        f"API server, {NODES:,} nodes |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for mode, label in (("list", "cluster-wide LIST (before)"), ("get", "GET per job (now)")):
        m = r[mode]
        lines.append(
            f"| {label} | {m['bytes_per_poll'] / 1e6:.2f} MB | {m['mb_per_minute_per_node']:.2f} MB"
            f" | {m['cpu_seconds_per_poll'] * 1000:.0f} ms | {m['peak_rss_mib']:.0f} MiB"
            f" | {m['cluster_mb_per_second']:.1f} MB/s |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trainjobs", type=int, default=20_000)
    p.add_argument("--polls", type=int, default=3)
    p.add_argument("--serve", nargs=2, metavar=("COUNT", "READY_FILE"), help=argparse.SUPPRESS)
    p.add_argument(
        "--client", nargs=3, metavar=("MODE", "KUBECONFIG", "COUNT"), help=argparse.SUPPRESS
    )
    a = p.parse_args(argv)
    if a.serve:
        serve(int(a.serve[0]), Path(a.serve[1]))
        return 0
    if a.client:
        print(json.dumps(client(a.client[0], a.client[1], int(a.client[2]), a.polls)))
        return 0
    results = run(a.trainjobs, a.polls)
    print(table(results))
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
