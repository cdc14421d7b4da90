"""Report training progress to training-progress-exporter or Kubeflow Trainer: standard
library only. The reporter lives in :mod:`.reporter` (one file, which also runs copied alone
into an image); the framework callbacks in :mod:`.transformers` and :mod:`.lightning` import
their framework only when imported themselves."""

from .reporter import (
    CHANNELS,
    DEFAULT_HEARTBEAT_SECONDS,
    ENV_CHANNELS,
    ENV_HEARTBEAT,
    ENV_KUBEFLOW_CA,
    ENV_KUBEFLOW_TOKEN,
    ENV_KUBEFLOW_URL,
    ENV_REPORT_URL,
    ENV_STATUS_FILE,
    KUBEFLOW_MARKER,
    ProgressReporter,
    global_rank,
    kubeflow_body,
    write_status_file,
)

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
