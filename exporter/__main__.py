"""``python -m exporter``: the same command line as ``training-progress-exporter``."""

from __future__ import annotations

from .commands.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
