"""Wires one exporter together: tracker, sources, collectors, server and the poll loop.

This is composition only; each piece it builds is tested on its own. Tests build an
:class:`Exporter` on port 0 with an injected clock and drive ``poll_once`` themselves.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry

from .collector import ExporterCollector, TrainingCollector
from .config import Config
from .discovery import Discovery, make_discovery
from .ingest import Ingestor
from .model import Clock
from .schedule import Scheduler
from .server import ExporterHTTPServer, ServerContext, make_server, serve_in_thread
from .sources import build_sources
from .stats import ExporterStats
from .tracker import Tracker

EXPIRY = "expiry"  # the job that retires gone and idle runs


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
        self.sources = build_sources(config, self.ingestor, self.discovery.cluster)
        self_collector = ExporterCollector(self.tracker, self.stats)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(TrainingCollector(self.tracker, clock, self.stats))
        self.registry.register(self_collector)
        self.self_registry = CollectorRegistry(auto_describe=False)
        self.self_registry.register(self_collector)
        self.stats.set_up("push", True)
        host, port = config.listen_address(self.discovery.mode)
        self.server: ExporterHTTPServer = make_server(
            host,
            port,
            ServerContext(
                registry=self.registry,
                self_registry=self.self_registry,
                tracker=self.tracker,
                ingestor=self.ingestor,
                resolver=self.discovery.resolver,
                clock=clock,
                ready=self.ready,
                stats=self.stats,
            ),
        )
        jobs: dict[str, Callable[[], None]] = {n: s.poll for n, s in self.sources.items()}
        jobs[EXPIRY] = self._expire
        self.scheduler = Scheduler(jobs, config.poll_interval, self._polled)
        self._threads: list[threading.Thread] = []

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
        """Ready once every source has been polled once."""
        if not self.scheduler.all_ran():
            return False, "starting: sources not polled yet"
        ok, detail = self.discovery.ready()
        return ok, f"{detail}; mode={self.discovery.mode} runs={len(self.tracker)}"

    def _expire(self) -> None:
        idle = self.config.push_idle_expiry if self.discovery.push_idle_expiry else None
        self.tracker.expire(self.clock(), idle)

    def _polled(self, name: str, seconds: float, ok: bool) -> None:
        if name == EXPIRY:
            return
        self.ingestor.polled(name, seconds, ok)
        if not ok:  # the source raised: count it, and say it is down
            self.ingestor.source_up(name, False)
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

    def stop(self) -> None:
        self.scheduler.stop()
        self.discovery.stop()
        self.server.shutdown()
        self.server.server_close()
        for source in self.sources.values():
            close = getattr(source, "close", None)
            if close is not None:
                close()
        for thread in self._threads:
            thread.join(timeout=5)
