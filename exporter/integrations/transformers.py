"""Deprecated: use ``training_progress_reporter.transformers`` (the training-progress-reporter
distribution). This alias goes away in the next release."""

from __future__ import annotations

import warnings

from training_progress_reporter.transformers import *  # noqa: F403

warnings.warn(
    "exporter.integrations.transformers is deprecated: "
    "import training_progress_reporter.transformers",
    DeprecationWarning,
    stacklevel=2,
)
