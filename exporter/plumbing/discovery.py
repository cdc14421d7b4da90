"""Discovery: which runs exist on this node, and who may report for which run.

Standalone mode (a laptop, a single GPU box) has no pods: runs are whatever reports arrive,
pushes are trusted, and the push path names the run. Kubernetes mode (pods on this node from
the API server or the kubelet, GPU accounting, push authorization) provides the same
:class:`Discovery` shape from :mod:`exporter.kubernetes.pod_discovery`, built only in that mode
(:func:`exporter.daemon.wiring.make_discovery`), so standalone use never loads the ``kubernetes``
client.

This module holds the shapes both modes share: :class:`Discovery`, the push resolvers'
:class:`PushTarget` and :class:`Denied`, who may read source lines (:class:`CodeReader`),
:class:`PodInfo` and the :class:`Cluster` the pod-driven sources and sinks read.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..core.model import RunKey, RunMeta
from ..core.thresholds import Overrides

# Set in every pod by the kubelet; its presence is how "auto" detects a cluster.
IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"
PUSH = "push"  # the source name pushes are counted and labelled under
# Builds one API object of the ``kubernetes`` client on first use (its type is the client's).
ApiFactory = Callable[[], Any]


class DiscoveryError(RuntimeError):
    """Discovery cannot start in the requested mode; the message says why."""


@dataclass(frozen=True)
class Denied:
    """Why a push was refused (403), as a counter reason and a human message."""

    reason: str
    message: str
    status: int = 403  # 429 or 503 when the caller should retry


@dataclass(frozen=True)
class PushTarget:
    """The run a push may write to, and what is known about it."""

    key: RunKey
    meta: RunMeta


class PushResolver(Protocol):
    """Decides which run a push writes to, or denies it. Kubernetes mode checks the caller.

    ``may_block`` says whether :meth:`resolve` may wait on the network (a TokenReview): the
    HTTP server then answers pushes from a worker thread instead of its event loop.
    """

    may_block: bool

    def resolve(
        self, namespace: str, name: str, client_ip: str, authorization: str | None
    ) -> PushTarget | Denied: ...


class StandaloneResolver:
    """Standalone mode: no pods to check; the path names the run (pod = job name).

    With a push token (``push_token_file``, for exporters reachable on a shared network)
    every push must carry ``Authorization: Bearer <token>``; without one, any bearer token
    is accepted unchecked, as on a laptop listening on 127.0.0.1.
    """

    may_block = False  # a dictionary lookup and a token compare

    def __init__(self, token: str | None = None) -> None:
        self._expected = f"Bearer {token}".encode() if token else None

    def resolve(
        self, namespace: str, name: str, client_ip: str, authorization: str | None
    ) -> PushTarget | Denied:
        if self._expected is not None and not hmac.compare_digest(
            (authorization or "").encode(), self._expected
        ):
            return Denied(
                "token_rejected",
                "this exporter requires its push token: Authorization: Bearer <token>",
            )
        return PushTarget(RunKey(namespace, name, name), RunMeta(source=PUSH))


@dataclass(frozen=True)
class PodInfo:
    """What the exporter needs from one training pod."""

    namespace: str
    name: str
    uid: str
    ip: str
    host_network: bool
    job_name: str
    job_kind: str
    rank: str
    container: str
    gpus: float
    start_timestamp: float | None  # when the pod got its node's resources (GPU-seconds start)
    finished: bool  # Succeeded or Failed: no longer holds its GPUs
    deadline_timestamp: float | None
    gpu_seconds_budget: float | None
    thresholds: Overrides
    failed: bool = False  # phase Failed (a kind of finished)
    end_timestamp: float | None = None  # a finished pod's last container stop
    trial: str = ""  # Katib: the trial this pod runs (katib.kubeflow.org/trial)
    experiment: str = ""  # ... and its experiment (katib.kubeflow.org/experiment)
    http_url: str | None = None  # where to pull JSON progress from, if anywhere
    http_interval: float | None = None  # ... at most this often (None: every poll)
    deleting: bool = False  # has a deletionTimestamp (evicted, drained, deleted)
    checkpoint_request: str | None = None  # the checkpoint annotation's value
    stacks_request: str | None = None  # the stacks annotation's value
    log_format: str = ""  # the log-format annotation: a configured format tried first
    status_file: tuple[str, str] | None = None  # (emptyDir volume, file name), if any
    # The earliest activeDeadlineSeconds of the pod and its owners (exporter.core.deadlines),
    # and the kind that states it.
    kill_deadline_timestamp: float | None = None
    kill_deadline_kind: str = ""
    nodes: int | None = None  # the nodes its job runs on, as the job's spec states


def reporting_pods(
    pods: list[PodInfo], key: Callable[[PodInfo], tuple[str, str] | None]
) -> dict[tuple[str, str], PodInfo]:
    """``key`` -> the one pod on this node that reports for it (a TrainJob, a Katib trial):
    rank 0 or an unranked one, the first by name; pods whose ``key`` is None are not asked.
    Sorted by key."""
    out: dict[tuple[str, str], PodInfo] = {}
    for p in pods:
        k = key(p)
        if k is None or p.rank not in ("0", ""):
            continue
        if k not in out or p.name < out[k].name:
            out[k] = p
    return dict(sorted(out.items()))


class Cluster(Protocol):
    """What Kubernetes mode gives the pod-driven sources and sinks: this node's training
    pods, the run metadata each gives, and the API."""

    @property
    def node(self) -> str: ...

    @property
    def custom_api(self) -> ApiFactory: ...

    @property
    def core_api(self) -> ApiFactory: ...

    def pods(self) -> list[PodInfo]: ...

    def meta(self, pod: PodInfo, source: str) -> RunMeta: ...


@dataclass(frozen=True)
class Discovery:
    """The pieces a mode provides to the exporter."""

    mode: str
    resolver: PushResolver
    # Standalone pushes have no pod whose deletion ends the run; they expire when idle.
    push_idle_expiry: bool
    start: Callable[[], None] = lambda: None
    stop: Callable[[], None] = lambda: None
    ready: Callable[[], tuple[bool, str]] = lambda: (True, "standalone")
    # Kubernetes mode: this node's training pods and the API, for the pod-driven sources.
    cluster: Cluster | None = None
    # Who may read source lines; standalone's default: this machine only.
    reader: CodeReader = field(default_factory=lambda: StandaloneCodeReader())
    # read_authorization: (path, client IP, Authorization) -> the status refusing the read
    # (401, 403), or None to answer it; None: every read is answered.
    read_guard: Callable[[str, str, str | None], int | None] | None = None


class CodeReader(Protocol):
    """Who may read a run's source lines: the ``code`` of its stacks' frames, which
    ``GET /api/v1/runs/{namespace}/{pod}/stacks`` and the run's page show. Everyone else
    gets the frames without them (file, line, function), and no list view (``/``,
    ``/api/v1/runs``, ``/metrics``) ever carries them.

    ``may_block``: :meth:`may_read` may wait on the network (a SubjectAccessReview)."""

    may_block: bool

    def may_read(
        self, namespace: str, pod: str, client_ip: str, authorization: str | None
    ) -> bool: ...


LOOPBACK_PREFIXES = ("127.", "::1", "::ffff:127.")


class StandaloneCodeReader:
    """Standalone mode: a caller on this machine (a loopback address), or one that sends
    the push token when there is one (an exporter listening on a shared network)."""

    may_block = False

    def __init__(self, token: str | None = None) -> None:
        self._expected = f"Bearer {token}".encode() if token else None

    def may_read(self, namespace: str, pod: str, client_ip: str, authorization: str | None) -> bool:
        if self._expected is not None:
            return hmac.compare_digest((authorization or "").encode(), self._expected)
        return client_ip.startswith(LOOPBACK_PREFIXES)


def resolve_mode(mode: str, environ: Mapping[str, str]) -> str:
    """``auto`` becomes ``kubernetes`` inside a pod, else ``standalone``."""
    if mode == "auto":
        return "kubernetes" if environ.get(IN_CLUSTER_ENV) else "standalone"
    return mode


def read_token(path: str | None) -> str | None:
    """The push token in ``path`` (surrounding whitespace dropped). Raises DiscoveryError
    when the file is named but unusable: an exporter that was asked to check tokens must
    not start without one."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            token = fh.read(4096).strip()
    except OSError as exc:
        raise DiscoveryError(f"push_token_file {path}: {exc.strerror}") from None
    if not token:
        raise DiscoveryError(f"push_token_file {path} is empty")
    return token
