"""Is ``training_deadline_miss_probability`` calibrated? Of the instants where it said p, a
fraction near p must have missed.

Each run of the ETA corpus (tests/fixtures/eta/; by default the held-out runs, which never
tuned the estimator) is replayed through the exporter's own path (bench.eta_accuracy.replay:
pushes, the log source, the tracker, on an injected clock). Each run is given deadlines at
fixed instants: its true training time (begin to last step) times each of
:data:`DEADLINES`, counted from its begin, as a user would set one before the run. At every
sampled instant (each second from 10 % to 90 % of the run) before a deadline where the
exporter has an ETA and its band, the probability of missing that deadline is
:func:`exporter.core.deadlines.miss_probability` of that snapshot, and the outcome is whether
the run's last step came after the deadline. The instants are put in deciles of the
probability; each decile's mean probability is set beside its observed miss rate.

    python -m bench.deadline_calibration            # the held-out runs
    python -m bench.deadline_calibration --all      # every run of the corpus
    python -m bench.deadline_calibration --json
    python -m bench.deadline_calibration --tails    # where the truth fell outside the band

``--tails`` measures, over every run of the corpus, how often the truth fell past each end
of the band at the same instants; the high end's share is what
:data:`exporter.core.deadlines.Z_UPPER_END` is set from.

Measures, asserts nothing (tests/test_deadlines.py asserts the goal on a subset).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from bench.eta_accuracy import Instant, corpus_runs, replay
from exporter.core.deadlines import miss_probability

# Deadlines as multiples of each run's true training time, from its begin: half of them
# missed, half met, some close to the end (where the answer is hard) and some far.
DEADLINES = (0.7, 0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.2, 1.35, 1.5)


@dataclass(frozen=True)
class Decile:
    """One decile of the stated probability: how many instants said it, their mean
    probability, and the share of them that missed."""

    low: float
    high: float
    count: int
    said: float
    missed: float


def judgements(run: dict[str, Any], instants: Sequence[Instant]) -> list[tuple[float, bool]]:
    """(stated probability, missed) at every instant before each of the run's deadlines."""
    begin = float(run["truth"]["begin"])
    end = float(run["truth"]["steps"][-1][0])
    out: list[tuple[float, bool]] = []
    for factor in DEADLINES:
        deadline = begin + factor * (end - begin)
        for i in instants:
            if i.t >= deadline or i.ours is None or i.lower is None or i.upper is None:
                continue
            out.append((miss_probability(i.ours, i.lower, i.upper, deadline - i.t), end > deadline))
    return out


@dataclass(frozen=True)
class Tails:
    """How often the truth fell outside the band: below its low end, above its high end,
    over ``count`` instants, and the standard normal quantile each share makes of its end."""

    count: int
    below: float
    above: float

    @property
    def z_lower(self) -> float:
        return NormalDist().inv_cdf(1 - self.below) if 0 < self.below < 1 else float("inf")

    @property
    def z_upper(self) -> float:
        return NormalDist().inv_cdf(1 - self.above) if 0 < self.above < 1 else float("inf")


def tails(runs: Sequence[dict[str, Any]]) -> Tails:
    """Where the truth fell against the band, at the instants :func:`judgements` judges."""
    count = below = above = 0
    for run in runs:
        instants = replay(run)
        begin = float(run["truth"]["begin"])
        end = float(run["truth"]["steps"][-1][0])
        for factor in DEADLINES:
            deadline = begin + factor * (end - begin)
            for i in instants:
                if i.t >= deadline or i.ours is None or i.lower is None or i.upper is None:
                    continue
                count += 1
                below += i.true < i.lower
                above += i.true > i.upper
    return Tails(count, below / max(count, 1), above / max(count, 1))


def deciles(pairs: Sequence[tuple[float, bool]]) -> list[Decile]:
    """The judgements in ten bins of the stated probability ([0, 0.1), ..., [0.9, 1])."""
    out = []
    for k in range(10):
        low, high = k / 10, (k + 1) / 10
        inside = [(p, m) for p, m in pairs if low <= p < high or (k == 9 and p == 1.0)]
        if not inside:
            out.append(Decile(low, high, 0, float("nan"), float("nan")))
            continue
        out.append(
            Decile(
                low,
                high,
                len(inside),
                sum(p for p, _ in inside) / len(inside),
                sum(m for _, m in inside) / len(inside),
            )
        )
    return out


def measure(names: Sequence[str] = (), held_out_only: bool = True) -> list[Decile]:
    """The reliability table over the corpus' runs (the held-out ones, or those named)."""
    runs = [r for r in corpus_runs(names) if names or not held_out_only or r.get("held_out")]
    pairs: list[tuple[float, bool]] = []
    for run in runs:
        pairs += judgements(run, replay(run))
    return deciles(pairs)


def table(rows: Sequence[Decile]) -> str:
    """The reliability table as Markdown."""
    lines = [
        "| stated probability | instants | mean stated | observed miss rate | gap (points) |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for d in rows:
        if not d.count:
            lines.append(f"| {d.low:.1f}-{d.high:.1f} | 0 | — | — | — |")
            continue
        gap = 100 * (d.missed - d.said)
        lines.append(
            f"| {d.low:.1f}-{d.high:.1f} | {d.count} | {d.said:.3f} | {d.missed:.3f} | {gap:+.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true", help="every run, not only held-out")
    parser.add_argument("--run", action="append", default=[], help="only this run")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--tails", action="store_true", help="the band's tails, every run")
    args = parser.parse_args(argv)
    if args.tails:
        t = tails(corpus_runs(args.run))
        print(
            f"{t.count} instants: below the low end {100 * t.below:.2f} % (z {t.z_lower:.2f}),"
            f" above the high end {100 * t.above:.2f} % (z {t.z_upper:.2f})"
        )
        return 0
    rows = measure(args.run, held_out_only=not args.all)
    if args.json:
        print(json.dumps([d.__dict__ for d in rows]))
    else:
        print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
