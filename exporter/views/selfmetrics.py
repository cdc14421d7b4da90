"""The exporter's own health, ``training_exporter_*``: what it received and dropped, its
sources, its memory budgets, its HTTP connections.

Apart from the per-run catalog (:mod:`exporter.views.catalog`) because it reads the
exporter's counters, not the runs: a scrape of it costs the same at 10 or 10,000 runs.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .. import __version__
from ..core.budgets import budgets
from ..core.tracker import Tracker
from ..plumbing.httpd import HTTPStats
from ..plumbing.stats import ExporterStats


class ExporterCollector(Collector):
    """The exporter's own health: ``training_exporter_*``."""

    def __init__(
        self, tracker: Tracker, stats: ExporterStats, http: HTTPStats | None = None
    ) -> None:
        self.tracker = tracker
        self.stats = stats
        self.http = http

    def _memory(self) -> Iterator[Metric]:
        """Each kind of thing held under a byte budget: its budget and what it uses."""
        budget = GaugeMetricFamily(
            "training_exporter_memory_budget_bytes",
            "Bytes a kind of thing held may use; beyond, the oldest go (counted in drops).",
            labels=["kind"],
        )
        used = GaugeMetricFamily(
            "training_exporter_memory_used_bytes",
            "Bytes a kind of thing held uses now, as the exporter estimates them.",
            labels=["kind"],
        )
        in_use = self.tracker.memory_used()
        for b in budgets(self.tracker.config.max_runs):
            budget.add_metric([b.kind], float(b.bytes))
            if b.kind in in_use:  # views: bounded by the pool, not counted as they go
                used.add_metric([b.kind], float(in_use[b.kind]))
        yield budget
        yield used

    def collect(self) -> Iterator[Metric]:
        snap = self.stats.snapshot()
        build = GaugeMetricFamily(
            "training_exporter_build_info",
            "Exporter version; value is always 1.",
            labels=["version"],
        )
        build.add_metric([__version__], 1.0)
        yield build
        reports = CounterMetricFamily(
            "training_exporter_reports",
            "Reports received, by source and outcome (accepted or rejected).",
            labels=["source", "outcome"],
        )
        for (source, outcome), n in sorted(snap.reports.items()):
            reports.add_metric([source, outcome], n)
        yield reports
        drops = CounterMetricFamily(
            "training_exporter_drops",
            "Reports or values discarded or clamped, by source and reason.",
            labels=["source", "reason"],
        )
        for (source, reason), n in sorted(snap.drops.items()):
            drops.add_metric([source, reason], n)
        yield drops
        yield from self._memory()
        up = GaugeMetricFamily(
            "training_exporter_source_up",
            "1 if the source's last poll or serve loop succeeded (the reason is on /readyz).",
            labels=["source"],
        )
        for source, ok in sorted(snap.source_up.items()):
            up.add_metric([source], 1.0 if ok else 0.0)
        yield up
        duration = GaugeMetricFamily(
            "training_exporter_source_poll_duration_seconds",
            "How long the source's last poll took; each source polls on its own schedule.",
            labels=["source"],
        )
        success = GaugeMetricFamily(
            "training_exporter_source_poll_success",
            "1 if the source's last poll completed without an error and left the source up.",
            labels=["source"],
        )
        for source, (seconds, ok) in sorted(snap.polls.items()):
            duration.add_metric([source], seconds)
            success.add_metric([source], 1.0 if ok else 0.0)
        yield duration
        yield success
        matches = CounterMetricFamily(
            "training_exporter_log_matches",
            "Log lines recognized as progress, by the parser that matched.",
            labels=["parser"],
        )
        for parser, n in sorted(snap.log_matches.items()):
            matches.add_metric([parser], n)
        yield matches
        unrenderable = GaugeMetricFamily(
            "training_exporter_runs_unrenderable",
            "Runs left out of the last render (a label value that cannot be encoded).",
        )
        unrenderable.add_metric([], snap.unrenderable)
        yield unrenderable
        if snap.state_save_failures is not None:
            failures = CounterMetricFamily(
                "training_exporter_state_save_failures",
                "Writes of the state file that failed (the runs since the last success would "
                "be lost on a restart).",
            )
            failures.add_metric([], snap.state_save_failures)
            yield failures
            if snap.state_last_save is not None:
                last = GaugeMetricFamily(
                    "training_exporter_state_last_save_timestamp_seconds",
                    "When the state file was last written successfully (Unix seconds).",
                )
                last.add_metric([], snap.state_last_save)
                yield last
        runs = GaugeMetricFamily("training_exporter_runs_tracked", "Runs currently tracked.")
        runs.add_metric([], len(self.tracker))
        yield runs
        if self.http is not None:
            yield from _http_families(self.http)


def _http_families(http: HTTPStats) -> Iterator[Metric]:
    """The HTTP server's connection counters (exporter/plumbing/httpd.py)."""
    open_, rejected, disconnects = http.snapshot()
    conns = GaugeMetricFamily("training_exporter_http_connections", "HTTP connections open now.")
    conns.add_metric([], open_)
    yield conns
    refused = CounterMetricFamily(
        "training_exporter_http_rejected",
        "HTTP connections or requests refused or cut, by reason (evicted, over_capacity, "
        "header_timeout, body_timeout, write_timeout, queue_full, bad_length, ...).",
        labels=["reason"],
    )
    for reason, n in sorted(rejected.items()):
        refused.add_metric([reason], n)
    yield refused
    gone = CounterMetricFamily(
        "training_exporter_http_client_disconnects",
        "Clients that closed their connection before the answer was sent.",
    )
    gone.add_metric([], disconnects)
    yield gone
