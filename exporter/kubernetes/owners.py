"""Pod discovery's owner lookups: each training pod's controller chain read from the API
server (:func:`exporter.core.workloads.chain`), cached, and the pod identified by it.

Owners are few (one Job per rank group, one JobSet, one TrainJob) and their controller
references never change, so each is read once per :data:`TTL` whatever the number of pods
and events; a missing one is remembered for :data:`MISSING_TTL`. An owner's kill deadline
(exporter.core.deadlines) is as fresh as its read: a Job resumed after a suspension, whose
startTime the Job controller resets, has its new deadline within one TTL. RBAC: ``get`` on the kinds
of :data:`exporter.core.workloads.KINDS` (deploy/base/rbac.yaml).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core.annotations import (
    ANNOTATION_ENABLED,
    DEFAULT_GPU_RESOURCES,
    JOB_LABELS,
    KATIB_TRIAL_LABEL,
)
from ..core.workloads import Kind, OwnerMissing, Refused, chain, kept_fields, owner_annotations
from ..plumbing.discovery import ApiFactory, PodInfo
from .client import api_status
from .pods import training_pod

log = logging.getLogger(__name__)

TTL = 300.0
MISSING_TTL = 30.0
MAX_CACHED = 4096
DISCOVERY = "discovery"  # the source name refusals are counted under


class OwnerLookup:
    """``get`` for :func:`exporter.core.workloads.chain` over the API, cached. Thread-safe."""

    def __init__(
        self,
        custom_api: ApiFactory,
        clock: Callable[[], float] = time.monotonic,
        ttl: float = TTL,
    ) -> None:
        self.custom_api = custom_api
        self.clock = clock
        self.ttl = ttl
        self.reads = 0  # calls made to the API server
        self._cache: OrderedDict[tuple[str, str, str], tuple[float, dict[str, Any] | None]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def get(self, kind: Kind, namespace: str, name: str) -> Mapping[str, Any] | None:
        key = (kind.kind, namespace, name)
        now = self.clock()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit[0] > now:
                return hit[1]
        self.reads += 1
        try:
            resp = self.custom_api().get_namespaced_custom_object(
                *kind.locate(namespace, name),
                _preload_content=False,
                _request_timeout=10,
            )
            doc = json.loads(resp.data)
        except Exception as exc:
            if api_status(exc) != 404:
                raise
            doc = None
        # Only what identity needs is kept: the UID and the controller reference, the few
        # annotations discovery reads from an owner (OpenShift AI's, on the TrainJob), and
        # the fields of its kill deadline and node count (exporter.core.workloads.kept_fields).
        meta = (doc or {}).get("metadata") or {}
        kept: dict[str, Any] | None = None
        if doc is not None:
            kept = kept_fields(kind.kind, doc)
            kept.setdefault("metadata", {}).update(
                {
                    "name": meta.get("name"),
                    "uid": meta.get("uid"),
                    "ownerReferences": meta.get("ownerReferences") or [],
                    "annotations": dict(owner_annotations(meta)),
                }
            )
        with self._lock:
            self._cache[key] = (now + (self.ttl if kept is not None else MISSING_TTL), kept)
            self._cache.move_to_end(key)
            while len(self._cache) > MAX_CACHED:
                self._cache.popitem(last=False)
        return kept


def candidate(pod: Mapping[str, Any]) -> bool:
    """Whether the pod may be a training pod at all (a job label, a Katib trial label or our
    opt-in annotation): only those cost owner lookups."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    if str(annotations.get(ANNOTATION_ENABLED, "")).lower() == "false":
        return False
    return (
        any(labels.get(label) for label, _ in JOB_LABELS)
        or bool(labels.get(KATIB_TRIAL_LABEL))
        or str(annotations.get(ANNOTATION_ENABLED, "")).lower() == "true"
    )


class PodReader:
    """Turns pod objects into training pods, identified by their owners.

    A pod whose labels claim a job that does not own it is refused and counted
    (``training_exporter_drops_total{source="discovery", reason="owner_mismatch"}``, once
    per pod). A pod whose owners cannot be read now (the API server is away) is kept aside
    and read again by :meth:`retry`.
    """

    def __init__(
        self,
        lookup: OwnerLookup,
        count: Callable[[str, str], None],
        resources: Sequence[str] = DEFAULT_GPU_RESOURCES,
        pull_fenced: bool = False,
    ) -> None:
        self.lookup = lookup
        self.count = count
        self.resources = tuple(resources)
        self.pull_fenced = pull_fenced
        self.pending: dict[str, Mapping[str, Any]] = {}  # pod uid -> the pod, owners unread
        self._refused: set[str] = set()

    def read(self, pod: Mapping[str, Any]) -> PodInfo | None:
        """The training pod, or None (not one, refused, or its owners unread for now)."""
        meta = pod.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        self.pending.pop(uid, None)
        if not candidate(pod):
            return None
        try:
            refs = chain(meta, self.lookup.get)
        except OwnerMissing as exc:
            self._refuse(uid, Refused(exc.reason, str(exc)))
            return None
        except Exception as exc:  # the API server: read it again later
            if uid and uid not in self.pending:
                log.warning("owners of pod %s unread for now: %s", meta.get("name"), exc)
            if uid:
                self.pending[uid] = pod
            return None
        found = training_pod(pod, refs, self.resources, self.pull_fenced)
        if isinstance(found, Refused):
            self._refuse(uid, found)
            return None
        return found

    def retry(self) -> list[PodInfo]:
        """The pending pods whose owners can be read now."""
        out = []
        for pod in list(self.pending.values()):
            found = self.read(pod)
            if found is not None:
                out.append(found)
        return out

    def forget(self, uid: str) -> None:
        """The pod is gone."""
        self.pending.pop(uid, None)
        self._refused.discard(uid)

    def _refuse(self, uid: str, refused: Refused) -> None:
        if uid in self._refused:
            return
        self._refused.add(uid)
        if len(self._refused) > MAX_CACHED:
            self._refused.clear()
        self.count(DISCOVERY, refused.reason)
        log.warning("pod refused (%s): %s", refused.reason, refused.message)
