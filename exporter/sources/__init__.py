"""Sources: one module per way a report arrives (push, HTTP pull, status files, forward,
TrainJob status, the node's cordon; logs have their own package, :mod:`exporter.logs`).

A polled source has ``name`` and ``poll()``; the push source is served by the HTTP server.
Which sources a config switches on is decided in one place, :mod:`exporter.daemon.wiring`.
"""

from __future__ import annotations

from typing import Protocol


class Polled(Protocol):
    """A source (or sink) the exporter polls on an interval."""

    name: str

    def poll(self) -> None: ...
