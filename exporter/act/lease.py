"""Leadership by a ``coordination.k8s.io/v1`` Lease, the pure part: what a candidate writes
to take or keep the lease, given what it last read.

The semantics are client-go's leader election (``k8s.io/client-go/tools/leaderelection``):
a holder renews ``renewTime`` every retry period; a lease is free when it has no holder, or
when the candidate has seen the same record unchanged for ``leaseDurationSeconds`` of its
own clock. The expiry is measured from when the candidate *observed* the record, never from
the holder's ``renewTime``, so clocks that disagree between nodes cannot hand the lease over
early. A holder that could not renew within its renew deadline stops acting before any other
candidate may take over (renew deadline < lease duration).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

# The act replica's webhook, so a follower can hand a notification to the leader.
URL_ANNOTATION = "training-progress.io/act-url"


@dataclass(frozen=True)
class Timing:
    """client-go's three durations (its defaults: 15 s, 10 s, 2 s)."""

    lease_seconds: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def check(self) -> None:
        """Raises ValueError unless retry < renew deadline < lease duration (as client-go)."""
        if not 0 < self.retry_period < self.renew_deadline < self.lease_seconds:
            raise ValueError(
                "leader election needs retry period < renew deadline < lease duration, got "
                f"{self.retry_period}s, {self.renew_deadline}s, {self.lease_seconds}s"
            )


@dataclass(frozen=True)
class LeaseRecord:
    """A Lease's spec, and the holder's webhook URL from its annotation."""

    holder: str
    lease_seconds: int
    acquired: float
    renewed: float
    transitions: int
    url: str = ""


def _time(value: Any) -> float:
    if not isinstance(value, str) or not value:
        return 0.0
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _micro_time(seconds: float) -> str:
    """A MicroTime as the API server writes it (RFC 3339, microseconds, UTC)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def decode(lease: dict[str, Any]) -> LeaseRecord:
    """The record of a Lease object as the API returned it (missing fields read as empty:
    a lease someone else created by hand is still one we can take)."""
    spec = lease.get("spec") or {}
    meta = lease.get("metadata") or {}
    duration = spec.get("leaseDurationSeconds")
    transitions = spec.get("leaseTransitions")
    url = (meta.get("annotations") or {}).get(URL_ANNOTATION, "")
    return LeaseRecord(
        holder=str(spec.get("holderIdentity") or ""),
        lease_seconds=duration if isinstance(duration, int) and duration > 0 else 1,
        acquired=_time(spec.get("acquireTime")),
        renewed=_time(spec.get("renewTime")),
        transitions=transitions if isinstance(transitions, int) and transitions >= 0 else 0,
        url=url if isinstance(url, str) else "",
    )


def encode(
    record: LeaseRecord, name: str, namespace: str, resource_version: str | None
) -> dict[str, Any]:
    """The Lease object that writes ``record`` (a replace when ``resource_version`` is given:
    the API server refuses it with 409 if the lease changed since it was read)."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "annotations": {URL_ANNOTATION: record.url},
    }
    if resource_version is not None:
        meta["resourceVersion"] = resource_version
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": meta,
        "spec": {
            "holderIdentity": record.holder,
            "leaseDurationSeconds": record.lease_seconds,
            "acquireTime": _micro_time(record.acquired),
            "renewTime": _micro_time(record.renewed),
            "leaseTransitions": record.transitions,
        },
    }


def claim(
    current: LeaseRecord | None,
    observed_at: float,
    me: str,
    url: str,
    now: float,
    lease_seconds: int,
) -> LeaseRecord | None:
    """The record to write to take or renew the lease at ``now``, or None while another
    holder's lease runs (``observed_at``: when this candidate first saw ``current`` as it
    is; ``current`` None: no lease exists yet)."""
    if current is None:
        return LeaseRecord(me, lease_seconds, now, now, 0, url)
    if current.holder and current.holder != me and observed_at + current.lease_seconds > now:
        return None
    if current.holder == me:
        return replace(current, renewed=now, lease_seconds=lease_seconds, url=url)
    return LeaseRecord(me, lease_seconds, now, now, current.transitions + 1, url)


def released(record: LeaseRecord, now: float) -> LeaseRecord:
    """What a holder that stops writes so the next candidate need not wait out the lease
    (client-go's ``ReleaseOnCancel``): no holder, one second, renewed now."""
    return replace(record, holder="", lease_seconds=1, renewed=now, url="")
