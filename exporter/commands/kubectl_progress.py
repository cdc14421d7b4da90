"""``kubectl progress``: training jobs with a PROGRESS % column, as a kubectl plugin.

Installed as the console script ``kubectl-progress``, which kubectl finds on PATH:

    kubectl progress [-n NAMESPACE | -A] [--prometheus URL] [-o json]
    kubectl progress stacks JOB [-n NAMESPACE] --url URL [-o json]

With a Prometheus URL (flag or ``TPE_PROMETHEUS_URL``) it shows every training job the
exporters see, through the recording rules. Without one it reads the TrainJobs' own
``status.trainerStatus`` (Kubeflow Trainer's progress tracking) with the real ``kubernetes``
client (kubeconfig, or in-cluster).

``stacks`` prints where each rank of a job is (its stacks, newest from each source) and why
it is stuck, from the exporter's ``/api/v1/runs/{namespace}/{pod}/stacks``: ``--url`` (or
``TPE_EXPORTER_URL``) is a node's exporter or the cluster page (``training-progress-exporter
cluster``), which finds each pod's node. To ask every rank for fresh stacks, annotate its
pods: ``kubectl annotate pod POD training-progress.io/stacks=$(date +%s) --overwrite``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any

from ..core.deadlines import kill_deadline
from ..core.humanize import duration, format_loss
from ..core.model import json_safe
from ..core.states import severity
from ..views.deadlineviews import Deadline
from .toprows import Row, fetch_json, from_prometheus
from .unix import Parser, quiet_on_closed_pipe

COLUMNS = (
    "NAME", "STATE", "PROGRESS%", "ETA", "DEADLINE", "LOSS", "GPU-HOURS", "STUCK-RANK", "AGE"
)  # fmt: skip


def deadline_cell(r: Row, now: float) -> str:
    """The soonest deadline, one word as kubectl's cells are: "3h(34%)" (time left, chance
    to miss), "kill:3h" for Kubernetes' own, "-" without one."""
    if not r.deadlines:
        return "-"
    d = r.deadlines[0]
    left = duration(d.at - now) if d.at > now else "passed"
    chance = f"({d.miss_probability:.0%})" if d.miss_probability is not None else ""
    return ("kill:" if d.kind == "kill" else "") + left + chance


def _age(created: str | None, now: float) -> float | None:
    if not created:
        return None
    try:
        return now - datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def trainjob_row(obj: dict[str, Any], now: float) -> tuple[Row, float | None]:
    """A row (and the job's age) from a TrainJob object's ``status.trainerStatus``."""
    meta = obj.get("metadata", {})
    status = obj.get("status") or {}
    trainer = status.get("trainerStatus") or {}
    metrics = {
        m.get("name"): m.get("value") for m in trainer.get("metrics") or [] if isinstance(m, dict)
    }
    conditions = {
        c.get("type"): c.get("status")
        for c in status.get("conditions") or []
        if isinstance(c, dict)
    }
    progress = trainer.get("progressPercentage")
    if conditions.get("Failed") == "True":
        state = "failed"
    elif conditions.get("Complete") == "True" or progress == 100:
        state = "finished"
    elif trainer:
        state = "running"
    else:
        state = "waiting"
    try:
        loss = float(str(metrics["loss"])) if "loss" in metrics else None
    except (TypeError, ValueError):
        loss = None
    row = Row(
        namespace=meta.get("namespace", ""),
        job_name=meta.get("name", ""),
        state=state,
        progress=progress / 100 if isinstance(progress, int | float) else None,
        step=None,
        max_steps=None,
        eta_seconds=trainer.get("estimatedRemainingSeconds"),
        loss=loss,
        loss_trend=None,
        gpus=None,
        gpu_hours=None,
        # Kubernetes' own kill deadline, the TrainJob's activeDeadlineSeconds (no chance to
        # miss without the exporter's ETA band).
        deadlines=tuple(
            Deadline("kill", at, owner="TrainJob")
            for at in (kill_deadline("TrainJob", obj),)
            if at is not None
        ),
    )
    return row, _age(meta.get("creationTimestamp"), now)


def from_kubernetes(namespace: str | None) -> list[tuple[Row, float | None]]:
    """TrainJobs of one namespace (or all) from the API server, most urgent first."""
    from ..kubernetes.client import list_trainjobs

    now = time.time()
    rows = [trainjob_row(obj, now) for obj in list_trainjobs(namespace)]
    return sorted(rows, key=lambda x: (severity(x[0].state), x[0].namespace, x[0].job_name))


def render(rows: list[tuple[Row, float | None]], all_namespaces: bool) -> str:
    """kubectl-style columns, separated by three spaces, no borders."""
    header = (("NAMESPACE",) if all_namespaces else ()) + COLUMNS
    table = [list(header)]
    now = time.time()
    for r, age in rows:
        cells = [
            r.job_name,
            r.state,
            "-" if r.progress is None else f"{r.progress * 100:.0f}",
            duration(r.eta_seconds) if r.eta_seconds is not None else "-",
            deadline_cell(r, now),
            format_loss(r.loss),
            "-" if r.gpu_hours is None else f"{r.gpu_hours:.1f}",
            r.stuck_rank_short or "-",
            duration(age) if age is not None else "<unknown>",
        ]
        table.append(([r.namespace] if all_namespaces else []) + cells)
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = ["   ".join(c.ljust(widths[i]) for i, c in enumerate(row)).rstrip() for row in table]
    return "\n".join(lines) + "\n"


def from_prometheus_with_age(url: str) -> list[tuple[Row, float | None]]:
    """Every job Prometheus sees, with its age (from its first run's start, which the views'
    recording rules keep: no query of its own)."""
    return [(r, r.age_seconds) for r in from_prometheus(url)]


def format_stacks(job: str, docs: list[dict[str, Any]], now: float) -> str:
    """The ``stacks`` command's text: per pod its state and why it is stuck, then each
    rank's newest stacks from each source, innermost frame last (as a traceback)."""
    if not docs:
        return f"no runs of job {job}\n"
    out: list[str] = []
    for doc in docs:
        out.append(
            f"{doc.get('namespace')}/{doc.get('job_name')} pod {doc.get('pod')}: "
            f"{doc.get('state')} ({doc.get('state_reason') or '-'})"
        )
        if doc.get("stall_summary"):
            out.append(f"  why: {doc['stall_summary']}")
        stacks = doc.get("stacks") or []
        if not stacks:
            out.append("  no stacks (none asked for yet, or the run's reporter cannot send them)")
        for st in stacks:
            op = st.get("op") or ""
            if op and st.get("seq") is not None:
                op += f" #{st['seq']}"
            where = st.get("frame") or st.get("call") or "-"
            taken = st.get("taken_timestamp_seconds")
            age = duration(now - taken) + " ago" if isinstance(taken, int | float) else "?"
            out.append(
                f"  rank {st.get('rank') or '?'} ({st.get('source')}, {age}): "
                f"{st.get('cause')}{' in ' + op if op else ''} at {where}"
            )
            for thread in st.get("threads") or []:
                out.append(f"    thread {thread.get('name') or '?'}")
                for f in thread.get("frames") or []:
                    code = f"    {f.get('code')}" if f.get("code") else ""
                    out.append(
                        f"      {f.get('file')}:{f.get('line')} in {f.get('function')}{code}"
                    )
    return "\n".join(out) + "\n"


def _where_and_how(
    p: argparse.ArgumentParser, flag: str, env: str, what: str, otherwise: str = ""
) -> None:
    """The two options both subcommands take: where to ask (``flag``, defaulting to the
    environment variable ``env``) and how to print (``-o table|json``)."""
    p.add_argument(flag, default=os.environ.get(env), help=f"{what} (default ${env}){otherwise}")
    p.add_argument("-o", "--output", choices=["table", "json"], default="table")


def stacks_main(argv: Sequence[str]) -> int:
    """``kubectl progress stacks JOB``: see :func:`format_stacks`."""
    p = Parser(prog="kubectl progress stacks", description="Where each rank of a job is, and why.")
    p.add_argument("job", help="the job's name (the job_name label)")
    p.add_argument("-n", "--namespace", help="namespace (default: the kubeconfig context's)")
    _where_and_how(p, "--url", "TPE_EXPORTER_URL", "a node's exporter or the cluster page")
    args = p.parse_args(argv)
    if not args.url:
        p.error("--url (or TPE_EXPORTER_URL) is required: an exporter or the cluster page")
    if not args.namespace:
        from ..kubernetes.client import current_namespace

        args.namespace = current_namespace()
    base = args.url.rstrip("/") + "/"
    try:
        runs = [
            r
            for r in fetch_json(base + "api/v1/runs").get("runs", [])
            if isinstance(r, dict)
            and r.get("namespace") == args.namespace
            and r.get("job_name") == args.job
        ]
        docs = []
        for r in runs:
            node = r.get("exporter_node")
            prefix = f"nodes/{urllib.parse.quote(str(node), safe='')}/" if node else ""
            path = "/".join(urllib.parse.quote(str(r[k]), safe="") for k in ("namespace", "pod"))
            docs.append(fetch_json(f"{base}{prefix}api/v1/runs/{path}/stacks"))
    except Exception as exc:  # a CLI: say what failed, in one line
        print(f"kubectl progress stacks: {exc}", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps(json_safe(docs), indent=2, allow_nan=False))
    else:
        sys.stdout.write(format_stacks(args.job, docs, time.time()))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``kubectl progress [stacks] ...``: its exit status (141 when its reader went away)."""
    args = list(sys.argv[1:] if argv is None else argv)
    return quiet_on_closed_pipe(lambda: _main(args))


def _main(argv: list[str]) -> int:
    if argv[:1] == ["stacks"]:
        return stacks_main(argv[1:])
    p = Parser(prog="kubectl progress", description="Training jobs with their progress.")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", help="namespace (default: the kubeconfig context's)")
    scope.add_argument("-A", "--all-namespaces", action="store_true")
    _where_and_how(
        p, "--prometheus", "TPE_PROMETHEUS_URL", "Prometheus URL", "; without it, TrainJob status"
    )
    args = p.parse_args(argv)
    if not args.all_namespaces and not args.namespace:
        from ..kubernetes.client import current_namespace

        args.namespace = current_namespace()
    namespace = None if args.all_namespaces else args.namespace
    try:
        if args.prometheus:
            rows = [
                x
                for x in from_prometheus_with_age(args.prometheus)
                if namespace is None or x[0].namespace == namespace
            ]
        else:
            rows = from_kubernetes(namespace)
    except Exception as exc:  # a CLI: say what failed, in one line
        print(f"kubectl progress: {exc}", file=sys.stderr)
        return 1
    if args.output == "json":
        doc = [{**asdict(r), "age_seconds": age} for r, age in rows]
        print(json.dumps(json_safe(doc), indent=2, allow_nan=False))
    else:
        sys.stdout.write(render(rows, args.all_namespaces))
    return 0


if __name__ == "__main__":
    sys.exit(main())
