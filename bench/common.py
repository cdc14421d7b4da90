"""Helpers shared by the benchmarks: processes on loopback, ports, /proc readings."""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    """Return a loopback TCP port free now, below the kernel's ephemeral range.

    A port the kernel hands out for ``bind(0)`` comes from the ephemeral range, the same range
    it takes outgoing connections' source ports from: between this call and the server's own
    bind, a scrape or a gloo connection can take it (EADDRINUSE, seen in CI). A port below the
    range is never given to a connection, so only another caller picking the same one at
    random can collide, and the bind here checks that it is free now.
    """
    low = _ephemeral_low()
    rng = random.Random()
    for _ in range(64):
        port = rng.randrange(max(1024, low - 12000), low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # the band is full: the kernel's choice, racy as it is
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ephemeral_low() -> int:
    """Return the first port of the kernel's ephemeral range (32768 where it cannot be read)."""
    try:
        text = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text()
        return max(2048, int(text.split()[0]))
    except (OSError, ValueError, IndexError):
        return 32768


def serve_bytes(
    body: bytes, content_type: str = "text/plain; version=0.0.4; charset=utf-8"
) -> ThreadingHTTPServer:
    """A loopback server answering every GET with ``body``, in a daemon thread (a stand-in
    for an exporter's, dcgm-exporter's or Prometheus' fixed answer); shut it down when done."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except OSError:  # the client read enough and closed
                return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def wait_http(url: str, timeout: float = 30.0, proc: subprocess.Popen[bytes] | None = None) -> None:
    """Returns once ``url`` answers 200; raises when ``timeout`` passes first, or at once
    when ``proc`` (the server's process) has exited: a server that cannot start is named
    in a second, not after the whole timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the process serving {url} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {timeout} s")


def start_exporter(
    port: int, *extra: str, env_extra: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """The exporter as users run it, in standalone mode on loopback."""
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    env.update(env_extra or {})
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "exporter",
            "run",
            "--mode",
            "standalone",
            "--listen",
            f"127.0.0.1:{port}",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    wait_http(f"http://127.0.0.1:{port}/healthz")
    return proc


@dataclass(frozen=True)
class ProcSample:
    cpu_seconds: float
    rss_bytes: int
    hwm_bytes: int


def proc_sample(pid: int) -> ProcSample:
    """CPU time (user+system) and resident memory of a process, from /proc."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLK_TCK
    rss = hwm = 0
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) * 1024
    return ProcSample(cpu, rss, hwm)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def start_prometheus(
    tmp: Path, config: dict[str, Any], port: int | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """A real Prometheus on loopback with ``config`` (``port``: the one the config already
    names for Prometheus itself, if it scrapes itself); its process and URL once ready."""
    binary = shutil.which("prometheus")
    if binary is None:
        raise SystemExit("prometheus is not installed (make test-deps)")
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = port or free_port()
    proc = subprocess.Popen(
        [binary, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_http(url + "/-/ready", timeout=120)
    return proc, url


def instant_query(url: str, expr: str) -> list[dict[str, Any]]:
    """The result of an instant query of the Prometheus at ``url``."""
    q = urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=300) as resp:
        return list(json.loads(resp.read())["data"]["result"])
