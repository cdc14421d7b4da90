"""The pod and job annotations and labels the exporter and ``act`` read: names only.

One annotation prefix serves everything of ours: ``training-progress.io/``. The labels are
the workloads' own (Kubeflow Trainer, JobSet, Katib, batch Jobs); docs/kubernetes.md says
what each one means to us.
"""

from __future__ import annotations

PREFIX = "training-progress.io/"
ANNOTATION_ENABLED = PREFIX + "enabled"  # "true" opts a pod in, "false" opts it out
ANNOTATION_JOB = PREFIX + "job-name"
ANNOTATION_DEADLINE = PREFIX + "deadline"  # RFC 3339
ANNOTATION_BUDGET = PREFIX + "gpu-hours-budget"
ANNOTATION_THRESHOLD = PREFIX + "threshold."  # + a threshold name, e.g. threshold.stall_seconds
ANNOTATION_LOG_FORMAT = PREFIX + "log-format"  # a log format from the config, tried first
ANNOTATION_CONTAINER = PREFIX + "container"  # the container whose log and identity count
ANNOTATION_HTTP_PORT = PREFIX + "http-port"  # pull JSON progress from the pod on this port
ANNOTATION_HTTP_PATH = PREFIX + "http-path"  # ... at this path (default /metrics)
ANNOTATION_STATUS_VOLUME = PREFIX + "status-volume"  # an emptyDir the pod writes its file to
ANNOTATION_STATUS_FILE = PREFIX + "status-file"  # ... named this (default progress.json)
ANNOTATION_CHECKPOINT = PREFIX + "checkpoint"  # any new value: tell the run to save now
ANNOTATION_STACKS = PREFIX + "stacks"  # any new value: ask every rank for its stacks now
# OpenShift AI's progress tracking (opendatahub-io/trainer, pkg/rhai/constants/constants.go):
# annotations of the TrainJob, read as its controller reads them.
ODH_PROGRESSION = "trainer.opendatahub.io/progression-tracking"  # exactly "true" turns it on
ODH_METRICS_PORT = "trainer.opendatahub.io/metrics-port"  # default 28080
ODH_POLL_INTERVAL = "trainer.opendatahub.io/metrics-poll-interval"  # "30s", "1m" or "45"
ODH_TRAINER_STATUS = "trainer.opendatahub.io/trainerStatus"  # the progress, as JSON
ODH_PORT = 28080
# The audience of the projected token Kubeflow Trainer gives a TrainJob's pods for pushing
# progress (kubeflow/trainer pkg/statusserver: TokenAudience(namespace, name)).
KUBEFLOW_TOKEN_AUDIENCE = (
    "trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/{name}/status"
)
# The annotations of an owner (the TrainJob) that pod discovery keeps with its reference.
OWNER_ANNOTATIONS = (ODH_PROGRESSION, ODH_METRICS_PORT, ODH_POLL_INTERVAL)

# (label, job kind), in order of precedence: the most specific workload first.
JOB_LABELS: tuple[tuple[str, str], ...] = (
    ("trainer.kubeflow.org/trainjob-name", "TrainJob"),
    ("training.kubeflow.org/job-name", "KubeflowJob"),
    ("jobset.sigs.k8s.io/jobset-name", "JobSet"),
    ("ray.io/originated-from-cr-name", "RayJob"),
    ("batch.kubernetes.io/job-name", "Job"),
    ("job-name", "Job"),
)
KATIB_TRIAL_LABEL = "katib.kubeflow.org/trial"
KATIB_EXPERIMENT_LABEL = "katib.kubeflow.org/experiment"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
RANK_LABELS = (
    "batch.kubernetes.io/job-completion-index",
    REPLICA_INDEX_LABEL,
    "jobset.sigs.k8s.io/job-index",
)
DEFAULT_GPU_RESOURCES = (
    "nvidia.com/gpu",
    "nvidia.com/mig-*",
    "amd.com/gpu",
    "gpu.intel.com/*",
    "habana.ai/gaudi",
    "aws.amazon.com/neuron*",
    "google.com/tpu",
)
