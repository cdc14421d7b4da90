"""Wires one exporter together: tracker, sources, collectors, server and the poll loop.

This is composition only; each piece it builds is tested on its own. Tests build an
:class:`Exporter` on port 0 with an injected clock and drive ``poll_once`` themselves.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry

from ..core.model import KUBEFLOW_MAX_BODY_BYTES, Clock
from ..core.tracker import Tracker
from ..plumbing.discovery import Discovery
from ..plumbing.httpd import HTTPServer, HTTPStats, serve_in_thread
from ..plumbing.httpmessages import ConnectionLimits
from ..plumbing.ingest import Ingestor
from ..plumbing.schedule import Scheduler
from ..plumbing.stats import ExporterStats
from ..sources.forward import Forwarder
from ..views.catalog import families
from ..views.collector import TrainingCollector
from ..views.selfmetrics import ExporterCollector
from .config import Config
from .persist import StateKeeper
from .server import ServerContext, make_server
from .wiring import SINKS, SOURCES, build, make_discovery

EXPIRY = "expiry"  # the job that retires gone and idle runs
LOG_POLL_INTERVAL = 0.5


class Exporter:
    """A running exporter: call :meth:`start`, then :meth:`stop`."""

    def __init__(
        self, config: Config, clock: Clock = time.time, discovery: Discovery | None = None
    ) -> None:
        self.config = config
        self.clock = clock
        self.tracker = Tracker(config.tracker_config())
        self.stats = ExporterStats()
        self.ingestor = Ingestor(self.tracker, self.stats, clock)
        self.discovery = discovery or make_discovery(config, self.ingestor)
        cluster = self.discovery.cluster
        self.sources = build(SOURCES, config, self.ingestor, cluster)
        self.sinks = build(SINKS, config, self.ingestor, cluster)
        self.http_stats = HTTPStats()
        self_collector = ExporterCollector(self.tracker, self.stats, self.http_stats)
        self.registry = CollectorRegistry(auto_describe=False)
        catalog = families(lean=config.lean_series)
        self.registry.register(TrainingCollector(self.tracker, clock, self.stats, catalog))
        self.registry.register(self_collector)
        self.self_registry = CollectorRegistry(auto_describe=False)
        self.self_registry.register(self_collector)
        self.stats.set_up("push", True)
        host, port = config.listen_address(self.discovery.mode)
        self.server: HTTPServer = make_server(
            host,
            port,
            ServerContext(
                registry=self.registry,
                self_registry=self.self_registry,
                tracker=self.tracker,
                ingestor=self.ingestor,
                resolver=self.discovery.resolver,
                reader=self.discovery.reader,
                read_guard=self.discovery.read_guard,
                clock=clock,
                ready=self.ready,
                stats=self.stats,
                catalog=catalog,
                forwarder=Forwarder(config.kubeflow_forward_url, config.kubeflow_forward_ca)
                if config.kubeflow_forward_url
                else None,
            ),
            limits=ConnectionLimits(
                max_connections=config.http_max_connections,
                header_timeout=config.http_read_timeout,
                body_timeout=config.http_read_timeout,
                max_body_bytes=KUBEFLOW_MAX_BODY_BYTES,
            ),
            stats=self.http_stats,
        )
        # Restore before any source polls; the socket is bound already, so pushes that
        # arrive meanwhile wait in its backlog instead of being refused.
        self.state: StateKeeper | None = None
        self._settled = True
        if config.state_file:
            self.state = StateKeeper(
                config.state_file, self.tracker, clock, config.state_interval, self.stats
            )
            self._settled = self.state.restore() == 0
        polled = {**self.sources, **self.sinks}
        jobs: dict[str, Callable[[], None]] = {n: s.poll for n, s in polled.items()}
        jobs[EXPIRY] = self._expire
        # Logs are read twice as often (at most every 0.5 s): a bar frame a job just drew is
        # then on /metrics within a second, and a poll of unchanged logs costs a stat.
        self.scheduler = Scheduler(
            jobs,
            config.poll_interval,
            self._polled,
            intervals={"log": min(config.poll_interval, LOG_POLL_INTERVAL)},
        )
        self._threads: list[threading.Thread] = []
        self._stopped = False

    @property
    def url(self) -> str:
        address, port = self.server.server_address[:2]
        host = str(address)
        if host in ("0.0.0.0", ""):
            host = "127.0.0.1"
        elif ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{port}"

    def ready(self) -> tuple[bool, str]:
        """Ready once every source has been polled once. A source that is down (a status
        directory that does not exist, a target nobody answers at) does not make the
        exporter unready (pushes and the other sources still work), but the detail says
        which and why."""
        if not self.scheduler.all_ran():
            return False, "starting: sources not polled yet"
        ok, detail = self.discovery.ready()
        down = self.stats.snapshot().source_down_reasons or {}
        said = "".join(f"; source {name} down: {why}" for name, why in sorted(down.items()))
        return ok, f"{detail}; mode={self.discovery.mode} runs={len(self.tracker)}{said}"

    def _expire(self) -> None:
        idle = self.config.push_idle_expiry if self.discovery.push_idle_expiry else None
        self.tracker.expire(self.clock(), idle)

    def _settle(self) -> None:
        """Once every source has looked and discovery is in sync, a restored run that no one
        saw again went away while the exporter was down. A standalone push has nobody to
        see it: its idle expiry decides."""
        if self._settled or not self.scheduler.all_ran() or not self.discovery.ready()[0]:
            return
        self._settled = True
        push_expires = self.discovery.push_idle_expiry
        self.tracker.settle_restored(
            self.clock(), keep=lambda meta: push_expires and meta.source == "push"
        )

    def _polled(self, name: str, seconds: float, ok: bool) -> None:
        self._settle()
        if name == EXPIRY:
            return
        self.ingestor.polled(name, seconds, ok)
        if not ok:  # the source raised: count it, and say it is down
            self.ingestor.source_up(name, False, "its last poll raised an error (see the log)")
            self.ingestor.drop(name, "poll_error")

    def poll_once(self) -> None:
        """Poll every source once, then expire runs past retention (tests drive time)."""
        self.scheduler.run_all_once()

    def start(self, poll_loop: bool = True) -> None:
        """Serve HTTP; also poll each source on its own thread unless ``poll_loop`` is False
        (tests then call :meth:`poll_once` themselves)."""
        self._threads.append(serve_in_thread(self.server))
        self.discovery.start()
        if poll_loop:
            self.scheduler.start()
            if self.state is not None:
                self.state.start()

    def stop(self) -> None:
        """Stop serving and polling; the state file (if any) is written one last time.
        Stopping a stopped exporter does nothing (a test's fixture stops what it started)."""
        if self._stopped:
            return
        self._stopped = True
        self.scheduler.stop()
        self.discovery.stop()
        self.server.shutdown()
        self.server.server_close()
        if self.state is not None:
            self.state.stop()
        for source in [*self.sources.values(), *self.sinks.values()]:
            close = getattr(source, "close", None)
            if close is not None:
                close()
        for thread in self._threads:
            thread.join(timeout=5)
