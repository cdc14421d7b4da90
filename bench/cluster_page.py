"""The cluster page at fleet size: one view's time and the page's memory, with the runs
spread over 50, 200 and 1,000 simulated exporters on loopback, read the zero-setup way
(asking every exporter: ``cluster --exporter ...``) and from a real Prometheus that scrapes
them all (``cluster --prometheus``), side by side on the same runs in one run.

    python -m bench.cluster_page [--nodes 50,200,1000] [--runs 2000]

The runs are real: a real exporter restores ``--runs`` long runs from a state file
(bench/scale.py's), and its own ``/api/v1/runs?history=0`` and ``/metrics`` are sliced by run
into the nodes' answers, so each simulated exporter serves what an exporter with its runs
serves. The total stays the same as the nodes grow: what changes is only how many exporters
hold them. Prometheus scrapes every node's slice of the metrics (one target per node).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .common import free_port, instant_query, proc_sample, start_prometheus, stop, wait_http
from .scale import start as start_exporter
from .scale import state_file

VIEWS = 3
CACHE = 4.2  # the page gathers at most every 4 s: each measured view is a fresh one
_POD = re.compile(rb'pod="([^"]*)"')


def fleet_server(
    runs_by_node: list[bytes], metrics_by_node: list[bytes]
) -> tuple[ThreadingHTTPServer, str]:
    """One loopback server playing every node's exporter: ``/node-i/api/v1/runs`` and
    ``/node-i/metrics``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            m = re.fullmatch(r"/node-(\d+)/(api/v1/runs|metrics|healthz)", path)
            if not m or int(m[1]) >= len(runs_by_node):
                self.send_error(404)
                return
            i = int(m[1])
            body = {"api/v1/runs": runs_by_node[i], "metrics": metrics_by_node[i]}.get(
                m[2], b"ok\n"
            )
            self.send_response(200)
            kind = "application/json" if m[2] == "api/v1/runs" else "text/plain; version=0.0.4"
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.request_queue_size = 256
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def split(
    runs: list[dict[str, Any]], metrics: bytes, nodes: int
) -> tuple[list[bytes], list[bytes]]:
    """Each node's ``/api/v1/runs`` and ``/metrics``: the runs dealt round-robin, and the
    metric lines of those runs (with every HELP and TYPE line, as an exporter writes them)."""
    owner = {run["pod"]: i % nodes for i, run in enumerate(runs)}
    docs = [json.dumps({"runs": runs[i::nodes]}).encode() for i in range(nodes)]
    lines: list[list[bytes]] = [[] for _ in range(nodes)]
    for line in metrics.splitlines(keepends=True):
        m = _POD.search(line)
        if line.startswith(b"#") or m is None:
            for out in lines:
                out.append(line)
        elif m[1].decode() in owner:
            lines[owner[m[1].decode()]].append(line)
    return docs, [b"".join(out) for out in lines]


def view_times(url: str) -> list[float]:
    """Seconds for each of VIEWS fresh views of the page."""
    out = []
    for _ in range(VIEWS):
        time.sleep(CACHE)
        started = time.perf_counter()
        with urllib.request.urlopen(url + "/", timeout=600) as resp:
            resp.read()
        out.append(time.perf_counter() - started)
    return out


def page(args: list[str], port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "exporter", "cluster", "--listen", f"127.0.0.1:{port}", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_http(f"http://127.0.0.1:{port}/healthz", timeout=60)
    return proc


def measure_page(args: list[str]) -> dict[str, float]:
    port = free_port()
    proc = page(args, port)
    try:
        times = view_times(f"http://127.0.0.1:{port}")
        sample = proc_sample(proc.pid)
    finally:
        stop(proc)
    return {
        "view_seconds_median": round(statistics.median(times), 3),
        "view_seconds_max": round(max(times), 3),
        "peak_rss_mib": round(sample.hwm_bytes / 2**20, 1),
    }


def prometheus(tmp: Path, fleet: str, nodes: int) -> tuple[subprocess.Popen[bytes], str]:
    """Prometheus scraping each node's slice of the metrics (one target per node)."""
    netloc = urllib.parse.urlsplit(fleet).netloc
    config = {
        "global": {"scrape_interval": "5s"},
        "scrape_configs": [
            {
                "job_name": "training-progress-exporter",
                "static_configs": [
                    {"targets": [netloc], "labels": {"__metrics_path__": f"/node-{i}/metrics"}}
                    for i in range(nodes)
                ],
            }
        ],
    }
    return start_prometheus(tmp, config)


def count(url: str, expr: str) -> int:
    result = instant_query(url, expr)
    return int(float(result[0]["value"][1])) if result else 0


def run(nodes_list: list[int], total: int) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        state_file(tmp / "state.jsonl", total)
        port = free_port()
        exporter = start_exporter(port, tmp / "state.jsonl", total)
        try:
            base = f"http://127.0.0.1:{port}"
            with urllib.request.urlopen(base + "/api/v1/runs?history=0", timeout=300) as r:
                runs = json.loads(r.read())["runs"]
            with urllib.request.urlopen(base + "/metrics", timeout=300) as r:
                metrics = r.read()
        finally:
            stop(exporter)
        for nodes in nodes_list:
            docs, texts = split(runs, metrics, nodes)
            server, fleet = fleet_server(docs, texts)
            try:
                exporters = [f"--exporter=node-{i}={fleet}/node-{i}" for i in range(nodes)]
                fan_out = measure_page([*exporters, "--timeout", "30"])
                rows.append({"nodes": nodes, "runs": len(runs), "mode": "exporters",
                             "requests_per_view": nodes, **fan_out})  # fmt: skip
                print(json.dumps(rows[-1]), flush=True)
                prom, url = prometheus(tmp / f"p{nodes}", fleet, nodes)
                try:
                    deadline = time.monotonic() + 300
                    while count(url, "count(training_run_info)") < len(runs):
                        if time.monotonic() > deadline:
                            raise RuntimeError("Prometheus did not scrape every run")
                        time.sleep(1)
                    from_prom = measure_page(["--prometheus", url, "--timeout", "60"])
                finally:
                    stop(prom)
                rows.append({"nodes": nodes, "runs": len(runs), "mode": "prometheus",
                             "requests_per_view": 3, **from_prom})  # fmt: skip
                print(json.dumps(rows[-1]), flush=True)
            finally:
                server.shutdown()
                server.server_close()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", default="50,200,1000")
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    run([int(n) for n in args.nodes.split(",")], args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
