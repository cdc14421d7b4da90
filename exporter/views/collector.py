"""The per-run catalog (:mod:`exporter.views.catalog`), built fresh on every scrape, through
two renderers of one table:

* :func:`run_families` builds prometheus_client ``Metric`` objects (used by the custom
  collector, so OpenMetrics and any other client_python encoder work);
* :func:`iter_runs_text` writes the Prometheus text format directly, in chunks. With 1,000 runs the
  catalog is ~27,000 series, and client_python's generic encoder needs ~300 ms for them; the
  direct writer escapes each run's labels once and needs a fraction of that. A test keeps
  its output byte-identical to client_python's encoder.

Nothing is kept between scrapes: a run that leaves the tracker leaves ``/metrics``.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..core.model import Clock
from ..core.run.snapshot import RunSnapshot
from ..core.tracker import Tracker
from ..plumbing.stats import ExporterStats
from .catalog import RUN_FAMILIES, Family, escape_value, format_value, label_text


def _base(s: RunSnapshot) -> tuple[tuple[str, str], ...]:
    return (("namespace", s.key.namespace), ("pod", s.key.pod), ("job_name", s.key.job_name))


def renderable(snapshots: list[RunSnapshot]) -> tuple[list[RunSnapshot], int]:
    """The runs every view can render, and how many it cannot.

    Sources clean the names they derive (``model.run_name``, ``clean_label``), so this is
    the last line: a run with a label value that does not encode as UTF-8 (a lone surrogate
    from a file name that is not UTF-8) is left out, never the whole scrape or page.
    """
    ok = [s for s in snapshots if can_render(s)]
    return ok, len(snapshots) - len(ok)


def can_render(s: RunSnapshot) -> bool:
    """Whether every label value of the run encodes (see :func:`renderable`)."""
    m = s.meta
    try:
        for value in (
            *s.key,
            m.job_kind,
            m.framework,
            m.source,
            m.node,
            m.rank,
            m.container,
            m.trial,
            m.experiment,
        ):
            value.encode("utf-8")
        for name, _ in s.metrics:
            name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def run_families(
    snapshots: list[RunSnapshot], catalog: tuple[Family, ...] = RUN_FAMILIES
) -> list[Metric]:
    """The per-run families as client_python ``Metric`` objects, in catalog order."""
    out: list[Metric] = []
    for fam in catalog:
        metric: Metric
        if fam.kind == "counter":
            metric = CounterMetricFamily(fam.name[: -len("_total")], fam.help)
        else:
            metric = GaugeMetricFamily(fam.name, fam.help)
        for s in snapshots:
            base = _base(s)
            for extra, value in fam.samples(s):
                metric.add_sample(fam.name, dict(base + extra), value)
        out.append(metric)
    return out


# Runs per chunk of a streamed body: small enough that a chunk of the largest family (32
# custom metrics a run) stays around a megabyte, large enough that chunking costs nothing.
CHUNK_RUNS = 256


def iter_runs_text(
    snapshots: list[RunSnapshot],
    chunk_runs: int = CHUNK_RUNS,
    openmetrics: bool = False,
    catalog: tuple[Family, ...] = RUN_FAMILIES,
) -> Iterator[str]:
    """The per-run families in the Prometheus text format 0.0.4 (or, with ``openmetrics``,
    OpenMetrics 1.0 without its ``# EOF``), written directly, in chunks of at most
    ``chunk_runs`` runs of one family: a body is streamed, never held. The two formats
    differ here only in a counter's family name (OpenMetrics names it without ``_total``)."""
    bases = [_base(s) for s in snapshots]
    escaped = [
        (escape_value(ns), escape_value(pod), escape_value(job))
        for (_, ns), (_, pod), (_, job) in bases
    ]
    label_texts = [f'job_name="{job}",namespace="{ns}",pod="{pod}"}} ' for ns, pod, job in escaped]
    for fam in catalog:
        family = fam.name
        if openmetrics and fam.kind == "counter":
            family = family.removesuffix("_total")
        yield f"# HELP {family} {fam.help}\n# TYPE {family} {fam.kind}\n"
        prefix = fam.name + "{"
        get = fam.value
        for lo in range(0, len(snapshots), chunk_runs):
            hi = lo + chunk_runs
            runs = snapshots[lo:hi]
            if fam.text is not None:
                yield "".join(fam.text(fam.name, runs, escaped[lo:hi]))
            elif get is not None:
                yield "".join(
                    f"{prefix}{lt}{format_value(v)}\n"
                    for lt, v in zip(label_texts[lo:hi], map(get, runs), strict=True)
                    if v is not None
                )
            else:
                yield "".join(
                    f"{prefix}{label_text(base + extra)}}} {format_value(value)}\n"
                    for s, base in zip(runs, bases[lo:hi], strict=True)
                    for extra, value in fam.samples(s)
                )


def render_runs_text(snapshots: list[RunSnapshot]) -> str:
    """The per-run families in the Prometheus text format 0.0.4, as one string."""
    return "".join(iter_runs_text(snapshots))


class TrainingCollector(Collector):
    """Per-run series for every tracked run, from a fresh tracker snapshot each scrape."""

    def __init__(
        self,
        tracker: Tracker,
        clock: Clock,
        stats: ExporterStats | None = None,
        catalog: tuple[Family, ...] = RUN_FAMILIES,
    ) -> None:
        self.tracker = tracker
        self.clock = clock
        self.stats = stats
        self.catalog = catalog

    def collect(self) -> Iterator[Metric]:
        snapshots, skipped = renderable(self.tracker.snapshot(self.clock()))
        if self.stats is not None:
            self.stats.set_unrenderable(skipped + self.tracker.failed_last_pass)
        yield from run_families(snapshots, self.catalog)
