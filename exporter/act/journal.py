"""What ``act``'s leader did, kept in the cluster so the next leader neither repeats nor
loses an action (a ConfigMap in act's own namespace).

Each action is written down *before* it is taken (``pending``, with exactly what it will
touch: the owner to suspend, the pods to delete by UID) and marked ``done`` after. A leader
that dies between the two leaves a pending entry; the next leader completes it, and doing
so again is harmless: a suspend sets a flag already set, a delete names pods by UID, so a
rank restarted since under the same name is not touched. Alerts already in the journal are
duplicates to the next leader, and its cooldowns and circuit breaker start from the
journal's actions, not from zero.

Taking over rewrites the journal, so the ConfigMap's resourceVersion changes: a replica
that still believes it leads fails its next write (409) and acts on nothing (fencing).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol

log = logging.getLogger(__name__)

KEY = "actions.json"
# A ConfigMap holds at most 1 MiB; an entry is a few hundred bytes, and the circuit
# breaker allows 20 actions an hour by default (480 a day).
MAX_ENTRIES = 1000
MAX_PODS = 256
MAX_TEXT = 253


class JournalOps(Protocol):
    """The ConfigMap calls (:class:`exporter.act.kube.KubernetesOps`); ClusterError on
    failure, Conflict when the ConfigMap changed since it was read."""

    def config_map(self, namespace: str, name: str) -> dict[str, Any] | None: ...
    def save_config_map(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Entry:
    """One action: what it is about and what it touches."""

    identity: str  # the alert's fingerprint@startsAt
    alert: str
    namespace: str
    job: str  # Kind/name, as act names jobs
    action: str
    at: float
    done: bool
    involved: dict[str, str]  # the Event's involvedObject (the job, or a bare pod)
    owner: dict[str, str] | None = None  # kind, apiVersion, name, uid: what a suspend patches
    pods: tuple[tuple[str, str], ...] = ()  # (name, uid) that a restart or delete deletes


def _text(value: Any) -> str:
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise ValueError(f"not a short string: {value!r:.80}")
    return value


def _entry(doc: Any) -> Entry:
    """An entry as written by :func:`encode`; ValueError for anything else."""
    if not isinstance(doc, dict):
        raise ValueError("an entry is an object")
    at = doc.get("at")
    if isinstance(at, bool) or not isinstance(at, (int, float)) or not 0 <= at < 1e11:
        raise ValueError("at must be a Unix time")
    involved = doc.get("involved")
    owner = doc.get("owner")
    pods = doc.get("pods") or []
    if not isinstance(involved, dict) or not isinstance(pods, list) or len(pods) > MAX_PODS:
        raise ValueError("involved must be an object and pods a short list")
    if owner is not None and not isinstance(owner, dict):
        raise ValueError("owner must be an object")
    return Entry(
        identity=_text(doc.get("identity")),
        alert=_text(doc.get("alert")),
        namespace=_text(doc.get("namespace")),
        job=_text(doc.get("job")),
        action=_text(doc.get("action")),
        at=float(at),
        done=doc.get("done") is True,
        involved={_text(k): _text(v) for k, v in involved.items()},
        owner=None if owner is None else {_text(k): _text(v) for k, v in owner.items()},
        pods=tuple((_text(p[0]), _text(p[1])) for p in pods if isinstance(p, list) and len(p) == 2),
    )


def decode(config_map: dict[str, Any] | None) -> list[Entry]:
    """The entries of the journal's ConfigMap, oldest first; an entry that does not read is
    logged and left out (a hand-edited journal loses that entry, not the others)."""
    raw = ((config_map or {}).get("data") or {}).get(KEY) or "[]"
    try:
        docs = json.loads(raw)
    except ValueError:
        log.warning("act journal: %s is not JSON; starting from an empty journal", KEY)
        return []
    entries = []
    for doc in docs if isinstance(docs, list) else []:
        try:
            entries.append(_entry(doc))
        except (ValueError, TypeError, IndexError) as err:
            log.warning("act journal: an entry left out: %s", err)
    return entries


def encode(
    entries: list[Entry], name: str, namespace: str, resource_version: str | None
) -> dict[str, Any]:
    """The ConfigMap holding ``entries`` (a replace when ``resource_version`` is given)."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": {"app.kubernetes.io/name": "training-progress-act"},
    }
    if resource_version:
        meta["resourceVersion"] = resource_version
    docs = [{**asdict(e), "pods": [list(p) for p in e.pods]} for e in entries]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta,
        "data": {KEY: json.dumps(docs, separators=(",", ":"))},
    }


def trimmed(entries: list[Entry], now: float, keep_seconds: float) -> list[Entry]:
    """The entries worth keeping: every pending one, and done ones younger than
    ``keep_seconds``, at most MAX_ENTRIES (the oldest done ones go first)."""
    kept = [e for e in entries if not e.done or e.at > now - keep_seconds]
    while len(kept) > MAX_ENTRIES:
        oldest_done = next((i for i, e in enumerate(kept) if e.done), 0)
        del kept[oldest_done]
    return kept


class Journal:
    """The leader's journal: read once when it takes over, then written at each action.
    Only the leader uses it; its alert workers share it (one write at a time)."""

    def __init__(
        self,
        ops: JournalOps,
        namespace: str,
        name: str,
        keep_seconds: float,
        clock: Callable[[], float],
    ) -> None:
        self.ops = ops
        self.namespace = namespace
        self.name = name
        self.keep_seconds = keep_seconds
        self.clock = clock
        self.entries: list[Entry] = []
        self._version: str | None = None
        self._lock = threading.Lock()

    def take_over(self) -> list[Entry]:
        """Read the journal and write it back (fencing a former leader): its entries."""
        with self._lock:
            current = self.ops.config_map(self.namespace, self.name)
            self._version = None
            if current is not None:
                meta = current.get("metadata") or {}
                self._version = str(meta.get("resourceVersion") or "")
            self.entries = decode(current)
            self._save()
            return list(self.entries)

    def _save(self) -> None:
        self.entries = trimmed(self.entries, self.clock(), self.keep_seconds)
        body = encode(self.entries, self.name, self.namespace, self._version)
        stored = self.ops.save_config_map(self.namespace, body)
        self._version = str((stored.get("metadata") or {}).get("resourceVersion") or "")

    def begin(self, entry: Entry) -> None:
        """Write ``entry`` down as pending before its action is taken (ClusterError: the
        action must not be taken)."""
        with self._lock:
            self.entries.append(replace(entry, done=False))
            try:
                self._save()
            except Exception:
                self.entries.remove(replace(entry, done=False))
                raise

    def finish(self, identity: str) -> None:
        """Mark the action of ``identity`` done (a failure leaves it pending: the next
        leader completes it again, harmlessly)."""
        with self._lock:
            self.entries = [
                replace(e, done=True) if e.identity == identity else e for e in self.entries
            ]
            self._save()

    def drop(self, identity: str) -> None:
        """The action of ``identity`` failed: it is not pending any more (the re-send of the
        alert tries it again)."""
        with self._lock:
            self.entries = [e for e in self.entries if e.identity != identity]
            self._save()
