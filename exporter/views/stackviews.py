"""Why a run is stuck, for people: one line naming the blocking ranks (the status page, the
JSON API, ``top``), a rank's stacks and cause as the API serves them, and a diagnosis read
back from ``training_stall_info``'s labels or the API's JSON (``top``). The causes
themselves are read in :mod:`exporter.core.stacks`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..core.run.snapshot import RunSnapshot
from ..core.stacks import (
    CAUSES,
    CHECKPOINT,
    COLLECTIVE,
    DATA,
    DEVICE,
    MAX_OP,
    MAX_RANK,
    MAX_TEXT,
    UNKNOWN,
    Diagnosis,
    RankStacks,
)


def _ranks(ranks: Sequence[str]) -> str:
    def order(r: str) -> tuple[int, str]:
        return (int(r), "") if r.isdigit() else (MAX_RANK, r)

    names = sorted(ranks, key=order)
    if names == [""]:
        return "the process"  # one process that says no rank (a single-process run's dump)
    shown = ", ".join(n or "one of unknown rank" for n in names[:8])
    more = f" and {len(names) - 8} more" if len(names) > 8 else ""
    return f"rank{'s' if len(names) > 1 else ''} {shown}{more}"


_WAITS = {
    CHECKPOINT: "is saving a checkpoint",
    DATA: "waits for data",
    DEVICE: "waits for the GPU",
    UNKNOWN: "is",
}


def summary(diagnoses: Sequence[Diagnosis]) -> str:
    """One line for a person: the blocking ranks first, then those waiting in a collective,
    grouped: ``rank 1 is at train.py:41 in main (time.sleep(3600)); ranks 0, 2 wait in
    all_reduce #812``."""
    parts: list[str] = []
    blockers = [d for d in diagnoses if d.cause != COLLECTIVE]
    for d in sorted(blockers, key=lambda d: (d.rank.isdigit(), len(d.rank), d.rank)):
        where = d.frame or d.call
        text = f"{_ranks([d.rank])} {_WAITS[d.cause]}"
        if where:
            text += f" at {where}"
        if d.code:
            text += f" ({d.code[:80]})"
        if d.completed is not None:
            text += f", its last collective finished #{d.completed}"
        parts.append(text)
    groups: dict[tuple[str, int | None], list[str]] = {}
    for d in diagnoses:
        if d.cause == COLLECTIVE:
            groups.setdefault((d.op, d.seq), []).append(d.rank)
    for (op, seq), ranks in sorted(groups.items(), key=lambda g: (g[0][0], g[0][1] or 0)):
        name = (op or "a collective") + (f" #{seq}" if seq is not None else "")
        verb = "wait" if len(ranks) > 1 else "waits"
        parts.append(f"{_ranks(ranks)} {verb} in {name}")
    return "; ".join(parts)


def diagnosis_from_labels(labels: Mapping[str, Any]) -> Diagnosis:
    """A diagnosis as ``training_stall_info``'s labels or the API's ``stall`` entries give
    it (for the views that read Prometheus or an exporter's JSON); unknown fields empty."""

    def text(name: str) -> str:
        value = labels.get(name)
        return value[:MAX_TEXT] if isinstance(value, str) else ""

    cause = text("cause")
    seq = labels.get("seq")
    completed = labels.get("completed")
    return Diagnosis(
        rank=text("rank"),
        cause=cause if cause in CAUSES else UNKNOWN,
        op=text("op")[:MAX_OP],
        seq=seq if isinstance(seq, int) and not isinstance(seq, bool) else None,
        frame=text("frame"),
        code=text("code"),
        call=text("call"),
        source=text("source"),
        taken=0.0,
        completed=(
            completed if isinstance(completed, int) and not isinstance(completed, bool) else None
        ),
    )


def stacks_to_dict(stacks: RankStacks, diagnosis: Diagnosis) -> dict[str, Any]:
    """One rank's stacks and cause for ``GET /api/v1/runs/{ns}/{pod}/stacks``."""
    return {
        "rank": stacks.rank,
        "taken_timestamp_seconds": stacks.taken,
        "source": stacks.source,
        "cause": diagnosis.cause,
        "op": diagnosis.op,
        "seq": diagnosis.seq,
        "completed": diagnosis.completed,
        "frame": diagnosis.frame,
        "code": diagnosis.code,
        "call": diagnosis.call,
        "threads": [
            {
                "name": t.name,
                "frames": [
                    {"file": f.file, "line": f.line, "function": f.function, "code": f.code}
                    for f in t.frames
                ],
            }
            for t in stacks.threads
        ],
    }


def without_code(snapshot: RunSnapshot) -> RunSnapshot:
    """``snapshot`` with no source line in its stall (what a caller who may not read the
    run's code is shown: file, line and function only, docs/cli.md#status-page)."""
    if not any(d.code for d in snapshot.stall):
        return snapshot
    return replace(snapshot, stall=tuple(replace(d, code="") for d in snapshot.stall))


def stacks_without_code(
    held: Sequence[tuple[RankStacks, Diagnosis]],
) -> list[tuple[RankStacks, Diagnosis]]:
    """Each rank's stacks and diagnosis with every frame's source line left out."""
    return [
        (
            replace(
                stacks,
                threads=tuple(
                    replace(t, frames=tuple(replace(f, code="") for f in t.frames))
                    for t in stacks.threads
                ),
            ),
            replace(diagnosis, code=""),
        )
        for stacks, diagnosis in held
    ]
