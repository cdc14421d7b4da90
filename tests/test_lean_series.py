"""``lean_series`` (#59, docs/metrics.md#cardinality-budget): the current state's series
only, and the waste and stall causes' counters from their first GPU-second.

What the exporter writes is checked against client_python's own rendering of the same
families (byte for byte, as for the full catalog), and every shipped promtool test is run
again on its series as a lean exporter would leave them: every zero of a state series gone
(a staleness marker where the series had a value before, as Prometheus writes when a series
leaves a scrape), every cause counter absent until it counts. The alerts, recording rules
and their expected values must not change.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from exporter.core.model import ProgressReport, RunKey, RunMeta
from exporter.core.thresholds import (
    SPECS,
    Thresholds,
    default_value,
    promql_default,
)
from exporter.daemon.config import Config, from_env
from exporter.views.catalog import JOB_LEVEL, RUN_FAMILIES, families, speaks_for_job
from exporter.views.collector import iter_runs_text, run_families

from .conftest import T0
from .rulefiles import promtool_on_rewritten_tests
from .test_collector import _Families, golden_tracker

ROOT = Path(__file__).parent.parent
DEFAULTS = {spec.metric: default_value(spec.metric) for spec in SPECS}
LEAN_FAMILIES = ("training_run_state", "training_wasted_gpu_seconds_total")


def test_lean_exports_the_current_state_alone_and_causes_once_they_count() -> None:
    tracker = golden_tracker()
    hostile = RunKey('n"s', "p\\od\nx", "jöb")
    tracker.apply(hostile, ProgressReport(step=1, metrics=(("m", 1.0),)), T0, RunMeta(rank='"0"'))
    snaps = tracker.snapshot(T0 + 300)
    lean = families(lean=True)
    assert [f.name for f in lean] == [f.name for f in RUN_FAMILIES]
    text = "".join(iter_runs_text(snaps, catalog=lean))
    full = "".join(iter_runs_text(snaps))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(run_families(snaps, lean)))
    assert text.encode() == generate_latest(registry)
    states = [line for line in text.splitlines() if line.startswith("training_run_state{")]
    assert len(states) == len(snaps) and all(line.endswith(" 1.0") for line in states)
    assert {re.search(r'state="([^"]+)"', s)[1] for s in states} == {s.state for s in snaps}  # type: ignore[index]
    for name in ("training_wasted_gpu_seconds_total{", "training_stall_gpu_seconds_total{"):
        lean_lines = [x for x in text.splitlines() if x.startswith(name)]
        full_lines = [x for x in full.splitlines() if x.startswith(name)]
        assert lean_lines == [x for x in full_lines if not x.endswith(" 0.0")]
    # A threshold only where the run's differs from the built-in default (the golden runs'
    # stall threshold is 600 s, the default 1800 s).
    for spec in SPECS:
        default = getattr(Thresholds(), spec.name) * spec.scale
        mine = [x for x in text.splitlines() if x.startswith(spec.metric + "{")]
        kept = [
            x
            for x in full.splitlines()
            if x.startswith(spec.metric + "{") and float(x.rsplit(" ", 1)[1]) != default
        ]
        assert mine == kept, spec.metric
    assert [x for x in text.splitlines() if x.startswith("training_stall_threshold_seconds{")]
    # Nothing else changes, but the job's values of a run that does not speak for its job
    # (the hostile run's rank is '"0"', not 0: test_job_values_come_from_rank_zero_alone).
    trimmed = (*LEAN_FAMILIES, "training_stall_gpu", *(spec.metric for spec in SPECS))
    silent = tuple(f"{name}{{" for name in JOB_LEVEL)
    assert [
        x
        for x in full.splitlines()
        if not x.startswith(trimmed) and not (x.startswith(silent) and 'pod="p\\\\od' in x)
    ] == [x for x in text.splitlines() if not x.startswith(trimmed)]
    assert len(text.splitlines()) < len(full.splitlines()) - 20 * len(snaps)


def test_job_values_come_from_rank_zero_alone() -> None:
    """#59: job-level values once per job. Under ``lean_series`` an 8-rank job's ranks 1-7
    export only what differs between ranks (state, step, pace, last report and step, stall,
    GPUs and their GPU-seconds, thresholds); rank 0, and a run with no rank, the job's
    values too. Without ``lean_series`` every rank exports everything."""
    from exporter.core.tracker import Tracker, TrackerConfig

    tracker = Tracker(TrackerConfig(Thresholds()))
    report = ProgressReport(
        step=10, max_steps=100, loss=1.5, eval_loss=1.7, learning_rate=1e-4,
        metrics=(("accuracy", 0.5),), tokens=1000,
    )  # fmt: skip
    for rank in ("0", "3", "", "worker-0", "worker-2"):
        key = RunKey("ml", f"llm-{rank or 'solo'}", "llm" if rank else "solo")
        tracker.apply(key, report, T0, RunMeta(rank=rank, gpus=8))
        tracker.apply(key, ProgressReport(step=20, max_steps=100, loss=1.4), T0 + 30)
    snaps = tracker.snapshot(T0 + 60)
    # An elastic PyTorchJob's first worker ("worker-0": it has no master) speaks for its job.
    speaking = {s.meta.rank for s in snaps if speaks_for_job(s)}
    assert speaking == {"0", "", "worker-0"}
    lean = "".join(iter_runs_text(snaps, catalog=families(lean=True)))
    full = "".join(iter_runs_text(snaps))

    def names(text: str, pod: str) -> set[str]:
        return {x.split("{")[0] for x in text.splitlines() if f'pod="{pod}"' in x}

    for pod in ("llm-0", "llm-solo"):
        # What lean leaves out of every run (default thresholds, causes that never counted).
        trimmed = {spec.metric for spec in SPECS} | set(LEAN_FAMILIES[1:])
        assert names(lean, pod) <= names(full, pod)
        assert names(full, pod) - names(lean, pod) <= trimmed | {"training_stall_gpu_seconds_total"}
        assert {"training_loss", "training_max_steps", "training_metric"} <= names(lean, pod)
    rank3 = names(lean, "llm-3")
    assert not rank3 & JOB_LEVEL
    assert {
        "training_run_state",
        "training_step",
        "training_last_step_timestamp_seconds",
        "training_steps_per_second",
        "training_gpus",
        "training_gpu_seconds_total",
        "training_run_info",
    } <= rank3
    assert names(full, "llm-3") & JOB_LEVEL == names(full, "llm-0") & JOB_LEVEL
    assert len(rank3) < len(names(lean, "llm-0")) - 8


def test_lean_series_is_a_setting() -> None:
    assert Config().lean_series is False
    assert from_env(Config(), {"TPE_LEAN_SERIES": "true"}).lean_series is True


def _expand(values: str) -> list[str]:
    """promtool's expanding notation, one value per evaluation step ('_' for none)."""
    out: list[str] = []
    for token in values.split():
        if token in ("_", "stale") or re.fullmatch(r"-?[0-9.e+]+|NaN|[+-]?Inf", token):
            out.append(token)
            continue
        m = re.fullmatch(r"_x(\d+)", token)
        if m:
            out += ["_"] * int(m[1])
            continue
        m = re.fullmatch(r"(-?[0-9.e]+)(?:([+-])([0-9.e]+))?x(\d+)", token)
        assert m, f"unknown promtool value {token!r}"
        start, step = float(m[1]), float(m[3] or 0) * (-1 if m[2] == "-" else 1)
        out += [repr(start + i * step) for i in range(int(m[4]) + 1)]
    return out


def _lean(values: str, default: float = 0.0) -> str:
    """A state, cause or threshold series' values as a lean exporter leaves them: a zero (a
    threshold's built-in default) is no sample (a staleness marker where the step before
    had one)."""
    out: list[str] = []
    for v in _expand(values):
        zero = v not in ("_", "stale") and float(v) == default
        if zero or v == "_":
            out.append("stale" if out and out[-1] not in ("_", "stale") else "_")
        else:
            out.append(v)
    return " ".join(out)


_LABEL = re.compile(r'(\w+)="([^"]*)"')


def _run_of(series: str) -> tuple[str, ...]:
    labels = dict(_LABEL.findall(series))
    return tuple(labels.get(k, "") for k in ("cluster", "namespace", "pod", "job_name"))


def _lean_doc(doc: dict[str, Any]) -> tuple[dict[str, Any], int]:
    changed = 0
    for test in doc["tests"]:
        # The job's values come from its rank 0 alone (a run of no known rank keeps them).
        ranks = {
            _run_of(s["series"]): dict(_LABEL.findall(s["series"])).get("rank", "")
            for s in test.get("input_series", [])
            if s["series"].startswith("training_run_info{")
        }
        kept = [
            s
            for s in test.get("input_series", [])
            if s["series"].split("{", 1)[0] not in JOB_LEVEL
            or ranks.get(_run_of(s["series"]), "") in ("", "0")
        ]
        changed += len(test.get("input_series", [])) - len(kept)
        if "input_series" in test:
            test["input_series"] = kept
        for s in test.get("input_series", []):
            if s["series"].startswith(
                ("training_run_state{", "training_wasted_gpu_seconds_total{",
                 "training_stall_gpu_seconds_total{")
            ):  # fmt: skip
                lean = _lean(str(s["values"]))
                changed += lean != " ".join(_expand(str(s["values"])))
                s["values"] = lean
            metric = s["series"].split("{", 1)[0]
            if metric in DEFAULTS:
                lean = _lean(str(s["values"]), DEFAULTS[metric])
                changed += lean != " ".join(_expand(str(s["values"])))
                s["values"] = lean
        # The one difference, and the documented cost: a cause that never counted has no
        # series in the recorded rates either (absent, not 0).
        for t in test.get("promql_expr_test", []):
            t["exp_samples"] = [
                x
                for x in t.get("exp_samples") or []
                if not (re.search(r"\bcause=", x.get("labels", "")) and float(x["value"]) == 0)
            ]
    return doc, changed


def test_every_promtool_test_passes_on_lean_series(tmp_path: Path) -> None:
    changed = 0

    def lean(doc: dict[str, Any]) -> dict[str, Any]:
        nonlocal changed
        doc, n = _lean_doc(doc)
        changed += n
        return doc

    proc, _ = promtool_on_rewritten_tests(tmp_path, lean)
    assert changed > 50  # the zeros were there to remove
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


@pytest.mark.parametrize(
    ("values", "lean"),
    [
        ("0 0 1 1 0", "_ _ 1 1 stale"),
        ("1x2 0x1", "1.0 1.0 1.0 stale _"),
        ("0+0x2 0+5x1", "_ _ _ _ 5.0"),
        ("_x2 1", "_ _ 1"),
    ],
)
def test_the_lean_rewrite_of_promtool_values(values: str, lean: str) -> None:
    assert _lean(values) == lean


def test_every_rule_and_panel_reads_a_threshold_through_its_one_fallback() -> None:
    """A threshold is read as exporter.core.thresholds writes it, with its built-in default
    for a run that exports none (lean_series), never bare: a bare read would find nothing."""
    rules = "\n".join(p.read_text() for p in sorted((ROOT / "alerts").glob("*.rules.yaml")))
    panels = "\n".join(
        p.read_text() for p in sorted((ROOT / "grafana" / "dashboards").glob("*.json"))
    )
    seen = 0
    for spec in SPECS:
        total = rules.count(spec.metric) + panels.count(spec.metric)
        # promql_beyond's form names the metric twice: its max and its unless.
        fallback = 2 * len(
            re.findall(
                re.escape(f"max by (namespace, pod, job_name) ({spec.metric}) or ((")
                + r".{1,200}?"
                + re.escape(f" unless on (namespace, pod, job_name) {spec.metric}) "),
                rules,
            )
        )
        templated = len(
            re.findall(
                re.escape(spec.metric)
                + r"\{[^}]*\}\)? or "
                + re.escape(promql_default(spec.metric)),
                rules,
            )
        )
        paneled = len(
            re.findall(
                re.escape(spec.metric)
                + r"\{[^}]*\}\) or "
                + re.escape(promql_default(spec.metric)),
                panels,
            )
        )
        # Comments name thresholds too: count only what queries read.
        comments = sum(
            line.count(spec.metric) for line in rules.splitlines() if line.lstrip().startswith("#")
        )
        assert total - comments == fallback + templated + paneled, spec.metric
        seen += fallback + templated + paneled
    assert seen >= 14
