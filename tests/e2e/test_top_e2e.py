"""``top --prometheus`` against the real Prometheus of the e2e stack."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from ..conftest import get_json
from .conftest import LiveStack
from .scenarios import RANKED_STUCK, RANKS

# One worker builds the session's live stack for the three modules that read it.
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.waits]


def test_top_reads_the_cluster_view_from_prometheus(live_stack: LiveStack) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "exporter",
            "top",
            "--prometheus",
            live_stack.prometheus_url,
            "--once",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    rows = {r["job_name"]: r for r in json.loads(proc.stdout)}
    assert {
        n: rows[n]["state"] for n in ("healthy", "hung", "plateau", "diverging", "finished")
    } == {
        "healthy": "running",
        "hung": "stalled",
        "plateau": "plateaued",
        "diverging": "diverged",
        "finished": "finished-but-running",
    }, {n: (r["state"], r["reason"]) for n, r in rows.items()}
    # One truth: the cluster view from Prometheus says what the exporter says, state and why.
    exporter_runs = get_json(live_stack.exporter.url + "/api/v1/runs")["runs"]
    assert {n: r["state"] for n, r in rows.items()} == {
        r["job_name"]: r["state"] for r in exporter_runs
    }
    hung = next(r for r in exporter_runs if r["job_name"] == "hung")
    assert rows["hung"]["reason"].split(" (")[1] == hung["state_reason"].split(" (")[1]
    assert rows["hung"]["reason"].startswith("stalled for ")
    order = [r["job_name"] for r in json.loads(proc.stdout)]
    assert order.index("hung") < order.index("healthy")  # attention first
    assert rows["healthy"]["gpus"] == 8 and rows["healthy"]["loss_trend"] == "down"
    # The stuck rank of the three-rank job, named as TrainingRankStalled names it.
    pod, rank, node = RANKS[RANKED_STUCK]
    assert rows["ranked"]["stuck_rank"].startswith(f"rank {rank} (pod {pod} on {node}) stopped")
    assert rows["ranked"]["stuck_rank_short"] == f"{rank}@{node}"
    assert rows["healthy"]["stuck_rank"] == "" and rows["hung"]["stuck_rank"] == ""
    assert 0 < rows["healthy"]["progress"] < 1 and rows["healthy"]["step"] > 0
    table = subprocess.run(
        [
            sys.executable,
            "-m",
            "exporter",
            "top",
            "--prometheus",
            live_stack.prometheus_url,
            "--once",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert table.returncode == 0 and "hung" in table.stdout and "stalled" in table.stdout


def test_kubectl_progress_reads_prometheus(live_stack: LiveStack) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "exporter.commands.kubectl_progress",
            "-n",
            "e2e",
            "--prometheus",
            live_stack.prometheus_url,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == [
        "NAME",
        "STATE",
        "PROGRESS%",
        "ETA",
        "DEADLINE",
        "LOSS",
        "GPU-HOURS",
        "STUCK-RANK",
        "AGE",
    ]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["hung"][1] == "stalled" and rows["finished"][1:3] == ["finished-but-running", "100"]
    assert rows["diverging"][5] == "NaN"
    assert rows["healthy"][8] != "<unknown>"  # age from training_start_timestamp_seconds
    _, rank, node = RANKS[RANKED_STUCK]
    assert rows["ranked"][7] == f"{rank}@{node}" and rows["healthy"][7] == "-"
    assert float(rows["healthy"][6]) >= 0
    # healthy's deadline is a day after its start, met with room; the others have none.
    assert rows["healthy"][4].endswith("(0%)") and rows["hung"][4] == "-", rows["healthy"]


def test_the_cluster_page_reads_every_run_from_prometheus_in_three_queries(
    live_stack: LiveStack,
) -> None:
    """``cluster --prometheus``: the same runs, states and reasons the exporter serves, from
    three queries a view (not one request per node), and a run's page from its series."""
    from exporter.commands.cluster import make_server
    from exporter.commands.cluster_prometheus import PrometheusView, prometheus_query
    from exporter.plumbing.httpd import serve_in_thread
    from exporter.views.assets import load_assets

    asked: list[str] = []
    real = prometheus_query(live_stack.prometheus_url)

    def counted(expr: str) -> list[dict[str, object]]:
        asked.append(expr)
        return real(expr)

    view = PrometheusView(live_stack.prometheus_url, counted, max_age=0, assets=load_assets())
    server = make_server("127.0.0.1", 0, view)
    serve_in_thread(server)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        doc = get_json(url + "/api/v1/runs")
        assert len(asked) == 3
        page = urllib.request.urlopen(url + "/", timeout=30).read().decode()
        assert len(asked) == 6
        exporter_runs = get_json(live_stack.exporter.url + "/api/v1/runs")["runs"]
        mine = {(r["namespace"], r["pod"]): r for r in doc["runs"]}
        theirs = {(r["namespace"], r["pod"]): r for r in exporter_runs}
        assert set(mine) == set(theirs)
        assert {k: r["state"] for k, r in mine.items()} == {
            k: r["state"] for k, r in theirs.items()
        }
        hung = next(k for k, r in theirs.items() if r["job_name"] == "hung")
        # The reason reads as the exporter writes it (its time part moves on between reads).
        assert (
            mine[hung]["state_reason"].split(" (")[1] == theirs[hung]["state_reason"].split(" (")[1]
        )
        assert mine[hung]["step"] == theirs[hung]["step"]
        healthy = next(k for k, r in theirs.items() if r["job_name"] == "healthy")
        assert "state_reason" not in mine[healthy]  # a healthy run costs no reason query
        assert mine[healthy]["exporter_node"] == theirs[healthy]["info"]["node"]
        assert f"{len(theirs)} runs from Prometheus at {live_stack.prometheus_url}" in page
        assert f'href="runs/{hung[0]}/{hung[1]}"' in page
        detail = urllib.request.urlopen(url + f"/runs/{hung[0]}/{hung[1]}", timeout=30).read()
        assert b"stalled" in detail and hung[1].encode() in detail
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(url + "/runs/e2e/no-such-pod", timeout=30)
        assert err.value.code == 404
    finally:
        server.shutdown()
        server.server_close()
