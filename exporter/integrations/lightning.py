"""Deprecated: use ``training_progress_reporter.lightning`` (the training-progress-reporter
distribution). This alias goes away in the next release."""

from __future__ import annotations

import warnings

from training_progress_reporter.lightning import *  # noqa: F403

warnings.warn(
    "exporter.integrations.lightning is deprecated: import training_progress_reporter.lightning",
    DeprecationWarning,
    stacklevel=2,
)
