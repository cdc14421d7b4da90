"""Push ingest: the exporter's Kubeflow endpoint against Prometheus Pushgateway, one run.

Both servers run on loopback; wrk (16 keep-alive connections, 2 threads) posts the same
9 metrics to each: the Kubeflow trainerStatus body to us, the equivalent text exposition
body to Pushgateway (POST, which replaces those metrics of the group, as a push per report
would). Rounds alternate between the two so that machine noise hits both alike.

Run: ``python -m bench.push_ingest [--seconds 15] [--rounds 2]``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median
from typing import Any

from .common import free_port, proc_sample, start_exporter, stop, wait_http

METRICS = [
    ("loss", "6.905783081054688"),
    ("grad_norm", "1.0872821807861328"),
    ("learning_rate", "3.6e-05"),
    ("epoch", "0.3"),
    ("current_step", "20"),
    ("total_steps", "50"),
    ("current_epoch", "0.4"),
    ("eval_loss", "6.91"),
    ("train_samples_per_second", "63.45"),
]
KUBEFLOW_BODY = json.dumps(
    {
        "trainerStatus": {
            "lastUpdatedTime": "2026-11-29T18:20:59.640431+00:00",
            "progressPercentage": 40,
            "estimatedRemainingSeconds": 7,
            "metrics": [{"name": n, "value": v} for n, v in METRICS],
        }
    }
)
TEXT_BODY = "".join(f"training_{n} {v}\n" for n, v in METRICS)


def lua(body: str, content_type: str) -> str:
    return (
        f'wrk.method = "POST"\nwrk.headers["Content-Type"] = "{content_type}"\n'
        f'wrk.headers["Authorization"] = "Bearer bench"\nwrk.body = {json.dumps(body)}\n'
    )


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def parse_wrk(out: str) -> dict[str, float]:
    """Requests/s, p50 and p99 latency (ms) and error count from ``wrk --latency``."""

    def latency(pct: str) -> float:
        m = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        if not m:
            raise ValueError(f"no {pct}% latency in wrk output:\n{out}")
        return float(m.group(1)) * _UNITS[m.group(2)]

    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    errors = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    sockets = re.search(r"Socket errors:.*", out)
    if not rps:
        raise ValueError(f"no Requests/sec in wrk output:\n{out}")
    return {
        "requests_per_second": float(rps.group(1)),
        "p50_ms": latency("50"),
        "p99_ms": latency("99"),
        "non_2xx": float(errors.group(1)) if errors else 0.0,
        "socket_errors": 1.0 if sockets else 0.0,
    }


def wrk(url: str, script: Path, seconds: int, pid: int) -> dict[str, float]:
    before = proc_sample(pid)
    out = subprocess.run(
        ["wrk", "-t2", "-c16", f"-d{seconds}s", "--latency", "-s", str(script), url],
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds + 60,
    ).stdout
    result = parse_wrk(out)
    result["server_cpu_seconds"] = proc_sample(pid).cpu_seconds - before.cpu_seconds
    return result


def pushgateway(port: int, state: Path, *flags: str) -> subprocess.Popen[bytes]:
    """Debian's Pushgateway with its own, empty persistence file: never the machine's shared
    one (a run that loaded 1,100 stale groups from it measured 32 requests/s)."""
    proc = subprocess.Popen(
        ["prometheus-pushgateway", f"--web.listen-address=127.0.0.1:{port}",
         f"--persistence.file={state}", *flags],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wait_http(f"http://127.0.0.1:{port}/-/ready")
    return proc


def run(seconds: int = 15, rounds: int = 2) -> dict[str, Any]:
    """Ours against Pushgateway as shipped and with ``--push.disable-consistency-check``
    (which skips re-checking every group's metrics on each push), rounds alternating."""
    for tool in ("wrk", "prometheus-pushgateway"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is not installed (make test-deps installs it)")
    ours_port, pg_port, fast_port = free_port(), free_port(), free_port()
    procs = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            exporter = start_exporter(ours_port)
            procs.append(exporter)
            checked = pushgateway(pg_port, Path(tmp, "checked.db"))
            procs.append(checked)
            unchecked = pushgateway(
                fast_port, Path(tmp, "unchecked.db"), "--push.disable-consistency-check"
            )
            procs.append(unchecked)
            kf, text = Path(tmp, "kf.lua"), Path(tmp, "text.lua")
            kf.write_text(lua(KUBEFLOW_BODY, "application/json"))
            text.write_text(lua(TEXT_BODY, "text/plain; version=0.0.4"))
            targets = {
                "ours": (
                    f"http://127.0.0.1:{ours_port}/apis/trainer.kubeflow.org/v1alpha1/"
                    "namespaces/bench/trainjobs/job/status",
                    kf,
                    exporter.pid,
                ),
                "pushgateway": (
                    f"http://127.0.0.1:{pg_port}/metrics/job/job/namespace/bench",
                    text,
                    checked.pid,
                ),
                "pushgateway_no_consistency_check": (
                    f"http://127.0.0.1:{fast_port}/metrics/job/job/namespace/bench",
                    text,
                    unchecked.pid,
                ),
            }
            # Warm each up (connection setup, first allocations) before measuring.
            for url, script, pid in targets.values():
                wrk(url, script, 2, pid)
            results: dict[str, list[dict[str, float]]] = {name: [] for name in targets}
            for _ in range(rounds):
                for name, (url, script, pid) in targets.items():
                    results[name].append(wrk(url, script, seconds, pid))
    finally:
        for proc in procs:
            stop(proc)

    def summary(rs: list[dict[str, float]]) -> dict[str, float]:
        return {k: median(r[k] for r in rs) for k in rs[0]}

    return {
        "seconds": seconds,
        "rounds": rounds,
        "connections": 16,
        **{name: summary(rs) for name, rs in results.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print(json.dumps(run(args.seconds, args.rounds), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
