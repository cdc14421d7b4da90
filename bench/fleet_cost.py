"""What the exporters cost the Prometheus above them at fleet size (#59): a real Prometheus
with every rule file loaded scrapes a real exporter holding 2,000, 10,000 and 20,000 runs
(half of them ranks of 8-rank jobs) at the default 15 s, and reports series per run and per
8-rank job, head series, Prometheus' memory, the scrape's duration and every rule group's
evaluation time (``prometheus_rule_group_last_duration_seconds``, the mean and the worst of
the last two minutes' evaluations), and the series per run
of each family (the cardinality budget of docs/metrics.md).

    python -m bench.fleet_cost [--sizes 2000,10000,20000] [--settle 150] [--series full|lean|both]
        [--rules-at REV]   # also the rules of a git revision, on the same expositions

The runs are restored from a state file (bench/scale.py's long template run, its custom
metrics kept on one run in ten, as most runs report none); they are the exporter's own
runs, exported by its own collector: each exporter's exposition is taken once and served as
it is, so that Prometheus has the machine's two cores to itself, as it has its own machine
beside a cluster's GPU nodes (the values stay still: rates are 0, which costs a rule no
less to evaluate).
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from exporter.daemon.persist import encode_lines, write_atomically

from .common import free_port, instant_query, serve_bytes, start_prometheus, stop
from .scale import REPORTS, T0, template_run
from .scale import start as start_exporter

ROOT = Path(__file__).resolve().parent.parent
INTERVAL = 15.0
RANKS = 8
PER_EXPORTER = 10_000
# The groups with an interval of their own (alerts/goodput.rules.yaml, views.rules.yaml).
GROUP_INTERVALS = {"training-progress.goodput": 60.0, "training-progress.views": 60.0}


def state_file(path: Path, runs: int, lo: int, hi: int) -> int:
    """Runs ``lo`` to ``hi`` of a fleet of ``runs``: the first half ranks of 8-rank jobs, the
    rest jobs of one run; 20 namespaces; custom metrics on one run in ten. Returns the
    file's size."""
    template = template_run()
    ranked = runs // 2 // RANKS * RANKS

    def docs() -> Iterator[dict[str, Any]]:
        for i in range(lo, hi):
            doc = copy.copy(template)
            # The ranks of a job share its namespace (a job is one namespace's object).
            ns = f"team-{(i // RANKS if i < ranked else i) % 20}"
            if i < ranked:
                job, rank = f"job-{i // RANKS}", i % RANKS
                doc["key"] = [ns, f"{job}-worker-{rank}", job]
                doc["meta"] = {**template["meta"], "rank": str(rank)}
            else:
                doc["key"] = [ns, f"single-{i}", f"single-{i}"]
            if i % 10:
                doc["metrics"] = {}
            yield doc

    return write_atomically(str(path), encode_lines(docs(), T0 + 5 * REPORTS))


def scalar(url: str, expr: str) -> float:
    result = instant_query(url, expr)
    return float(result[0]["value"][1]) if result else float("nan")


def rule_files(rules: Path, revision: str | None) -> None:
    """Writes into ``rules`` every rule file of the work tree, or of ``revision`` (a git
    revision of this repository: the rules before a change, measured beside it)."""
    if revision is None:
        for path in sorted((ROOT / "alerts").glob("*.rules.yaml")):
            shutil.copy(path, rules / path.name)
        return
    names = subprocess.run(
        ["git", "-C", str(ROOT), "ls-tree", "--name-only", f"{revision}:alerts"],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    for name in (n for n in names if n.endswith(".rules.yaml")):
        text = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{revision}:alerts/{name}"],
            check=True, capture_output=True,
        ).stdout  # fmt: skip
        (rules / name).write_bytes(text)


def prometheus(
    tmp: Path, targets: list[str], revision: str | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """Prometheus with every rule file (of the work tree, or of ``revision``), scraping
    ``targets`` and itself."""
    rules = tmp / "rules"
    rules.mkdir(parents=True)
    rule_files(rules, revision)
    port = free_port()
    config = {
        "global": {"scrape_interval": f"{INTERVAL:g}s", "evaluation_interval": f"{INTERVAL:g}s",
                   "scrape_timeout": "14s"},
        "rule_files": [str(rules / "*.rules.yaml")],
        "scrape_configs": [
            {"job_name": "training-progress-exporter", "static_configs": [{"targets": targets}]},
            {"job_name": "prometheus", "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]},
        ],
    }  # fmt: skip
    return start_prometheus(tmp, config, port)


class StaticTargets:
    """Loopback servers, one per target, each answering ``/metrics`` with its text as
    taken from an exporter."""

    def __init__(self, texts: list[bytes]) -> None:
        self.servers = [serve_bytes(text) for text in texts]
        self.targets = [f"127.0.0.1:{srv.server_address[1]}" for srv in self.servers]

    def close(self) -> None:
        for server in self.servers:
            server.shutdown()
            server.server_close()


def expositions(runs: int, lean: bool) -> list[bytes]:
    """What the exporters holding a fleet of ``runs`` answer on /metrics, one text each."""
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        env = {"TPE_LEAN_SERIES": "true"} if lean else {}
        # An exporter holds at most 10,000 runs (max_runs): more are split over several,
        # as a fleet's runs are over its nodes.
        # Each exporter's exposition is taken once and served as it is: on a cluster the
        # exporters run on the GPU nodes, not on Prometheus' machine, so here they must not
        # take Prometheus' two cores (their own cost is bench/scale.py's).
        texts = []
        for lo in range(0, runs, PER_EXPORTER):
            hi = min(runs, lo + PER_EXPORTER)
            state = tmp / f"state-{lo}.jsonl"
            state_file(state, runs, lo, hi)
            port = free_port()
            exporter = start_exporter(port, state, hi - lo, env)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=600) as r:
                    texts.append(r.read())
            finally:
                stop(exporter)
        return texts


def measure(
    runs: int, texts: list[bytes], settle: float, lean: bool, revision: str | None
) -> dict[str, Any]:
    """What a fresh Prometheus with the rules of ``revision`` (None: the work tree's)
    costs while scraping ``texts``, after ``settle`` seconds."""
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        static = StaticTargets(texts)
        prom = None
        try:
            prom, url = prometheus(tmp, static.targets, revision)
            time.sleep(settle)  # every group evaluated several times (goodput: every minute)
            job = 'job="training-progress-exporter"'
            series = scalar(url, f'count({{__name__=~"training_.+",{job}}})')
            families = {
                r["metric"]["__name__"]: float(r["value"][1])
                for r in instant_query(
                    url, f'count by (__name__) ({{__name__=~"training_.+",{job}}})'
                )
            }
            # The mean of the last two minutes' evaluations (Prometheus scrapes itself every
            # 15 s): one evaluation on two cores beside a million series' ingestion and its
            # garbage collection varies by half from the next.
            groups = {
                r["metric"]["rule_group"].rsplit(";", 1)[-1]: round(float(r["value"][1]), 3)
                for r in instant_query(
                    url, "avg_over_time(prometheus_rule_group_last_duration_seconds[2m])"
                )
            }
            worst = {
                r["metric"]["rule_group"].rsplit(";", 1)[-1]: round(float(r["value"][1]), 3)
                for r in instant_query(
                    url, "max_over_time(prometheus_rule_group_last_duration_seconds[2m])"
                )
            }
            with urllib.request.urlopen(url + "/api/v1/rules", timeout=300) as resp:
                rule_groups = json.loads(resp.read())["data"]["groups"]
            slowest = sorted(
                ((r["evaluationTime"], r["name"]) for g in rule_groups for r in g["rules"]),
                reverse=True,
            )[:40]
            # What the rules themselves write: Prometheus ingests it as it does a scrape.
            recorded = {
                r["metric"]["__name__"]: int(float(r["value"][1]))
                for r in instant_query(url, 'count by (__name__) ({__name__=~".+:.+"})')
            }
            ranked_jobs = runs // 2 // RANKS
            per_job = scalar(
                url,
                f'count({{__name__=~"training_.+",{job},job_name=~"job-.*"}})',
            )
            return {
                "runs": runs,
                "lean_series": lean,
                "rules": revision or "work tree",
                "series_training": int(series),
                "series_per_run": round(series / runs, 1),
                "series_per_8_rank_job": round(per_job / ranked_jobs, 1) if ranked_jobs else None,
                "head_series": int(scalar(url, "prometheus_tsdb_head_series")),
                "prometheus_rss_mib": round(
                    scalar(url, 'process_resident_memory_bytes{job="prometheus"}') / 2**20
                ),
                "scrape_seconds": round(scalar(url, f"max(scrape_duration_seconds{{{job}}})"), 2),
                "rule_group_seconds": groups,
                "rule_group_share_of_interval": {
                    g: round(s / GROUP_INTERVALS.get(g, INTERVAL), 3) for g, s in groups.items()
                },
                "rule_group_worst_seconds": worst,
                # All groups' evaluation time in 15 s: what the rules take of Prometheus,
                # however they are grouped.
                "rule_seconds_per_interval": round(
                    sum(s * INTERVAL / GROUP_INTERVALS.get(g, INTERVAL) for g, s in groups.items()),
                    3,
                ),
                "slowest_rules_seconds": {name: round(t, 3) for t, name in slowest},
                "recorded_series": sum(recorded.values()),
                "recorded_series_by_rule": dict(sorted(recorded.items(), key=lambda x: -x[1])),
                "series_per_run_by_family": {
                    k: round(v / runs, 2) for k, v in sorted(families.items(), key=lambda x: -x[1])
                },
            }
        finally:
            if prom is not None:
                stop(prom)
            static.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="2000,10000,20000")
    parser.add_argument("--settle", type=float, default=150.0)
    parser.add_argument(
        "--series",
        choices=("full", "lean", "both"),
        default="full",
        help="the exporter's lean_series off, on, or each in turn",
    )
    parser.add_argument(
        "--rules-at",
        action="append",
        default=[],
        metavar="REV",
        help="also measure the rule files of this git revision, on the same expositions "
        "(before and after a change side by side; repeatable)",
    )
    args = parser.parse_args()
    modes = {"full": (False,), "lean": (True,), "both": (False, True)}[args.series]
    for size in (int(s) for s in args.sizes.split(",")):
        for lean in modes:
            texts = expositions(size, lean)
            for revision in [*args.rules_at, None]:
                result = measure(size, texts, args.settle, lean, revision)
                print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
