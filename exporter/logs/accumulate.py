"""What a stream of log lines says about one run: the latest value of each field, with
structured lines beating progress bars, and one progress bar picked as the training bar.

Pure and deterministic: lines go in with their time, a :class:`ProgressReport` comes out.
Rules:

* Structured parsers (Kubeflow marker, JSON lines, Transformers dicts, DeepSpeed, Katib) set
  every field they carry; once one has given a step, bars never set the step again.
* Bars are grouped by their prefix (digits removed, so ``Epoch 3`` and ``Epoch 4`` are one
  bar) and total. A bar whose count goes backwards without a new epoch is not the training
  bar: that is an evaluation bar restarting, or an inner loop. Nor is a bar tqdm drew below
  another (nested, see ``Bar.nested``) while an outer one exists. Among the others, the
  training bar is the one that advanced most often within the last ``RECENT`` seconds (a
  download bar that finished before training stops counting).
* Keras prints ``Epoch 3/10`` and then a per-epoch progbar: its progress is epochs.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field, replace

from ..model import VALUE_FIELDS, ProgressReport
from .parse import EMPTY, Bar, LineReport, bar_key

RECENT = 120.0
FRAME_SAMPLES = 64  # older bar frames kept as rate samples, per bar
STRUCTURED = frozenset({"kubeflow-marker", "jsonl", "transformers", "deepspeed", "katib"})


@dataclass
class _BarTrack:
    total: int | None
    last_n: int = 0
    epoch: int | None = None
    advances: int = 0
    # Times of advances within RECENT seconds, oldest first (trimmed from the left: a
    # list rebuilt on every frame made a long log quadratic).
    recent: deque[float] = field(default_factory=deque)
    regressed: bool = False
    nested: bool = False  # drawn below another bar (see Bar.nested)
    last: Bar | None = None
    # (time, n) of older frames read from the bar's own clock (see LineReport.frames).
    samples: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=FRAME_SAMPLES))


@dataclass
class LogAccumulator:
    """Feed :class:`LineReport` objects in order with :meth:`feed`; read :meth:`report`."""

    values: dict[str, object] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)
    bars: dict[tuple[str, int | None], _BarTrack] = field(default_factory=dict)
    structured_step: bool = False
    keras_epoch: tuple[int, int] | None = None
    final: bool = False

    def feed(self, line: LineReport, now: float) -> None:
        self.counts[line.parser] += 1
        r = line.report
        if r is not EMPTY:  # most lines are bare bar frames: nothing but the bar
            for name in VALUE_FIELDS:
                value = getattr(r, name)
                if value is not None:
                    self.values[name] = value
            if r.step is not None and line.parser in STRUCTURED:
                self.structured_step = True
            if r.metrics:
                self.metrics.update(r.metrics)
            self.final = self.final or r.final
        if line.epoch_of is not None:
            self.keras_epoch = line.epoch_of
        if line.bar is not None:
            self._bar(line, now)

    def _bar(self, line: LineReport, now: float) -> None:
        bar = line.bar
        assert bar is not None
        key = bar_key(bar)
        track = self.bars.setdefault(key, _BarTrack(total=bar.total))
        epoch = int(line.report.epoch) if line.report.epoch is not None else None
        if line.parser == "keras" and self.keras_epoch is not None:
            epoch = self.keras_epoch[0]  # Keras' progbar restarts with each "Epoch N/M"
        if line.frames and bar.elapsed_seconds is not None and bar.n >= track.last_n:
            # A chunk of frames (a tqdm line reaches a container log 16 KiB at a time): the
            # frames between the last one read and the newest, at the times the bar's own
            # clock gives them relative to the newest, which is now.
            for elapsed, n in line.frames:
                if track.last_n < n < bar.n and elapsed <= bar.elapsed_seconds:
                    track.samples.append((now - (bar.elapsed_seconds - elapsed), n))
        if bar.n > track.last_n:
            track.advances += 1
            track.recent.append(now)
        elif bar.n < track.last_n and (epoch is None or epoch == track.epoch):
            track.regressed = True
        track.last_n, track.epoch, track.last = bar.n, epoch, bar
        track.nested = track.nested or bar.nested
        recent = track.recent
        while recent and now - recent[0] > RECENT:
            recent.popleft()

    def training_bar(self) -> tuple[tuple[str, int | None], _BarTrack] | None:
        """The bar that is the training loop's, if any (see the module docstring)."""
        candidates = [(k, t) for k, t in self.bars.items() if not t.regressed and t.advances > 0]
        outer = [(k, t) for k, t in candidates if not t.nested]
        candidates = outer or candidates  # an inner bar only when there is no other
        if not candidates:
            return None
        return max(candidates, key=lambda kt: (len(kt[1].recent), kt[1].advances))

    def report(self) -> ProgressReport:
        """The run as these lines describe it."""
        values = dict(self.values)
        chosen = self.training_bar()
        if chosen is not None and (track := chosen[1]).last is not None:
            bar = track.last
            if self.keras_epoch is not None and chosen[0][0] == "keras" and bar.total:
                current, total = self.keras_epoch
                values["epoch"] = current - 1 + bar.n / bar.total
                values["max_epochs"] = float(total)
            elif (
                not self.structured_step
                and track.epoch is not None
                and bar.total
                and chosen[0][0] != "keras"
            ):
                # Lightning: one bar per epoch, so the global step is epoch * batches + n.
                values["step"] = track.epoch * bar.total + bar.n
            elif not self.structured_step:
                values["step"] = bar.n
                values["step_samples"] = tuple(track.samples)
                if bar.total:
                    values["max_steps"] = bar.total
            if bar.remaining_seconds is not None and "eta_seconds" not in self.values:
                values["eta_seconds"] = bar.remaining_seconds
        report = ProgressReport(
            metrics=tuple(sorted(self.metrics.items())), final=self.final, format="log"
        )
        known = {k: v for k, v in values.items() if k in ProgressReport.__dataclass_fields__}
        return replace(report, **known)  # type: ignore[arg-type]
