"""HTTP source: GET a JSON progress endpoint per run, concurrently, on an interval.

The OpenDataHub convention is port 28080, path ``/metrics``, JSON body. Each fetch has a
total deadline and a body cap and follows no redirect; a failed fetch keeps the run's
previous values and is counted.
Standalone targets come from the config file; Kubernetes mode adds one per annotated pod.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..core.model import KUBEFLOW_MAX_BODY_BYTES, ReportError, RunKey, RunMeta
from ..core.thresholds import parse_overrides
from ..core.wire import parse_bytes
from ..plumbing.fetch import get
from ..plumbing.ingest import Ingestor
from ..plumbing.settings import ConfigError

log = logging.getLogger(__name__)

NAME = "http"
DEFAULT_PORT = 28080
DEFAULT_PATH = "/metrics"


@dataclass(frozen=True)
class HttpTarget:
    """One endpoint to pull and the run it reports for."""

    key: RunKey
    url: str
    meta: RunMeta = field(default_factory=lambda: RunMeta(source=NAME))
    interval: float = 0.0  # seconds between pulls at least (0: every poll)


Fetch = Callable[[str, float, int], bytes]


class HttpSource:
    """Pulls every target once per :meth:`poll`, with at most ``workers`` at a time."""

    name = NAME

    def __init__(
        self,
        targets: Callable[[], Sequence[HttpTarget]],
        ingestor: Ingestor,
        timeout: float = 2.0,
        workers: int = 8,
        fetch: Fetch = get,
        max_bytes: int = KUBEFLOW_MAX_BODY_BYTES,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.targets = targets
        self.ingestor = ingestor
        self.timeout = timeout
        self.fetch = fetch
        self.max_bytes = max_bytes
        self.monotonic = monotonic
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="http-source")
        self._present = ingestor.presence()
        self._next: dict[tuple[RunKey, str], float] = {}  # (run, url) -> next pull, monotonic
        # url -> why its last pull failed (warned once per url and reason, not every poll)
        self._failing: dict[str, ReportError] = {}

    def _pull(self, target: HttpTarget) -> bool:
        try:
            body = self.fetch(target.url, self.timeout, self.max_bytes)
            parsed = parse_bytes(body, self.ingestor.clock(), self.max_bytes)
        except ReportError as err:
            self.ingestor.reject(NAME, err)
            before = self._failing.get(target.url)
            self._failing[target.url] = err
            if before is None or before.reason != err.reason:
                log.warning("HTTP target %s: %s (%s)", target.url, err.message, err.reason)
            return False
        if self._failing.pop(target.url, None) is not None:
            log.warning("HTTP target %s answers again", target.url)
        self.ingestor.accept(NAME, target.key, parsed, target.meta)
        return True

    def poll(self) -> None:
        """Pull the targets that are due concurrently and wait for them (each bounded by the
        timeout); a target with an ``interval`` is pulled at most that often."""
        targets = list(self.targets())
        now = self.monotonic()
        due = [t for t in targets if self._next.get((t.key, t.url), now) <= now]
        pulled = {id(t) for t in due}
        self._next = {
            (t.key, t.url): now + t.interval if id(t) in pulled else self._next[(t.key, t.url)]
            for t in targets
            if t.interval > 0
        }
        list(self._pool.map(self._pull, due))
        self._present.seen(t.key for t in targets)
        # Down while any target's last pull failed (not only those pulled this time: a
        # target pulled every 30 s stays failed between its pulls).
        urls = {t.url for t in targets}
        self._failing = {u: e for u, e in self._failing.items() if u in urls}
        if self._failing:
            first = min(self._failing)
            more = f" (and {len(self._failing) - 1} more)" if len(self._failing) > 1 else ""
            self.ingestor.source_up(NAME, False, f"{self._failing[first].message}{more}")
        else:
            self.ingestor.source_up(NAME, True)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def target_from_setting(raw: Any, namespace: str) -> HttpTarget:
    """One item of the ``http_targets`` setting (name, url or host/port/path, namespace,
    job_name, gpus, thresholds) as a target; ConfigError says what is wrong."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        raise ConfigError("http_targets: each target needs a name and a url (or host)")
    name = raw["name"]
    ns = raw.get("namespace", namespace)
    url = raw.get("url")
    if url is None:
        if not isinstance(raw.get("host"), str):
            raise ConfigError(f"http_targets[{name}]: give url, or host (port and path optional)")
        port = int(raw.get("port", DEFAULT_PORT))
        url = f"http://{raw['host']}:{port}{raw.get('path', DEFAULT_PATH)}"
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ConfigError(f"http_targets[{name}]: url must be http:// or https://")
    problems: list[str] = []
    thresholds = parse_overrides(raw["thresholds"], problems.append) if "thresholds" in raw else ()
    if problems:
        raise ConfigError(f"http_targets[{name}]: invalid thresholds ({', '.join(problems)})")
    meta = RunMeta(
        source="http",
        gpus=float(raw["gpus"]) if raw.get("gpus") is not None else None,
        thresholds=thresholds,
    )
    return HttpTarget(RunKey(str(ns), name, str(raw.get("job_name", name))), url, meta)
