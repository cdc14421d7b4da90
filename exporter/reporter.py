"""Deprecated: the reporter is now its own distribution, ``training-progress-reporter``,
imported as ``training_progress_reporter``. This alias goes away in the next release."""

from __future__ import annotations

import warnings

from training_progress_reporter.channels import *  # noqa: F403
from training_progress_reporter.channels import KUBEFLOW_MARKER
from training_progress_reporter.environment import *  # noqa: F403
from training_progress_reporter.reporter import *  # noqa: F403
from training_progress_reporter.stackcapture import *  # noqa: F403

STDOUT_MARKER = KUBEFLOW_MARKER  # its old name

warnings.warn(
    "exporter.reporter is deprecated: install training-progress-reporter and import "
    "training_progress_reporter instead",
    DeprecationWarning,
    stacklevel=2,
)
