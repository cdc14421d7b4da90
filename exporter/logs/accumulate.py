"""What a stream of log lines says about one run: the latest value of each field, with
structured lines beating progress bars, and one progress bar picked as the training bar.

Pure and deterministic: lines go in with their time, a :class:`ProgressReport` comes out.
Rules (docs/logs.md has the table of script shapes and what is read from each):

* Structured lines (Kubeflow marker, JSON lines, Transformers dicts, DeepSpeed, Katib, the
  general reader's progress lines, users' formats) set every field they carry; once one gave
  a step, bars never set it again, and a total a line printed beats a bar's length.
* Bars are grouped by their prefix, digits removed (``Epoch 1/8`` and ``Epoch 2/8`` are one
  bar), and total. A bar that starts over is the next pass of the same loop (the next
  epoch): its count is *cumulative*, every pass's work, so the step never goes back.
* A bar's total is the run's only where the log says so: ``Epoch i/N`` (or Keras'
  ``Epoch i/N`` line, or Lightning's Rich ``Epoch i/last``) times the bar's total, or a bar
  that is the whole loop (it never started over, names no epoch, and no other bar ran after
  it reached its end). Otherwise the total is unknown: no progress, no ETA, and a bar
  reaching its end never makes the run finished.
* An evaluation bar (its description says eval, valid, test, predict, sanity...) is never
  the training bar, nor is a bar tqdm drew below another (nested, see ``Bar.nested``) while
  an outer one exists, unless the outer bar counts its passes: ``for epoch in trange(8):
  for batch in tqdm(loader, leave=False)`` trains in the inner bar. Of the others, the
  training bar advanced most often in the last ``RECENT`` seconds (a finished download's not).
* Transformers' Trainer prints each log dict (``{'loss': ..., 'epoch': '0.24'}``) on stdout
  as it logs, while its tqdm bar on stderr reaches the log in 16 KiB chunks, a minute apart
  and more. Once a chunk has shown the step at a dict's time, the steps per epoch are known
  and each later dict's epoch gives the step at its time (:meth:`LogAccumulator.epoch_step`).
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field, replace
from itertools import pairwise

from ..core.model import VALUE_FIELDS, ProgressReport
from .bars import (
    MAX_STEP_RATE,
    BarTrack,
    again_at_end,
    bare_passes,
    continues,
    counts_epochs,
    epoch_of,
    epoch_size,
    eval_bar,
    inner_loop,
    next_pass,
    summary_beside,
    validation_in_count,
)
from .blocks import Blocks
from .dict_steps import DictSteps
from .epoch_counter import EpochCounter, WithinEpoch
from .evaluations import Evaluations, after_the_end
from .formats.tqdm import yolov6_row
from .formats.traceback import cause
from .keras_headers import KerasHeaders, headless_bar
from .lines import EMPTY, EVAL_BLOCK, Bar, LineReport
from .moves import after_a_crash, starts_over
from .parse import bar_key
from .table_rows import TableRows, row_total

RECENT = 120.0
MAX_SAMPLES = 256  # value samples kept between two reports (the newest)
_OBSERVED = ("loss", "eval_loss", "learning_rate", "grad_norm")  # a line with one is a sample
EPOCH_MARKS = 32  # Trainer's dicts kept (time, epoch) until a bar chunk shows their step

# A line's values the accumulator keeps (the newest wins), with the tokens trained on a log
# may say (Trainer's num_input_tokens_seen, torchtune's tokens_per_second_per_gpu).
_KEPT_FIELDS = (*VALUE_FIELDS, "tokens")


@dataclass
class LogAccumulator:
    """Feed :class:`LineReport` objects in order with :meth:`feed`; read :meth:`report`."""

    values: dict[str, object] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)
    bars: dict[tuple[str, int | None], BarTrack] = field(default_factory=dict)
    structured_step: bool = False
    keras_epoch: tuple[int, int] | None = None
    keras_samples: int | None = None  # "Train on N samples": bars of N count samples
    keras_headers: KerasHeaders = field(default_factory=KerasHeaders)  # a nested one's passed
    epoch_counter: EpochCounter = field(default_factory=EpochCounter)
    final: bool = False
    lightning: bool = False  # a line only Lightning prints was read (its epochs count from 0)
    start_time: float | None = None  # the log rewritten from its start: a new attempt from then
    # Trainer's log dicts: (time, epoch) of the newest, the newest step an epoch gave, its time.
    epoch_marks: deque[tuple[float, float]] = field(
        default_factory=lambda: deque(maxlen=EPOCH_MARKS)
    )
    epoch_sample: tuple[float, int] | None = None
    # The steps in one epoch: exact where a progress line printed an index within an epoch
    # of known size (mmcv's "Epoch [2][30/35]": step 65 at epoch 1.857), else once a bar
    # chunk showed the step at a Trainer dict's time. It places what names only epochs:
    # Trainer's dicts, "Saving checkpoint at 2 epochs", "max: 30 epochs".
    steps_per_epoch: float | None = None
    rows_from_zero: bool = False  # YOLOv5's header ("0/249" the first); Ultralytics' from 1
    row_columns: tuple[str, ...] = ()  # the training table's header, where one was read
    # Each structured line's values and time since take_samples(): every loss an observation.
    samples: deque[tuple[float, tuple[tuple[str, float], ...]]] = field(
        default_factory=lambda: deque(maxlen=MAX_SAMPLES)
    )
    # A traceback's first line was read and no other parsed line since: its exception line is
    # the crash (formats.traceback), which stands until the log shows progress again after it.
    traceback_open: bool = False
    failure: str | None = None
    # A counted progress line with no loss was the last read: a "continued" line is its rest.
    awaits_loss: bool = False
    # An epoch's header on a line of its own was the last line read, or only lines of values
    # since (chemprop's "Epoch 25", then "Loss = 3.77e-01, PNorm = 37.1, ..."): such lines
    # are the epoch's, their step unknown.
    under_header: bool = False
    # The training table and the block a header opened (exporter.logs.table_rows, .blocks).
    tables: TableRows = field(default_factory=TableRows)
    blocks: Blocks = field(default_factory=Blocks)
    within: WithinEpoch = field(default_factory=WithinEpoch)  # counts within an epoch
    dict_steps: DictSteps = field(default_factory=DictSteps)  # Trainer's dicts, no bar
    evaluations: Evaluations = field(default_factory=Evaluations)  # a test set's loss or not
    resumed: bool = False  # a line said the run goes on from a saved state
    step_stale: bool = False  # a step read was dropped as stale since the last one read

    def feed(self, line: LineReport, now: float, at: float | None = None) -> bool:
        """Take one parsed line, read at ``now``; ``at`` is when it was written, where the
        log says (its CRI timestamp). Returns whether the line was taken: a line that is
        part of another (``LineReport.part``) is dropped where that other is not there."""
        if line.part == "continued" and not (self.awaits_loss or self.under_header):
            return False  # values of no counted line: nothing says which step they are
        if line.parser == "yolov6":
            line = yolov6_row(line, self.row_columns)
        taken = self.blocks.take(line)
        if taken is not None and taken.parser in ("table", "box-table"):
            taken = self.tables.take(taken)
        if taken is None or self.keras_headers.nested(taken):
            return taken is not None  # no one's values, or a validation loop's own header
        if self.final:  # another Keras bar after the end is no training (.evaluations)
            taken = after_the_end(taken, self.training_bar())
        if taken.parser == "keras":  # fit's bar with no header, or evaluate's (.keras_headers)
            epoch = self.epoch_counter.header or self.values.get("epoch")  # any line's
            taken = self.keras_headers.evaluating(headless_bar(taken, self.keras_epoch, epoch))
        self._take(self.evaluations.take(taken), now, at)
        return True

    def _take(self, line: LineReport, now: float, at: float | None) -> None:
        """What :meth:`feed` takes: one line of its own, read."""
        line = self._counted(line)
        self.under_header = line.parser == "epochs" or (
            line.part == "continued" and self.under_header
        )
        self.awaits_loss = (
            line.parser == "progress"
            and not line.part
            and line.report.step is not None
            and line.report.loss is None
            and line.report.eval_loss is None
        )
        self.counts[line.parser] += 1
        self.resumed = self.resumed or line.resumed
        if line.parser in ("traceback", "exception"):
            if line.parser == "traceback":
                self.traceback_open = True
            elif self.traceback_open and line.report.failure is not None:
                self.failure = cause(self.failure, line.report.failure)
            return
        self.traceback_open = False
        if line.parser in ("yolo-header", "yolov5-header", "yolov6-header"):
            self.rows_from_zero = line.parser != "yolo-header"
            self.row_columns = line.columns
            return
        total = row_total(self.row_columns, line.columns) if line.parser == "ultralytics" else None
        if total is not None:
            self.values["loss"] = total
        said = self.values.get("step")
        if self.failure is not None and after_a_crash(line, said, self.bars):
            self.failure = None  # it trained on, or started again, after the traceback
        if self.final and starts_over(line, said):
            self._start_over()  # a new attempt after the last one's end, in the same log
        if line.parser == "lightning":
            self.lightning = True
        r = line.report
        if r is not EMPTY:  # most lines are bare bar frames: nothing but the bar
            for name in _KEPT_FIELDS:
                value = getattr(r, name)
                if value is not None:
                    self.values[name] = value
            if line.parser == "progress" and r.step is not None and r.epoch:
                per = r.step / r.epoch
                if per >= 1 and abs(per - round(per)) < 1e-6:
                    self.steps_per_epoch = float(round(per))
            if line.parser == "checkpoints" and r.epoch is not None:
                self._epochs_done(r.epoch)
            elif line.epoch_done is not None and r.step is None:
                self._epochs_done(float(line.epoch_done))  # an epoch's summary
                if (chosen := self.training_bar()) is not None:
                    summary_beside(chosen[1], line.epoch_done)
            if r.checkpoint_timestamp is not None:
                # The line's own time; a save that names no step is at the step read so far.
                self.values["checkpoint_timestamp"] = r.checkpoint_timestamp if at is None else at
                if r.checkpoint_step is not None:
                    self.values["checkpoint_step"] = r.checkpoint_step
                elif (step := self._step_now()) is not None:
                    # A save that names no step (nanoGPT's "saving checkpoint to out") is at
                    # the step read so far, not at the run's step when the report is made.
                    self.values["checkpoint_step"] = step
                else:
                    self.values.pop("checkpoint_step", None)
            if r.checkpoint_seconds is not None:  # how long the save took (torchtitan's)
                self.values["checkpoint_seconds"] = r.checkpoint_seconds
            if r.step is not None or line.moved_on:  # a printed step, exact or not (no bar's)
                self.structured_step = True
                self.step_stale = self.step_stale and r.step is None
            if r.metrics:
                self.metrics.update(r.metrics)
            self.final = self.final or r.final
            if line.parser == "ends" and r.max_epochs and (chosen := self.training_bar()):
                chosen[1].from_zero(int(r.max_epochs))  # YOLO rows seen without their header
            # A line that is not a bar frame (frames repeat their postfix): one observation.
            if line.bar is None and (
                r.metrics or any(getattr(r, n) is not None for n in _OBSERVED)
            ):
                self.samples.append((now if at is None else at, r.values()))
            if line.parser == "transformers" and r.epoch is not None and r.loss is not None:
                self.dict_steps.loss = None if r.final else r.loss
                if at is not None:  # no time of its own (a plain file): no time beside the bar's
                    self._epoch_mark(at, r.epoch)
                counted = None if r.final or r.step is not None else self.dict_steps.dict_seen()
                if counted is not None and self.training_bar() is None:  # a bar counts them
                    self.values["step"] = counted
            elif r.final and (kept := self.dict_steps.mean_repeated(r.metrics, self.values)):
                self.values["loss"] = kept  # a line read since repeated the run's mean
            elif (printed := r.checkpoint_step if r.step is None else r.step) is not None:
                self.dict_steps.printed(printed)
        if line.epoch_of is not None and line.bar is None and line.parser == "keras":
            self.keras_epoch = line.epoch_of
        if line.samples is not None:
            self.keras_samples = line.samples
        if line.bar is not None:
            self._bar(line, now)
            if line.frames and not self.structured_step:
                self._learn_steps_per_epoch()

    def _counted(self, line: LineReport) -> LineReport:
        """``line`` with its printed count as the run's step where epoch headers on lines
        of their own show it counts within an epoch (:mod:`~exporter.logs.epoch_counter`)."""
        r = line.report
        if line.moved_on and r.step is None:
            self._drop_step()  # stale: the loop went on to a step not printed
            return line
        if line.epoch_of is not None and line.bar is None and line.parser in ("keras", "epochs"):
            epoch, epochs = line.epoch_of
            if line.parser == "keras" and (epoch == 0 or self.epoch_counter.from_zero):
                # "Epoch 0/24": no Keras (it counts from 1) but a loop printing its 0-based
                # epoch of the last (the PyTorch tutorials): 25 epochs, epoch 1 of them.
                self.epoch_counter.from_zero = True
                epoch, epochs = epoch + 1, epochs + 1
                line = line._replace(
                    report=replace(r, max_epochs=float(epochs)), epoch_of=(epoch, epochs)
                )
            self.epoch_counter.heading(epoch, epochs or None)
        elif r.step is None and (within := line.within) and (self.steps_per_epoch or within[0]):
            # A count within an epoch of a size its line does not print (WithinEpoch): where no
            # line printed it either, the step read so far is an earlier epoch's.
            step, at = self.within.place(within, self.steps_per_epoch, self.values.get("step"))
            if step is None:
                self._drop_step()
            return line if at is None else line._replace(report=replace(r, step=step, epoch=at))
        elif line.parser == "progress" and r.step is not None and r.epoch is None:
            if line.epoch_of is not None:  # the epoch's number on the count's own line
                self.epoch_counter.heading(line.epoch_of[0], None)
            run_step, total = self.epoch_counter.count(r.step, r.max_steps, line.printed_size)
            if self.epoch_counter.relative:
                if total is None and self.values.get("max_steps") == self.epoch_counter.size:
                    self.values.pop("max_steps", None)  # an epoch's size, not the run's
                if run_step is None:
                    self._drop_step()  # a count within an epoch, not the run's
                return line._replace(report=replace(r, step=run_step, max_steps=total))
        return line

    def _drop_step(self) -> None:
        """Forget the step read so far: it is no longer the run's (a report says it is stale,
        :attr:`ProgressReport.step_stale`, where one was read)."""
        self.step_stale |= self.values.pop("step", None) is not None

    def _epochs_done(self, epochs: float) -> None:
        """A line that says ``epochs`` are done (mmcv's or Keras' save after an epoch): the
        step at that epoch's end, where the epoch's size is known (printed, or the length of
        a bar drawn once per epoch) and that end is the epoch under way."""
        size, now = self.steps_per_epoch or epoch_size(self.training_bar()), self._step_now()
        if size is None or now is None:
            return
        end = round(epochs * size)
        if now <= end <= now + size:
            self.values["step"] = end

    def _step_now(self) -> int | None:
        """The run's step as the lines read so far say it (a printed one, else the
        training bar's count where that is the step)."""
        said = self.values.get("step")
        if isinstance(said, int):
            return said
        chosen = self.training_bar()
        if chosen is not None and not self.structured_step and chosen[1].step_known():
            return chosen[1].work()
        return None

    def _epoch_mark(self, t: float, epoch: float) -> None:
        """A training log dict of Trainer's at ``t``: kept, and once the steps per epoch are
        known, the step it gives (the dicts come every ``logging_steps`` steps)."""
        if not (0 < epoch < 1e9):
            return
        self.epoch_marks.append((t, epoch))
        if self.steps_per_epoch is None:
            return
        step = round(epoch * self.steps_per_epoch)
        chosen = self.training_bar()
        total = chosen[1].run_total(self.final) if chosen is not None else None
        if total is None or step > total:
            return  # no end to check it against, or past it: not this run's epoch
        if self.epoch_sample is None or step > self.epoch_sample[1]:
            self.epoch_sample = (t, step)

    def _learn_steps_per_epoch(self) -> None:
        """The steps per epoch, from the newest dict whose time the training bar's frames
        span: the bar's step then (between the two frames around it) over its epoch."""
        if not self.epoch_marks:
            return  # no Trainer dicts: nothing to learn (most logs)
        chosen = self.training_bar()
        if chosen is None:
            return
        track = chosen[1]
        points = [*track.samples, (track.recent[-1] if track.recent else 0.0, track.work())]
        mark = next(
            ((t, e) for t, e in reversed(self.epoch_marks) if points[0][0] <= t <= points[-1][0]),
            None,
        )
        if mark is None:
            return
        t, epoch = mark
        around = next(
            ((a, b) for a, b in pairwise(points) if a[0] <= t <= b[0] and b[0] > a[0]), None
        )
        if around is None:
            return
        (t0, s0), (t1, s1) = around
        step = s0 + (s1 - s0) * (t - t0) / (t1 - t0)
        if step >= 1 and step / epoch >= 1:  # an epoch is at least a step
            self.steps_per_epoch = step / epoch

    def _bar(self, line: LineReport, now: float) -> None:
        bar = line.bar
        assert bar is not None
        key = bar_key(bar)
        track = self.bars.get(key)
        if track is None:
            evaluation = eval_bar(bar.prefix) or self.blocks.open == EVAL_BLOCK
            track = self.bars[key] = BarTrack(
                bar.total, evaluation=evaluation, resumed=self.resumed
            )
            if track.evaluation and self.lightning:
                counts = [t.last_n for t in self.bars.values() if t.frames and not t.evaluation]
                track.opened_at = max(counts) if counts else None
            for other in self.bars.values():
                # An evaluation's bar counts too (Ludwig draws its evaluation bars after each
                # epoch's training bar): a redraw of the same pass after it shows a later
                # clock (again_at_end), a further pass does not.
                if other is not track and other.ended:
                    other.other_after_end = True
        track.items |= bar.items or (bar.rate or 0.0) > MAX_STEP_RATE < bar.n  # faster than steps
        if bar.not_steps or (line.parser == "keras" and bar.total == self.keras_samples):
            track.not_steps = True  # Keras' "Train on N samples": its epochs' bars count them
        label, epochs = self._epoch(line, bar)
        if not track.frames and not track.evaluation:
            for other_key, other in self.bars.items():
                if other is not track and other_key[0] == key[0] and continues(track, other, label):
                    break
        if epochs is not None:
            track.epochs = epochs
        if self.lightning:
            track.origin = 0  # Lightning's epochs count from 0 (both bars)
        elif line.parser in ("keras", "ultralytics"):
            track.origin = 1
        # Started over: a smaller count, another epoch, or (a whole bar in one line, as a
        # file read at once shows it) its oldest frame in this line below the last count.
        oldest = line.frames[0][1] if line.frames else bar.n
        if track.frames and (
            min(bar.n, oldest) < track.last_n or (label is not None and label != track.label)
        ):
            chosen = self.training_bar() if self.final else None
            if chosen is not None and chosen[1] is track:
                # Training bars again after the run said it finished: a new attempt (the
                # script run again into the same log). Start over from this line.
                self._start_over()
                self._bar(line, now)
                return
            next_pass(track, label)
        if label is not None:
            track.label = label
            if track.first_label is None or label < track.first_label:
                track.first_label = label
            # The line itself began in an earlier epoch (one bar redrawn across epochs, read
            # whole): the epochs from there on were all drawn with this bar.
            began = epoch_of(line.first_prefix) if line.first_prefix else None
            if began is not None and not track.frames and began[0] < track.first_label:
                track.first_label = began[0]
        if line.frames and bar.elapsed_seconds is not None and bar.n >= track.last_n:
            # A chunk of frames (a tqdm line reaches a container log 16 KiB at a time): the
            # frames between the last one read and the newest, at the times the bar's own
            # clock gives them relative to the newest, which is now.
            for elapsed, n in line.frames:
                if track.last_n < n < bar.n and elapsed <= bar.elapsed_seconds:
                    track.samples.append((now - (bar.elapsed_seconds - elapsed), track.work(n)))
        if not track.evaluation and bar.n > track.last_n and track.frames and self.lightning:
            validation_in_count(self.bars.values(), track, bar.n)
        if track.first_n is None:
            track.first_n = min(bar.n, oldest)
        elif again_at_end(track, bar, oldest, line.report.loss):
            track.repeated_at_end = True
        track.said = line.report.loss
        if bar.n > track.last_n:
            track.advances += 1
            track.recent.append(now)
            track.still = None
        elif (
            bar.n == track.last_n
            and track.frames
            and track.last is not None
            and bar.elapsed_seconds is not None
            and track.last.elapsed_seconds is not None
            and bar.elapsed_seconds > track.last.elapsed_seconds
        ):
            track.still = (now, track.work())
        track.frames += 1
        track.last_n, track.last = bar.n, bar
        track.ended = bool(bar.total) and bar.n >= (bar.total or 0)
        track.nested = track.nested or bar.nested
        recent = track.recent
        while recent and now - recent[0] > RECENT:
            recent.popleft()

    def _start_over(self) -> None:
        """Forget everything but the match counts: a new attempt begins."""
        self.__dict__.update({**LogAccumulator().__dict__, "counts": self.counts})

    def _epoch(self, line: LineReport, bar: Bar) -> tuple[int | None, int | None]:
        """The epoch this frame belongs to and the number of epochs, where the log says."""
        if line.epoch_of is not None:  # Lightning's Rich bar (0-based), Ultralytics' row
            if line.parser == "ultralytics" and self.rows_from_zero:
                epoch, epochs = line.epoch_of
                return epoch + 1, (epochs + 1 if epochs is not None else None)
            return line.epoch_of
        if line.parser == "keras":
            return self.keras_epoch if self.keras_epoch is not None else (None, None)
        found = epoch_of(bar.prefix)
        if found is None and line.parser == "tqdm" and self.keras_epoch is not None:
            return self.keras_epoch  # a tqdm bar under an "Epoch 2/20" line of its own
        return found if found is not None else (None, None)

    def training_bar(self) -> tuple[tuple[str, int | None], BarTrack] | None:
        """The bar that is the training loop's, if any (see the module docstring)."""
        candidates = [
            (k, t)
            for k, t in self.bars.items()
            if not t.evaluation and not t.items and not t.continued and t.advances > 0
        ]
        outer = [(k, t) for k, t in candidates if not t.nested]
        inner = [(k, t) for k, t in candidates if t.nested and inner_loop(t, outer)]
        candidates = inner or outer or candidates  # an inner bar only when it is the loop
        if not candidates:
            return None
        chosen = max(candidates, key=lambda kt: (len(kt[1].recent), kt[1].advances))
        if bare_passes(chosen[1], (t for _, t in candidates)):
            return None
        return chosen

    def _epoch_bar(self, track: BarTrack) -> BarTrack | None:
        """The bar counting the passes of ``track`` (``for epoch in trange(N)`` around it),
        not per pass itself: around a nested bar, one that advanced, at most the passes so far
        plus one; or one described "Epoch", so bounded or with no bar run after its end (a
        copy may show fewer passes: run_squad's ``Epoch: 100%| 5/5``; not a finished stage's)."""
        for other in self.bars.values():
            bounded = other.last_n <= track.passes + 1  # the outer bar is drawn first, at 0
            if (
                other is not track
                and not other.nested
                and not other.evaluation
                and not other.per_pass
                and other.total
                and (
                    (bounded and track.nested and other.advances > 0)
                    or (counts_epochs(other) and (bounded or not other.other_after_end))
                )
            ):
                return other
        return None

    def epoch_step(self, bar_step: int, total: int | None) -> tuple[float, int] | None:
        """(time, step) that Trainer's newest log dict gives, where it is ahead of the
        training bar's ``bar_step`` and within its ``total``; else None."""
        sample = self.epoch_sample
        if sample is None or sample[1] <= bar_step or (total is not None and sample[1] > total):
            return None
        return sample

    def take_samples(self) -> tuple[tuple[float, tuple[tuple[str, float], ...]], ...]:
        """The value samples since the last call, oldest first (ProgressReport.value_samples)."""
        out = tuple(self.samples)
        self.samples.clear()
        return out

    def report(self) -> ProgressReport:
        """The run as these lines describe it."""
        values = dict(self.values)
        chosen = self.training_bar()
        if chosen is not None and (track := chosen[1]).last is not None:
            bar = track.last
            outer = self._epoch_bar(track)
            total = None if outer is not None else track.run_total(self.final)
            said = self.values.get("max_epochs")
            if total is None and track.per_pass and track.total and isinstance(said, float):
                total = int(said) * track.total  # the number of epochs, said in another line
            if total is None and outer is not None and outer.total and track.total:
                total = outer.total * track.total  # an epoch bar's inner loop: its passes
            if not self.structured_step and track.step_known():
                # Under an epoch bar, its count is the passes done (leave=False: no last frame).
                done = outer.last_n * track.total if outer is not None and track.total else 0
                bar_step = max(track.work(), done)
                step_samples = list(track.samples)
                if track.still is not None and track.still[1] == bar_step:
                    step_samples.append(track.still)
                values["step"] = bar_step
                dict_step = self.epoch_step(bar_step, total)
                if dict_step is not None:
                    # Ahead of the bar: the step at the dict's own time (the run takes a
                    # step sample at the report's step as that step's time).
                    values["step"] = dict_step[1]
                    step_samples.append(dict_step)
                values["step_samples"] = tuple(step_samples)
                if "max_steps" not in self.values:  # a structured line's total wins
                    values["max_steps"] = total
                    # Only an "Epoch i/N" count (or the outer epoch bar) says the last
                    # epoch's end is the run's; a bar alone may be the first of several.
                    values["total_from_bar"] = (
                        total is not None and track.epochs is None and outer is None
                    )
                epochs_done = track.epochs_done() if track.per_pass else None
                if epochs_done is not None and "epoch" not in self.values:
                    values["epoch"] = epochs_done
                    if track.epochs is not None:
                        values["max_epochs"] = float(track.epochs)
            elif track.not_steps and track.per_pass and "epoch" not in self.values:
                values["epoch"] = track.epochs_done()  # no steps; its passes are the epochs
            elif counts_epochs(track) and track.total and "epoch" not in self.values:
                values["epoch"], values["max_epochs"] = float(bar.n), float(track.total)
            elif (
                self.structured_step
                and track.step_known()
                and "max_steps" not in self.values
                and total is not None
                and total >= int(self.values.get("step", 0))  # type: ignore[call-overload]
                # an epoch's base taken as 1: only where the step printed agrees with it
                and not (track.base_assumed and track.work() != self.values.get("step"))
            ):
                # A printed step wins over the bar's count, not over its length: Trainer's
                # bar beside DeepSpeed's "step=2000" still says the run is 24128 steps.
                values["max_steps"] = total
                values["total_from_bar"] = track.epochs is None and outer is None
            if (
                bar.remaining_seconds is not None
                and "eta_seconds" not in self.values
                and total is not None
                and not track.per_pass
            ):
                # The bar's own remaining time is the run's only when the bar is the run.
                values["eta_seconds"] = bar.remaining_seconds
        if (saved := values.get("checkpoint_step")) and chosen is None and "loss" not in values:
            values.setdefault("step", saved)  # no step, bar nor loss: a save's is the latest
        said_epochs = values.get("max_epochs")
        if self.final and self.lightning and "step" not in values and chosen is not None:
            # Lightning's "`Trainer.fit` stopped: `max_epochs=E` reached": E whole epochs.
            epochs = int(said_epochs) if isinstance(said_epochs, float) else 0
            if (stopped := chosen[1].fit_stopped_at(epochs) if epochs else None) is not None:
                values["step"] = values["max_steps"] = stopped
        size = self.steps_per_epoch
        if values.get("max_steps") is None and size and isinstance(said_epochs, float):
            # The number of epochs said once ("max: 30 epochs") and the epoch's size: the
            # run's length, where the step read is within it.
            total = round(said_epochs * size)
            if total >= int(values.get("step", 0)):  # type: ignore[call-overload]
                values["max_steps"] = total
        report = ProgressReport(
            metrics=tuple(sorted(self.metrics.items())),
            failure=None if self.final else self.failure,
            final=self.final,
            format="log",
            start_time=self.start_time,
            step_stale=self.step_stale and values.get("step") is None,
        )
        known = {k: v for k, v in values.items() if k in ProgressReport.__dataclass_fields__}
        return replace(report, **known)  # type: ignore[arg-type]
