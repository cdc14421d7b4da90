"""Which workload a pod belongs to, read from ``ownerReferences``, never from the labels a
pod sets on itself.

Any pod can carry ``trainer.kubeflow.org/trainjob-name: victim``; only the controllers that
made it can be its owners. A pod's controller reference names its direct owner (a Job); the
Job's names the JobSet, the JobSet's the TrainJob. :func:`chain` walks those references up,
reading each owner through ``get`` (the caller's API access), and :func:`identify` says which
job and which Katib trial the pod belongs to, and refuses a pod whose labels claim a job
that does not own it. Pure, apart from ``get``: both the exporter (pod discovery) and
``act`` (what to suspend or restart) use it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from . import deadlines, scaling
from .annotations import JOB_LABELS, KATIB_TRIAL_LABEL, OWNER_ANNOTATIONS
from .deadlines import kill_deadline


@dataclass(frozen=True)
class Kind:
    """A workload kind: where it is read, and (if it can be) how it is suspended."""

    kind: str
    api_version: str  # "batch/v1", "trainer.kubeflow.org/v1alpha1"
    plural: str
    suspend_path: tuple[str, ...] | None  # None: not suspendable (a Katib Trial)
    pod_label: str  # the label its controller sets on its pods, naming it
    job: bool = True  # a job (the run's job); False: above jobs (a Trial, an Experiment)

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    def locate(self, namespace: str, name: str) -> tuple[str, str, str, str, str]:
        """One object of this kind as the client's ``*_namespaced_custom_object`` calls
        take it: group, version, namespace, plural, name."""
        return self.group, self.version, namespace, self.plural, name


RAY_LABEL = "ray.io/originated-from-cr-name"
_KF_V1 = ("PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob")
KINDS: dict[str, Kind] = {
    k.kind: k
    for k in (
        Kind(
            "TrainJob",
            "trainer.kubeflow.org/v1alpha1",
            "trainjobs",
            ("spec", "suspend"),
            "trainer.kubeflow.org/trainjob-name",
        ),
        Kind(
            "JobSet",
            "jobset.x-k8s.io/v1alpha2",
            "jobsets",
            ("spec", "suspend"),
            "jobset.sigs.k8s.io/jobset-name",
        ),
        Kind("Job", "batch/v1", "jobs", ("spec", "suspend"), "batch.kubernetes.io/job-name"),
        *(
            Kind(
                kind,
                "kubeflow.org/v1",
                kind.lower() + "s",
                ("spec", "runPolicy", "suspend"),
                "training.kubeflow.org/job-name",
            )
            for kind in _KF_V1
        ),
        Kind("RayJob", "ray.io/v1", "rayjobs", ("spec", "suspend"), RAY_LABEL),
        Kind("RayCluster", "ray.io/v1", "rayclusters", None, "ray.io/cluster"),
        Kind("Trial", "kubeflow.org/v1beta1", "trials", None, KATIB_TRIAL_LABEL, job=False),
        Kind(
            "Experiment",
            "kubeflow.org/v1beta1",
            "experiments",
            None,
            "katib.kubeflow.org/experiment",
            job=False,
        ),
    )
}
# Which kinds a job label may name (exporter.core.annotations.JOB_LABELS' second column).
_LABEL_KINDS: dict[str, frozenset[str]] = {
    "TrainJob": frozenset({"TrainJob"}),
    "KubeflowJob": frozenset(_KF_V1),
    "JobSet": frozenset({"JobSet"}),
    "RayJob": frozenset({"RayJob"}),
    "Job": frozenset({"Job"}),
}
MAX_DEPTH = 6  # Pod -> Job -> JobSet -> TrainJob -> Trial -> Experiment
# Which kinds may be the controller of which, as each controller creates its objects; any
# other hop between two kinds we know is invented (#56 F1: a bare pod naming the victim's
# TrainJob, with its real UID, as its own controller). From the controllers' sources:
# Kubeflow Trainer v2 (a TrainJob makes a JobSet, pkg/runtime/framework/plugins/jobset),
# JobSet v0.8 (a JobSet makes Jobs), batch/v1 (a Job makes Pods), Kubeflow Training Operator
# v1 (PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob make Pods), KubeRay v1 (a
# RayJob makes a RayCluster and a submitter Job; a RayCluster makes Pods), Katib v1beta1 (an
# Experiment makes Trials; a Trial makes the job of its trial template). An owner of a kind
# we do not know (a CronJob, an Argo Workflow) may own anything: the chain stops there.
OWNERS: dict[str, frozenset[str]] = {
    "Pod": frozenset({"Job", *_KF_V1, "RayCluster"}),
    "Job": frozenset({"JobSet", "RayJob", "Trial"}),
    "JobSet": frozenset({"TrainJob", "Trial"}),
    "TrainJob": frozenset({"Trial"}),
    **{kind: frozenset({"Trial"}) for kind in _KF_V1},
    "RayCluster": frozenset({"RayJob"}),
    "RayJob": frozenset({"Trial"}),
    "Trial": frozenset({"Experiment"}),
    "Experiment": frozenset(),
}

# (kind, namespace, name) -> the object as the API server has it, or None if it does not
# exist; raises when it cannot be read (the caller retries later).
Getter = Callable[[Kind, str, str], "Mapping[str, Any] | None"]


@dataclass(frozen=True)
class Ref:
    """One controller reference: who made the object below it."""

    kind: str
    api_version: str
    name: str
    uid: str
    # Of the object it names, once read: the annotations pod discovery needs
    # (:data:`~exporter.core.annotations.OWNER_ANNOTATIONS`), values cut to MAX_ANNOTATION chars.
    annotations: tuple[tuple[str, str], ...] = ()
    # Of the object it names, once read: when its own activeDeadlineSeconds kills it
    # (exporter.core.deadlines.kill_deadline), and the nodes its spec runs on
    # (exporter.core.scaling.node_count), None where it states none.
    kill_deadline: float | None = None
    nodes: int | None = None

    def annotation(self, name: str) -> str | None:
        """The owner's annotation ``name`` (one of OWNER_ANNOTATIONS), if it has it."""
        return next((v for k, v in self.annotations if k == name), None)


class OwnerMissing(LookupError):
    """A controller reference names an object that does not exist (or has another UID).
    ``reason`` is the drop reason it is counted under."""

    reason = "owner_mismatch"


class ChainInvented(OwnerMissing):
    """A controller chain no controller makes: a hop between two kinds we know that is
    not in :data:`OWNERS`, or a reference without the UID every real one carries."""

    reason = "owner_chain"


def controller(meta: Mapping[str, Any]) -> Ref | None:
    """The object's controller reference (``controller: true``), if it has one."""
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("name"):
            return Ref(
                str(ref.get("kind") or ""),
                str(ref.get("apiVersion") or ""),
                str(ref["name"]),
                str(ref.get("uid") or ""),
            )
    return None


def chain(meta: Mapping[str, Any], get: Getter) -> tuple[Ref, ...]:
    """The controller references from ``meta``'s object upward, nearest first: each owner
    read through ``get`` to find its own controller. Stops at an object with no controller,
    at a kind we do not know (its name is all we can trust), or after :data:`MAX_DEPTH`.
    Raises :class:`OwnerMissing` when an owner does not exist or has another UID than the
    reference names (a pod cannot borrow an owner by its name), and :class:`ChainInvented`
    when a hop is one no controller makes (:data:`OWNERS`) or names no UID."""
    namespace = str(meta.get("namespace") or "")
    refs: list[Ref] = []
    current: Mapping[str, Any] = meta
    below = "Pod"
    for _ in range(MAX_DEPTH):
        ref = controller(current)
        if ref is None:
            break
        refs.append(ref)
        kind = KINDS.get(ref.kind)
        if kind is None:
            break
        if ref.kind not in OWNERS.get(below, frozenset()):
            raise ChainInvented(
                f"{ref.kind}/{ref.name} is named the controller of a {below}, and no "
                f"{ref.kind} makes {below}s"
            )
        if not ref.uid:
            raise ChainInvented(f"the reference to {ref.kind}/{ref.name} names no uid")
        below = ref.kind
        obj = get(kind, namespace, ref.name)
        owner_meta = (obj or {}).get("metadata") or {}
        if obj is None or str(owner_meta.get("uid") or "") != ref.uid:
            raise OwnerMissing(f"{ref.kind}/{ref.name} (uid {ref.uid or '?'}) does not exist")
        kept = owner_annotations(owner_meta)
        killed = kill_deadline(ref.kind, obj)
        nodes = scaling.node_count(ref.kind, obj)
        if kept or killed is not None or nodes is not None:
            refs[-1] = replace(ref, annotations=kept, kill_deadline=killed, nodes=nodes)
        current = owner_meta
    return tuple(refs)


MAX_ANNOTATION = 64


def _merge(into: dict[str, Any], other: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in other.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value
    return into


def kept_fields(kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    """What of an owner ``obj`` (a ``kind``) the chain reads beyond its identity: the fields
    of its kill deadline and of its node count, and nothing else (a cache keeps this)."""
    return _merge(deadlines.kept(kind, obj), scaling.kept(kind, obj))


def owner_annotations(meta: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The owner annotations pod discovery reads (OWNER_ANNOTATIONS), bounded, in order."""
    found = meta.get("annotations") or {}
    if not isinstance(found, Mapping):
        return ()
    return tuple(
        (name, found[name][:MAX_ANNOTATION])
        for name in OWNER_ANNOTATIONS
        if isinstance(found.get(name), str)
    )


@dataclass(frozen=True)
class Identity:
    """Who a pod is: its job (the highest job in its chain; the pod itself when none), and
    the Katib trial and experiment above it, if any."""

    job_name: str
    job_kind: str
    trial: str = ""
    experiment: str = ""
    owner: Ref | None = None  # the job's own reference (None for a bare pod)


@dataclass(frozen=True)
class Refused:
    """Why a pod is not taken for the job it claims: a drop reason and a message."""

    reason: str
    message: str


def identify(
    meta: Mapping[str, Any], refs: tuple[Ref, ...], own_job_name: str | None = None
) -> Identity | Refused:
    """The pod's identity from its controller chain ``refs`` (see :func:`chain`).

    A job label (``JOB_LABELS``) or a Katib trial label that names a workload not in the
    chain is refused (``owner_mismatch``). A pod with no controller is a bare pod: its job
    is ``own_job_name`` (its opt-in annotation) or its own name.
    """
    labels = meta.get("labels") or {}
    name = str(meta.get("name") or "")
    jobs = [r for r in refs if r.kind in KINDS and KINDS[r.kind].job]
    unknown = [r for r in refs if r.kind not in KINDS]
    top = jobs[-1] if jobs else (unknown[-1] if unknown else None)
    trial = next((r.name for r in refs if r.kind == "Trial"), "")
    experiment = next((r.name for r in refs if r.kind == "Experiment"), "")
    for label, claimed in JOB_LABELS:
        value = labels.get(label)
        if not value:
            continue
        kinds = _LABEL_KINDS.get(claimed, frozenset())
        if not any(r.name == value and r.kind in kinds for r in refs):
            return Refused(
                "owner_mismatch",
                f"pod {name} is labelled {label}={value}, but no {claimed} of that name owns it",
            )
    claimed_trial = labels.get(KATIB_TRIAL_LABEL)
    if claimed_trial and claimed_trial != trial:
        return Refused(
            "owner_mismatch",
            f"pod {name} is labelled {KATIB_TRIAL_LABEL}={claimed_trial}, but that Trial "
            "does not own it",
        )
    if top is None:
        return Identity(own_job_name or name, "Pod")
    return Identity(top.name, top.kind, trial, experiment, top)
