"""training-progress-exporter: training progress as Prometheus metrics.

Importing this package imports nothing beyond the standard library, so the stdlib-only
reporter (``exporter.reporter``) works where the exporter's dependencies are absent.
"""

__version__ = "0.1.0"
