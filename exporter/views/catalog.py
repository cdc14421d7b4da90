"""The metric catalog of per-run families, written out in full so that ``grep`` finds every
name and ``tests/test_catalog.py`` can check docs and rules against it: :data:`RUN_FAMILIES`,
and :func:`families`, the catalog as a ``lean_series`` exporter writes it. How one family
turns a run into samples lives here with it; :mod:`exporter.views.collector` renders them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import partial
from operator import attrgetter

from prometheus_client.utils import floatToGoString

from ..core.run.snapshot import RunSnapshot
from ..core.states import NAMES as STATE_NAMES
from ..core.thresholds import SPECS, Spec, Thresholds

RUN_LABELS = ("namespace", "pod", "job_name")

# Extra labels (beyond RUN_LABELS) and value, for each sample a family has for one run.
Samples = Callable[[RunSnapshot], Iterable[tuple[tuple[tuple[str, str], ...], float]]]


Value = Callable[[RunSnapshot], "float | int | None"]
# (metric name, snapshots, escaped (namespace, pod, job_name) per snapshot) -> lines
TextWriter = Callable[[str, list[RunSnapshot], list[tuple[str, str, str]]], list[str]]


@dataclass(frozen=True)
class Family:
    """One per-run metric family. ``name`` is the exposed name (counters end in _total).

    Most families are one optional number per run (``value``); the others list samples
    with extra labels (``samples``).
    """

    name: str
    kind: str  # "gauge" or "counter"
    help: str
    samples: Samples
    value: Value | None = None
    # Direct text writer for families with extra labels, for speed; must produce exactly
    # what the generic path would (tests/test_collector.py checks it byte for byte).
    text: TextWriter | None = None


def _value(get: Value) -> tuple[Samples, Value]:
    """A family that is one optional number per run: its samples function and getter."""

    def samples(s: RunSnapshot) -> Iterable[tuple[tuple[tuple[str, str], ...], float]]:
        v = get(s)
        return () if v is None else (((), float(v)),)

    return samples, get


def _scaled(name: str, scale: float) -> tuple[Samples, Value]:
    """A threshold's gauge: its value times ``scale`` (its base unit)."""
    get = attrgetter(f"thresholds.{name}")
    if scale == 1.0:
        return _value(get)
    return _value(lambda s: get(s) * scale)


def _scaled_unless_default(name: str, scale: float) -> tuple[Samples, Value]:
    """A threshold's gauge only where the run's value is not the built-in default
    (``Thresholds()``: the value the rules and views fall back to without the series)."""
    get = attrgetter(f"thresholds.{name}")
    default = getattr(Thresholds(), name)
    return _value(lambda s: None if get(s) == default else get(s) * scale)


def _info(s: RunSnapshot) -> Iterable[tuple[tuple[tuple[str, str], ...], float]]:
    m = s.meta
    extra = (
        ("job_kind", m.job_kind),
        ("framework", m.framework),
        ("source", m.source),
        ("node", m.node),
        ("rank", m.rank),
        ("container", m.container),
        ("trial", m.trial),
        ("experiment", m.experiment),
    )
    return ((extra, 1.0),)


def _info_text(
    name: str, snapshots: list[RunSnapshot], escaped: list[tuple[str, str, str]]
) -> list[str]:
    out = []
    for s, (ns, pod, job) in zip(snapshots, escaped, strict=True):
        m = s.meta
        out.append(
            f'{name}{{container="{escape_value(m.container)}",experiment="{escape_value(m.experiment)}",'
            f'framework="{escape_value(m.framework)}",'
            f'job_kind="{escape_value(m.job_kind)}",job_name="{job}",namespace="{ns}",'
            f'node="{escape_value(m.node)}",pod="{pod}",rank="{escape_value(m.rank)}",'
            f'source="{escape_value(m.source)}",trial="{escape_value(m.trial)}"}} 1.0\n'
        )
    return out


def _custom_text(
    name: str, snapshots: list[RunSnapshot], escaped: list[tuple[str, str, str]]
) -> list[str]:
    out: list[str] = []
    for s, (ns, pod, job) in zip(snapshots, escaped, strict=True):
        if s.metrics:
            head = f'{name}{{job_name="{job}",metric="'
            tail = f'",namespace="{ns}",pod="{pod}"}} '
            out += [f"{head}{escape_value(n)}{tail}{format_value(v)}\n" for n, v in s.metrics]
    return out


def _run_state(
    s: RunSnapshot, current_only: bool = False
) -> Iterable[tuple[tuple[tuple[str, str], ...], float]]:
    """Every state's series, 1 for the run's (``current_only``, lean_series: that one)."""
    names = (s.state,) if current_only else STATE_NAMES
    return (((("state", name),), 1.0 if name == s.state else 0.0) for name in names)


def _failure(s: RunSnapshot) -> Iterable[tuple[tuple[tuple[str, str], ...], float]]:
    return () if s.failure is None else (((("reason", s.failure),), 1.0),)


def _run_state_text(
    name: str,
    snapshots: list[RunSnapshot],
    escaped: list[tuple[str, str, str]],
    current_only: bool = False,
) -> list[str]:
    out: list[str] = []
    for s, (ns, pod, job) in zip(snapshots, escaped, strict=True):
        head = f'{name}{{job_name="{job}",namespace="{ns}",pod="{pod}",state="'
        names = (s.state,) if current_only else STATE_NAMES
        out += [f'{head}{state}"}} {"1.0" if state == s.state else "0.0"}\n' for state in names]
    return out


def _wasted(
    s: RunSnapshot, counted_only: bool = False
) -> Iterable[tuple[tuple[tuple[str, str], ...], float]]:
    """Each waste cause's counter (``counted_only``, lean_series: once it has counted)."""
    return (
        ((("cause", cause),), value)
        for cause, value in s.wasted_gpu_seconds
        if value > 0 or not counted_only
    )


def _wasted_text(
    name: str,
    snapshots: list[RunSnapshot],
    escaped: list[tuple[str, str, str]],
    counted_only: bool = False,
) -> list[str]:
    out: list[str] = []
    for s, (ns, pod, job) in zip(snapshots, escaped, strict=True):
        tail = f'",job_name="{job}",namespace="{ns}",pod="{pod}"}} '
        out += [
            f'{name}{{cause="{c}{tail}{format_value(v)}\n'
            for c, v in s.wasted_gpu_seconds
            if v > 0 or not counted_only
        ]
    return out


def _stall(s: RunSnapshot) -> Iterable[tuple[tuple[tuple[str, str], ...], float]]:
    return (
        (
            (
                ("rank", d.rank),
                ("cause", d.cause),
                ("op", d.op),
                ("frame", d.frame),
                ("source", d.source),
            ),
            1.0,
        )
        for d in s.stall
    )


def _stall_seconds(
    s: RunSnapshot, counted_only: bool = False
) -> Iterable[tuple[tuple[tuple[str, str], ...], float]]:
    return (
        ((("stall_cause", cause),), value)
        for cause, value in s.stall_gpu_seconds
        if value > 0 or not counted_only
    )


def _kill_deadline(s: RunSnapshot) -> Iterable[tuple[tuple[tuple[str, str], ...], float]]:
    at = s.meta.kill_deadline_timestamp
    return () if at is None else (((("kind", s.meta.kill_deadline_kind),), at),)


def _miss(s: RunSnapshot) -> Iterable[tuple[tuple[tuple[str, str], ...], float]]:
    return (((("deadline", kind),), p) for kind, p in s.deadline_miss_probability)


def _needed(unit: str) -> Samples:
    """The sizes needed for each deadline, where the run's size is counted in ``unit``."""

    def samples(s: RunSnapshot) -> Iterable[tuple[tuple[tuple[str, str], ...], float]]:
        if s.size_unit != unit:
            return ()
        return (
            ((("deadline", kind), ("basis", s.scaling_basis)), float(n))
            for kind, n in s.deadline_size_needed
        )

    return samples


def _custom(s: RunSnapshot) -> Iterable[tuple[tuple[tuple[str, str], ...], float]]:
    return (((("metric", name),), value) for name, value in s.metrics)


RUN_FAMILIES: tuple[Family, ...] = (
    Family("training_run_info", "gauge",
           "Information about a training run; value is always 1.", _info, text=_info_text),
    Family("training_run_state", "gauge",
           "The run's state: 1 for the state it is in, 0 for the others (docs/metrics.md).",
           _run_state, text=_run_state_text),
    Family("training_run_failure_info", "gauge",
           "Why a failed run failed, where its log ended in a traceback (reason: the "
           "exception, bounded); value is always 1.", _failure),
    Family("training_run_state_since_timestamp_seconds", "gauge",
           "Unix time the run entered its current state.",
           *_value(attrgetter("state_since"))),
    Family("training_step", "gauge", "Current global training step.",
           *_value(attrgetter("step"))),
    Family("training_max_steps", "gauge", "Planned number of global steps.",
           *_value(attrgetter("max_steps"))),
    Family("training_epoch", "gauge", "Current (fractional) epoch.",
           *_value(attrgetter("epoch"))),
    Family("training_max_epochs", "gauge", "Planned number of epochs.",
           *_value(attrgetter("max_epochs"))),
    Family("training_progress_ratio", "gauge", "Training progress from 0 to 1.",
           *_value(attrgetter("progress"))),
    Family("training_eta_seconds", "gauge", "Estimated seconds until training completes.",
           *_value(attrgetter("eta_seconds"))),
    Family("training_eta_timestamp_seconds", "gauge",
           "Predicted Unix time of completion (stays valid between scrapes).",
           *_value(attrgetter("eta_timestamp"))),
    Family("training_eta_lower_seconds", "gauge",
           "Low end of the ETA's 80 % band, from the run's own record of being wrong.",
           *_value(attrgetter("eta_lower_seconds"))),
    Family("training_eta_upper_seconds", "gauge",
           "High end of the ETA's 80 % band, from the run's own record of being wrong.",
           *_value(attrgetter("eta_upper_seconds"))),
    Family("training_steps_per_second", "gauge",
           "Recent training throughput in steps per second; 0 once the step stops advancing.",
           *_value(attrgetter("steps_per_second"))),
    Family("training_typical_steps_per_second", "gauge",
           "The run's typical pace, which the degraded state is judged against.",
           *_value(attrgetter("typical_steps_per_second"))),
    Family("training_attempt", "gauge",
           "The run's current attempt: 1, then +1 at each re-run, restart or resume.",
           *_value(attrgetter("attempt"))),
    Family("training_attempt_start_timestamp_seconds", "gauge",
           "Unix time the run's current attempt began.",
           *_value(attrgetter("attempt_start"))),
    Family("training_loss", "gauge", "Latest training loss (NaN or Inf when diverged).",
           *_value(attrgetter("loss"))),
    Family("training_eval_loss", "gauge", "Latest evaluation loss.",
           *_value(attrgetter("eval_loss"))),
    Family("training_learning_rate", "gauge", "Latest learning rate.",
           *_value(attrgetter("learning_rate"))),
    Family("training_grad_norm", "gauge", "Latest gradient norm.",
           *_value(attrgetter("grad_norm"))),
    Family("training_best_loss", "gauge",
           "Best loss so far (evaluation loss where reported).",
           *_value(attrgetter("best_loss"))),
    Family("training_start_timestamp_seconds", "gauge",
           "Unix time the run was first seen (its first report).",
           *_value(attrgetter("first_report_timestamp"))),
    Family("training_last_report_timestamp_seconds", "gauge",
           "Unix time of the last report of any kind.",
           *_value(attrgetter("last_report_timestamp"))),
    Family("training_last_step_timestamp_seconds", "gauge",
           "Unix time the step (or progress) last advanced.",
           *_value(attrgetter("last_step_timestamp"))),
    Family("training_last_improvement_timestamp_seconds", "gauge",
           "Unix time the best loss last improved.",
           *_value(attrgetter("last_improvement_timestamp"))),
    Family("training_gpus", "gauge", "GPUs allocated to the run's pod.",
           *_value(attrgetter("gpus"))),
    Family("training_deadline_timestamp_seconds", "gauge",
           "Unix time by which the run should finish, from its annotation.",
           *_value(attrgetter("deadline_timestamp"))),
    Family("training_kill_deadline_timestamp_seconds", "gauge",
           "Unix time Kubernetes kills the run's job: the earliest activeDeadlineSeconds of its "
           "pod and owners, from their start (kind: whose field; "
           "docs/kubernetes.md#kill-deadlines).",
           _kill_deadline),
    Family("training_deadline_miss_probability", "gauge",
           "Probability the run finishes after its deadline (deadline: user or kill), from the "
           "ETA's calibrated band (docs/eta.md#the-chance-of-missing-a-deadline).", _miss),
    Family("training_nodes", "gauge",
           "Nodes the run's job runs on, as its spec states (a TrainJob's numNodes, a "
           "PyTorchJob's replicas...; docs/kubernetes.md#nodes-needed).",
           *_value(attrgetter("meta.nodes"))),
    Family("training_deadline_nodes_needed", "gauge",
           "Fewest nodes that finish the run by its deadline (deadline: user or kill) with the "
           "configured probability, from its pace per node (basis: history or default "
           "scaling); fewer than training_nodes is headroom.", _needed("nodes")),
    Family("training_deadline_gpus_needed", "gauge",
           "The same in GPUs, for a run with no node count (standalone, a bare pod).",
           _needed("gpus")),
    Family("training_gpu_seconds_budget", "gauge",
           "GPU-seconds the run may use (its GPU-hour budget annotation x 3600).",
           *_value(attrgetter("gpu_seconds_budget"))),
    Family("training_last_checkpoint_timestamp_seconds", "gauge",
           "Unix time of the run's last checkpoint (its reporter, callback or log said so).",
           *_value(attrgetter("last_checkpoint_timestamp"))),
    Family("training_last_checkpoint_step", "gauge",
           "Global step of the run's last checkpoint.",
           *_value(attrgetter("last_checkpoint_step"))),
    Family("training_progress_at_risk_gpu_seconds", "gauge",
           "GPU-seconds of training since the last checkpoint (or the attempt's start): what a "
           "preemption now would lose.",
           *_value(attrgetter("at_risk_gpu_seconds"))),
    Family("training_tokens_total", "counter",
           "Tokens the run has trained on (its num_input_tokens_seen, or the reporter's tokens).",
           *_value(attrgetter("tokens"))),
    Family("training_tokens_per_second", "gauge",
           "Tokens trained on per second, over the rate window; 0 while the run does not train.",
           *_value(attrgetter("tokens_per_second"))),
    Family("training_gpu_peak_flops", "gauge",
           "One of the run's GPUs' dense BF16 peak, FLOP/s (exporter/core/gpus.py; the denominator "
           "of MFU).",
           *_value(attrgetter("gpu_peak_flops"))),
    Family("training_model_flops_utilization", "gauge",
           "Model FLOPs utilization: tokens/s x the model's FLOPs per token / (GPUs x peak).",
           *_value(attrgetter("model_flops_utilization"))),
    Family("training_run_active", "gauge",
           "1 while the run's pod (or file, or target) exists; 0 while a gone run is retained.",
           *_value(lambda s: 0.0 if s.gone else 1.0)),
    # training_stall_threshold_seconds, training_plateau_window_seconds,
    # training_report_timeout_seconds, training_finished_grace_seconds,
    # training_divergence_ratio, training_throughput_drop_ratio: each run's own thresholds,
    # named once in exporter.core.thresholds.SPECS.
    *(
        Family(spec.metric, "gauge", spec.help, *_scaled(spec.name, spec.scale))
        for spec in SPECS
    ),
    Family("training_finished", "gauge", "1 once the run reported completion, else 0.",
           *_value(lambda s: 1.0 if s.finished else 0.0)),
    Family("training_metric", "gauge",
           "Any other numeric metric the run reports, capped per run.", _custom,
           text=_custom_text),
    Family("training_gpu_seconds_total", "counter",
           "GPUs times seconds the run's pod has held them.",
           *_value(attrgetter("gpu_seconds"))),
    Family("training_stalled_gpu_seconds_total", "counter",
           "GPU-seconds held while the run was stalled.",
           *_value(attrgetter("stalled_gpu_seconds"))),
    Family("training_wasted_gpu_seconds_total", "counter",
           "GPU-seconds that did not advance training, by cause (docs/promql.md#goodput).",
           _wasted, text=_wasted_text),
    Family("training_stall_info", "gauge",
           "Why a stalled run is stuck: one series per rank with stacks since its last step, "
           "with its cause and frame (docs/runbook.md#why-a-run-is-stuck); value is always 1.",
           _stall),
    Family("training_stall_gpu_seconds_total", "counter",
           "GPU-seconds held while stalled, by the stall's cause; charged once a cause is "
           "known or the stall ends (unexplained) (docs/promql.md#goodput).", _stall_seconds),
)  # fmt: skip


def _lean_threshold(spec: Spec, family: Family) -> Family:
    samples, value = _scaled_unless_default(spec.name, spec.scale)
    return replace(family, samples=samples, value=value)


# What ``lean_series`` changes, family by family. The current state alone (1 series, not
# 11, kube-state-metrics' way); each cause's counter from its first GPU-second, not from 0 (a
# counter's first sample is where increase() starts, so the GPU-seconds before it, at most
# one scrape's, are not counted); a threshold only where the run's is not the built-in
# default, which every rule and view falls back to (alerts/*.rules.yaml, exporter.commands).
_LEAN: dict[str, Callable[[Family], Family]] = {
    "training_run_state": lambda f: replace(
        f,
        samples=partial(_run_state, current_only=True),
        text=partial(_run_state_text, current_only=True),
    ),
    "training_wasted_gpu_seconds_total": lambda f: replace(
        f,
        samples=partial(_wasted, counted_only=True),
        text=partial(_wasted_text, counted_only=True),
    ),
    "training_stall_gpu_seconds_total": lambda f: replace(
        f, samples=partial(_stall_seconds, counted_only=True)
    ),
    **{spec.metric: partial(_lean_threshold, spec) for spec in SPECS},
}


# What a job has once, whichever rank says it: its plan, ETA, losses, deadlines, checkpoints,
# tokens, custom metrics. With ``lean_series`` only the job's rank 0 (or a run with no rank:
# a job of one pod) exports them; every rank keeps what differs between ranks (its state,
# step and pace, its last report and step, its stall, its GPUs and their GPU-seconds, its
# thresholds) and what adds up over ranks (GPU-seconds, waste, work at risk). Every rule
# and panel reads these by job (max by namespace, job_name) or per pod where rank 0 stands
# for the job (docs/metrics.md#cardinality-budget).
JOB_LEVEL = frozenset(
    {
        "training_max_steps",
        "training_epoch",
        "training_max_epochs",
        "training_progress_ratio",
        "training_eta_seconds",
        "training_eta_timestamp_seconds",
        "training_eta_lower_seconds",
        "training_eta_upper_seconds",
        "training_loss",
        "training_eval_loss",
        "training_learning_rate",
        "training_grad_norm",
        "training_best_loss",
        "training_last_improvement_timestamp_seconds",
        "training_deadline_timestamp_seconds",
        "training_kill_deadline_timestamp_seconds",
        "training_deadline_miss_probability",
        "training_nodes",
        "training_deadline_nodes_needed",
        "training_deadline_gpus_needed",
        "training_gpu_seconds_budget",
        "training_last_checkpoint_timestamp_seconds",
        "training_last_checkpoint_step",
        "training_tokens_total",
        "training_tokens_per_second",
        "training_gpu_peak_flops",
        "training_model_flops_utilization",
        "training_metric",
    }
)


# The ranks that speak for their job: rank 0, no rank (one pod, or a rank no source could
# tell), and a Kubeflow job's first worker (exporter.kubernetes.pods names it "worker-0").
# An elastic PyTorchJob has workers only, and a DaemonSet exporter cannot see whether a
# master runs on another node: with one, a job speaks twice (its values agree, and every
# rule reads them per job); without the first worker, a workers-only job would not at all.
SPEAKS_FOR_JOB = frozenset({"", "0", "worker-0"})


def speaks_for_job(s: RunSnapshot) -> bool:
    """Whether ``s`` exports its job's values under ``lean_series`` (:data:`SPEAKS_FOR_JOB`)."""
    return s.meta.rank in SPEAKS_FOR_JOB


def _rank_zero_only(family: Family) -> Family:
    """``family`` with nothing from the ranks that do not speak for their job."""
    samples = family.samples
    text = family.text
    get = family.value

    def some_samples(s: RunSnapshot) -> Iterable[tuple[tuple[tuple[str, str], ...], float]]:
        return samples(s) if speaks_for_job(s) else ()

    def some_text(
        name: str, runs: list[RunSnapshot], escaped: list[tuple[str, str, str]]
    ) -> list[str]:
        assert text is not None
        kept = [(s, e) for s, e in zip(runs, escaped, strict=True) if speaks_for_job(s)]
        return text(name, [s for s, _ in kept], [e for _, e in kept])

    return replace(
        family,
        samples=some_samples,
        value=None if get is None else (lambda s: get(s) if speaks_for_job(s) else None),
        text=None if text is None else some_text,
    )


def families(lean: bool = False) -> tuple[Family, ...]:
    """The per-run catalog as exported: :data:`RUN_FAMILIES`, or with ``lean`` (the
    ``lean_series`` setting) the leaner form of the families in ``_LEAN`` and the job's
    values (:data:`JOB_LEVEL`) from its rank 0 alone."""
    if not lean:
        return RUN_FAMILIES
    out = []
    for f in RUN_FAMILIES:
        f = _LEAN[f.name](f) if f.name in _LEAN else f
        out.append(_rank_zero_only(f) if f.name in JOB_LEVEL else f)
    return tuple(out)


def escape_value(value: str) -> str:
    if "\\" in value or "\n" in value or '"' in value:
        return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
    return value


def label_text(pairs: Iterable[tuple[str, str]]) -> str:
    # client_python sorts label names; so do we, to stay byte-identical.
    return ",".join(f'{k}="{escape_value(v)}"' for k, v in sorted(pairs))


def format_value(v: float | int) -> str:
    """client_python's floatToGoString, with a fast path for values below a million."""
    if -1e6 < v < 1e6:  # NaN and infinities fail this test
        return repr(float(v))
    return str(floatToGoString(v))  # type: ignore[no-untyped-call]
