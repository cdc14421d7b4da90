"""HTTP source: GET a JSON progress endpoint per run, concurrently, on an interval.

The OpenDataHub convention is port 28080, path ``/metrics``, JSON body. Each fetch has a
timeout and a body cap; a failed fetch keeps the run's previous values and is counted.
Standalone targets come from the config file; Kubernetes mode adds one per annotated pod.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..ingest import Ingestor
from ..model import KUBEFLOW_MAX_BODY_BYTES, ReportError, RunKey, RunMeta, parse_bytes

NAME = "http"
DEFAULT_PORT = 28080
DEFAULT_PATH = "/metrics"


@dataclass(frozen=True)
class HttpTarget:
    """One endpoint to pull and the run it reports for."""

    key: RunKey
    url: str
    meta: RunMeta = field(default_factory=lambda: RunMeta(source=NAME))


Fetch = Callable[[str, float, int], bytes]


def fetch_url(url: str, timeout: float, max_bytes: int) -> bytes:
    """GET ``url`` and return at most ``max_bytes``; raises ReportError on any failure."""
    if not url.startswith(("http://", "https://")):
        raise ReportError("invalid_url", f"{url}: only http and https are fetched")
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body: bytes = resp.read(max_bytes + 1)
    except urllib.error.HTTPError as exc:
        raise ReportError("http_status", f"{url}: HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = "timeout" if "timed out" in str(exc) else "unreachable"
        raise ReportError(reason, f"{url}: {exc}") from None
    if len(body) > max_bytes:
        raise ReportError("oversize", f"{url}: body exceeds {max_bytes} bytes")
    return body


class HttpSource:
    """Pulls every target once per :meth:`poll`, with at most ``workers`` at a time."""

    name = NAME

    def __init__(
        self,
        targets: Callable[[], Sequence[HttpTarget]],
        ingestor: Ingestor,
        timeout: float = 2.0,
        workers: int = 8,
        fetch: Fetch = fetch_url,
        max_bytes: int = KUBEFLOW_MAX_BODY_BYTES,
    ) -> None:
        self.targets = targets
        self.ingestor = ingestor
        self.timeout = timeout
        self.fetch = fetch
        self.max_bytes = max_bytes
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="http-source")
        self._present = ingestor.presence()

    def _pull(self, target: HttpTarget) -> bool:
        try:
            body = self.fetch(target.url, self.timeout, self.max_bytes)
            parsed = parse_bytes(body, self.ingestor.clock(), self.max_bytes)
        except ReportError as err:
            self.ingestor.reject(NAME, err)
            return False
        self.ingestor.accept(NAME, target.key, parsed, target.meta)
        return True

    def poll(self) -> None:
        """Pull all targets concurrently and wait for them (each bounded by the timeout)."""
        targets = list(self.targets())
        results = list(self._pool.map(self._pull, targets))
        self._present.saw(t.key for t in targets)
        self.ingestor.source_up(NAME, all(results) if results else True)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
