"""A run's deadlines as every view shows them (the status page, ``top``, ``kubectl
progress``): when, the chance of missing each, and the size that makes it, from the run's
JSON form (:func:`exporter.views.api.run_to_dict`) or from Prometheus."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.humanize import duration


def _num(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class Deadline:
    """One of a job's deadlines as the views show it: its kind ("user": its own; "kill":
    Kubernetes' activeDeadlineSeconds, ``owner`` the kind that states it), when, the chance
    of missing it, and the size that makes it (docs/kubernetes.md#nodes-needed)."""

    kind: str
    at: float
    miss_probability: float | None = None
    size_needed: float | None = None
    unit: str = ""  # nodes or gpus
    basis: str = ""  # history or default
    owner: str = ""

    def text(self, now: float) -> str:
        """ "kill (Job) in 2h10m, 34% chance to miss, 3 nodes make it" """
        name = "deadline" if self.kind == "user" else f"kill ({self.owner or '?'})"
        when = (
            f"in {duration(self.at - now)}" if self.at > now else f"{duration(now - self.at)} ago"
        )
        parts = [f"{name} {when}"]
        if self.miss_probability is not None:
            parts.append(f"{self.miss_probability:.0%} chance to miss")
        if self.size_needed is not None and self.unit:
            basis = f" ({self.basis} scaling)" if self.basis else ""
            unit = self.unit[:-1] if self.size_needed == 1 else self.unit
            verb = "makes" if self.size_needed == 1 else "make"
            parts.append(f"{self.size_needed:g} {unit} {verb} it{basis}")
        return ", ".join(parts)


def deadlines_of(run: dict[str, Any]) -> tuple[Deadline, ...]:
    """A run's deadlines from its JSON form (``/api/v1/runs``), soonest first."""
    chances = run.get("deadline_miss_probability")
    needed = run.get("deadline_size_needed")
    chances = chances if isinstance(chances, dict) else {}
    needed = needed if isinstance(needed, dict) else {}
    out = []
    for kind, key in (
        ("user", "deadline_timestamp_seconds"),
        ("kill", "kill_deadline_timestamp_seconds"),
    ):
        at = _num(run.get(key))
        if at is None:
            continue
        out.append(
            Deadline(
                kind=kind,
                at=at,
                miss_probability=_num(chances.get(kind)),
                size_needed=_num(needed.get(kind)),
                unit=str(run.get("size_unit") or ""),
                basis=str(run.get("scaling_basis") or ""),
                owner=str(run.get("kill_deadline_kind") or "") if kind == "kill" else "",
            )
        )
    return tuple(sorted(out, key=lambda d: d.at))
