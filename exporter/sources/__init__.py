"""Sources: one module per way a report arrives, and the explicit registry of them.

A polled source has ``name`` and ``poll()``; the push source is served by the HTTP server.
Adding a source means one module plus one entry in :data:`POLLED_SOURCES`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..config import Config
    from ..ingest import Ingestor


class PolledSource(Protocol):
    """A source the exporter polls on an interval."""

    name: str

    def poll(self) -> None: ...


SourceFactory = Callable[["Config", "Ingestor"], "PolledSource | None"]


def _status_dir(config: Config, ingestor: Ingestor) -> PolledSource | None:
    from .file import StatusDirSource

    if not config.status_dir:
        return None
    return StatusDirSource(config.status_dir, config.namespace, ingestor)


def _http_targets(config: Config, ingestor: Ingestor) -> PolledSource | None:
    from .http import HttpSource

    if not config.http_targets:
        return None
    targets = tuple(config.http_targets)
    return HttpSource(lambda: targets, ingestor, timeout=config.http_timeout)


def _logs(config: Config, ingestor: Ingestor) -> PolledSource | None:
    from ..logs.source import LogSource, standalone_targets

    if not config.log_paths:
        return None
    return LogSource(standalone_targets(config.log_paths, config.namespace), ingestor)


# name -> factory; the factory returns None when the config does not enable the source.
POLLED_SOURCES: dict[str, SourceFactory] = {
    "file": _status_dir,
    "http": _http_targets,
    "log": _logs,
}
