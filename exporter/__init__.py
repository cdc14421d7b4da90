"""training-progress-exporter: training progress as Prometheus metrics.

Importing this package imports nothing beyond the standard library. The stdlib-only reporter
for training code is its own distribution, ``training-progress-reporter``
(``import training_progress_reporter``), which this package depends on.
"""

__version__ = "0.1.0"
