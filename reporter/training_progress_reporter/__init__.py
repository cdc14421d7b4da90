"""Report training progress to training-progress-exporter or Kubeflow Trainer: standard
library only. The API lives in :mod:`.reporter`, the channels in :mod:`.channels`, the stack
capture in :mod:`.stackcapture` and the rank and GPU detection in :mod:`.environment`;
``reporter/assemble.py`` joins the four into one file for people who copy it into an image
(``reporter/dist/training_progress_reporter.py``). The framework callbacks in
:mod:`.transformers` and :mod:`.lightning` import their framework only when imported
themselves."""

from .channels import (
    CHANNELS,
    ENV_CHANNELS,
    ENV_KUBEFLOW_CA,
    ENV_KUBEFLOW_TOKEN,
    ENV_KUBEFLOW_URL,
    ENV_REPORT_URL,
    ENV_STATUS_FILE,
    KUBEFLOW_MARKER,
    kubeflow_body,
    write_status_file,
)
from .environment import global_rank
from .reporter import DEFAULT_HEARTBEAT_SECONDS, ENV_HEARTBEAT, ProgressReporter

__all__ = [
    "CHANNELS",
    "DEFAULT_HEARTBEAT_SECONDS",
    "ENV_CHANNELS",
    "ENV_HEARTBEAT",
    "ENV_KUBEFLOW_CA",
    "ENV_KUBEFLOW_TOKEN",
    "ENV_KUBEFLOW_URL",
    "ENV_REPORT_URL",
    "ENV_STATUS_FILE",
    "KUBEFLOW_MARKER",
    "ProgressReporter",
    "global_rank",
    "kubeflow_body",
    "write_status_file",
]
__version__ = "0.1.0"
