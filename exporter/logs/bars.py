"""One progress bar as the log accumulator follows it (:class:`BarTrack`: its passes, its
count of work, whether its total is the run's), and what a bar's description says of it: an
evaluation loop, other work beside training, or the epoch it is in."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

from .lines import EPOCH_WORDS, Bar
from .parse import FRAME_TICKS

FRAME_SAMPLES = FRAME_TICKS  # older bar frames kept as rate samples, per bar
# Faster than any training loop takes optimizer steps (a forward, a backward and an update
# cost more than 200 us even for a toy model in eager PyTorch): a bar that counted past
# this many at more than this many a second counts items (samples, graph nodes, tokens,
# bytes), never steps. PyTorch Geometric's examples draw "Epoch 00: 100%| 90941/90941
# [00:02<00:00, 35622.37it/s]", the epoch's nodes. (A loop of a few empty iterations is
# as fast, briefly: its count stays below.)
MAX_STEP_RATE = 5000.0


# A description that names an evaluation loop. Lightning's: "Validation", "Validation
# DataLoader 0", "Sanity Checking DataLoader 0", "Testing", "Predicting"; Trainer's and
# Accelerate scripts': "Evaluating", "eval", "valid".
_EVAL_WORDS = re.compile(
    r"(?i)(?:^|[^a-z])(eval\w*|valid\w*|val|test\w*|predict\w*|sanity\w*|infer\w*)"
    r"(?:[^a-z]|$)"
)


# A description that names work beside training, drawn as bars in the same log: vLLM's and
# SGLang's generation ("Processed prompts", "Capturing CUDA graph shapes") in RL trainers
# such as OpenRLHF and verl, loading and saving ("Loading checkpoint shards", Transformers 5's
# "Loading weights" and "Writing model shards" at each save; diffusers' "Loading pipeline
# components"), and datasets' preparation
# ("Map", "Filter", "Tokenizing"), and the Hugging Face Hub's downloads, one bar per file
# ("model.safetensors", "tokenizer_config.json"). Their counts are requests, shards, rows or
# bytes, never steps.
_OTHER_WORK = re.compile(
    r"(?i)^\s*(?:processed prompts|capturing cuda graph"
    r"|loading (?:checkpoint|safetensors|weights|pipeline components)|writing model shards"
    r"|map\b|filter\b|tokeniz|running tokenizer|downloading|fetching \d+ files"
    r"|[\w./-]+\.(?:json|jsonl|safetensors|bin|model|txt|pt|pth|ckpt|gguf|msgpack|h5|onnx"
    r"|parquet|arrow|tar|gz|zip|py|yaml|md|tiktoken)\s*$)"
)


@lru_cache(maxsize=1024)
def eval_bar(prefix: str) -> bool:
    """Whether a bar's description names an evaluation loop (or is Ultralytics' validation
    table header, "Class Images Instances Box(P R mAP50 mAP50-95)", YOLOv5's with "mAP@.5")
    or other work that is not training steps (generation, loading, a dataset's
    preparation): such a bar never gives the step."""
    return bool(prefix) and (
        _EVAL_WORDS.search(prefix) is not None
        or "mAP50" in prefix
        or "mAP@.5" in prefix  # YOLOv5 before 7.0's and YOLOv7's "Class Images Labels P R mAP@.5"
        or _OTHER_WORK.search(prefix) is not None
    )


@lru_cache(maxsize=1024)
def epoch_of(prefix: str) -> tuple[int, int | None] | None:
    """The epoch a bar's description names, and the number of epochs when it says
    (``Epoch 3/10`` -> (3, 10)); None when it names none."""
    m = EPOCH_WORDS.search(prefix) if prefix else None
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)) if m.group(2) else None


# A bar's description that says it counts epochs, with no number of its own: tqdm's
# ``trange(epochs, desc="Epoch")`` (sentence-transformers' fit, many scripts) around the
# batches' bar.
_EPOCHS_BAR = re.compile(r"(?i)^\s*epochs?\s*:?\s*$")


def counts_epochs(track: BarTrack) -> bool:
    """Whether a bar's description is the word "Epoch" alone, or its unit the epoch: a bar
    over the epochs, whose total is their number."""
    last = track.last
    return last is not None and (last.epochs or _EPOCHS_BAR.match(last.prefix) is not None)


class Handover(NamedTuple):
    """Where a bar took over from an earlier one of the same description at another length:
    the run's steps and epochs at its end, and the epoch the new bar's first pass was."""

    steps: int
    epochs: float
    at: int


@dataclass
class BarTrack:
    total: int | None
    last_n: int = 0
    frames: int = 0
    advances: int = 0
    # Times of advances within RECENT seconds, oldest first (trimmed from the left: a
    # list rebuilt on every frame made a long log quadratic).
    recent: deque[float] = field(default_factory=deque)
    nested: bool = False  # drawn below another bar (see Bar.nested)
    evaluation: bool = False  # its description names an evaluation loop
    items: bool = False  # it ran faster than MAX_STEP_RATE: it counts items, not steps
    not_steps: bool = False  # a frame said its count is no step (Bar.not_steps)
    last: Bar | None = None
    # Passes: the work of the bar's earlier passes (each a fresh bar: the next epoch),
    # how many there were, and the epoch its description names now (and the smallest one).
    base: int = 0
    passes: int = 0
    label: int | None = None
    first_label: int | None = None
    # The label of the first epoch where the format says (Lightning counts from 0, Keras
    # from 1); else 0 once an epoch 0 was seen, else 1.
    origin: int | None = None
    epochs: int | None = None  # "Epoch i/N": N
    ended: bool = False  # reached its total
    other_after_end: bool = False  # another bar ran after it reached its total
    # The first count read (None before the first frame): at the total, the bar was never
    # seen short of its end (a log copied from a terminal keeps only each bar's last frame).
    first_n: int | None = None
    # Drawn complete again, its clock no later, after another bar ran after its end: a
    # further pass seen only at its end, so how many passes came before is unknown.
    repeated_at_end: bool = False
    # The loss its description said at the newest frame (RWKV-v4's "... loss 1.687660 lr
    # ...: 100%|"), or None: a pass drawn complete again saying another is a further one.
    said: float | None = None
    # (time, cumulative count) of older frames read from the bar's own clock.
    samples: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=FRAME_SAMPLES))
    # The newest count redrawn with a later clock and no advance (Trainer redraws its bar
    # after an evaluation): still there at that time, the pause before it.
    still: tuple[float, int] | None = None
    # Lightning before 2.0 counts each epoch's validation batches in its main bar (total =
    # training + validation batches; during validation, n = training batches + validation
    # batches done): seen when the main bar advances while a validation bar is open. Then
    # the training batches done while validation runs (the least n minus the validation
    # bar's count: the validation bar is drawn first, so never less than the truth), and
    # the validation bar's length, which each pass's length is short of.
    counts_validation: bool = False
    trained: int | None = None
    validation_total: int | None = None
    # An evaluation bar's: the training bar's count when it first appeared (Lightning before
    # 2.0 counts validation batches on in its main bar from there).
    opened_at: int | None = None
    # Where this bar took over from the same description's bar at another length (a run
    # that changed its batch size between epochs); the earlier bar is ``continued`` then on.
    carried: Handover | None = None
    continued: bool = False
    # Epochs' summaries numbered as its count (or one past it), at each count they matched:
    # a bar over the epochs (``for epoch in tqdm(range(100))``), whose count is no step.
    epoch_counts: set[int] = field(default_factory=set)
    # (epoch, passes) at the first summary of the newest epoch summarised: two passes or more
    # from one epoch's summary to the next's, and the bar runs more than once an epoch (a
    # training pass and a test pass of one length, neither described): no pass is an epoch.
    summarised: tuple[int, int] | None = None
    # The first summary after a bare pass's end named more epochs done than passes drawn
    # here: the log began mid-run (a rotated file, a late tail), its passes are not the run's.
    mid_run: bool = False
    resumed: bool = False  # first drawn after a resume: the epochs before it are not here

    @property
    def pass_size(self) -> int | None:
        """The training steps of one pass: the bar's length, less the validation batches
        Lightning before 2.0 counts in it (None where those are not known)."""
        if not self.counts_validation:
            return self.total
        if self.total and self.validation_total and self.total > self.validation_total:
            return self.total - self.validation_total
        return None

    def work(self, n: int | None = None) -> int:
        """The cumulative count at ``n`` (default: the newest frame): all passes so far."""
        if n is None:
            n = self.trained if self.trained is not None else self.last_n
        size = self.pass_size
        if self.carried is not None and size:
            return self.carried.steps + self._passes_since_handover() * size + min(n, size)
        if self.label is not None and size and self.first_label is not None:
            # The description counts the epochs: exact even when a whole epoch fell between
            # two polls. 0-based when an epoch 0 was seen, else 1-based.
            first = self.origin if self.origin is not None else min(self.first_label, 1)
            return max(0, self.label - first) * size + min(n, size)
        return self.base + n

    def from_zero(self, epochs: int) -> None:
        """Rows read as 1-based (YOLOv7's ``299/299`` without its header) that a line naming
        the ``epochs`` done showed 0-based (``300 epochs completed``): each epoch one on."""
        if self.epochs == epochs - 1 and self.label is not None and self.first_label is not None:
            self.label, self.first_label, self.epochs = self.label + 1, self.first_label + 1, epochs

    def epochs_done(self) -> float | None:
        """The epochs the cumulative count stands for (fractional), where a pass's length is
        known: passes of one length, or those since a :class:`Handover` on top of the
        epochs before it (the earlier bar's passes were of another length)."""
        size = self.pass_size
        if not size:
            return None
        if self.carried is None:
            return self.work() / size
        n = self.trained if self.trained is not None else self.last_n
        return self.carried.epochs + self._passes_since_handover() + min(n, size) / size

    def _passes_since_handover(self) -> int:
        assert self.carried is not None
        label = self.label if self.label is not None else self.carried.at
        return max(0, label - self.carried.at)

    def step_known(self) -> bool:
        """Whether the bar's cumulative count is the run's step. The passes counted by the
        epoch its description names are the run's only where every pass is the same length:
        the bar was seen from the first epoch, or its description states the number of
        epochs (``Epoch 3/10``, Keras, Lightning's Rich bar). Not when where its epochs start
        is unknown (a log read from the middle: ``Epoch 9:`` is the tenth epoch in
        Lightning, the ninth in a 1-based loop), nor for a bar first seen past the first
        epoch without that count: Lightning stopped by ``max_steps`` draws each epoch's bar
        to the steps left (``Epoch 2: 20/20`` after two epochs of 40). Nor for a bar seen
        only at its end, pass after pass (:attr:`repeated_at_end`), nor for a bare bar's passes
        since a resume (:attr:`resumed`) or in a log begun mid-run (:attr:`mid_run`)."""
        if self.not_steps or counts_epochs(self):
            return False  # samples, steps or samples unsaid (Bar.not_steps), or the epochs
        if self.counts_validation and self.pass_size is None and (self.passes or self.label):
            return False  # a later pass's length, less the validation it counts, is unknown
        if self.repeated_at_end or self.mid_run:
            return False
        if self.carried is not None:
            return True  # the earlier bar's steps were the run's when this one took over
        if self.label is None or self.first_label is None:
            return not (self.resumed and self.passes)  # passes since a resume: not the run's
        if self.origin is not None:
            first = self.origin
        elif self.first_label <= 1:
            first = self.first_label
        else:
            # First seen past the first epoch, its base unknown: where the description
            # states the number of epochs ("Epoch 54/400 train"), 1-based as a counter
            # line's (the last epoch shows E/E; an epoch 0 seen would have made it 0-based).
            return self.epochs is not None and bool(self.total)
        if self.epochs is not None and self.total:
            return True
        return self.first_label <= first

    @property
    def base_assumed(self) -> bool:
        """Whether the epochs its description counts were taken as 1-based with nothing to
        show it (first seen past the first epoch, no epoch 0 and no origin read)."""
        return self.origin is None and self.first_label is not None and self.first_label > 1

    @property
    def per_pass(self) -> bool:
        """Whether the bar is one pass of a loop it draws again (one bar per epoch)."""
        return self.passes > 0 or self.label is not None or self.repeated_at_end

    def fit_stopped_at(self, epochs: int) -> int | None:
        """The run's steps where Lightning's closing line said ``max_epochs`` was reached and
        this bar was drawn complete at that last epoch (``Epoch 19: 455/455`` under
        ``max_epochs=20``, Lightning's epochs 0-based): every epoch ran its whole length (a
        bar shortened to the steps left is drawn only where ``max_steps`` stops the run), so
        ``epochs x total``; None otherwise, or where the bar counts validation batches too."""
        if self.counts_validation or not self.total or self.last_n != self.total:
            return None
        return epochs * self.total if self.label == epochs - 1 else None

    def run_total(self, final: bool) -> int | None:
        """The run's total steps, where the log says it (see the module docstring). Once the
        run said it finished (Trainer's summary), a bar that ran after it is not training."""
        if not self.total:
            return None
        if self.counts_validation:
            size = self.pass_size
            return self.epochs * size if self.epochs is not None and size else None
        if self.epochs is not None:
            return self.epochs * self.total
        # A format that numbers its epochs (Keras, Ultralytics, Lightning) draws one bar per
        # epoch: without their number, the bar's total is one epoch's, not the run's.
        if self.origin is not None or self.per_pass or (self.other_after_end and not final):
            return None
        return self.total


def continues(track: BarTrack, earlier: BarTrack, label: int | None) -> bool:
    """Whether ``track``, a bar first drawn at epoch ``label``, takes over from ``earlier``
    (the same description at another length, a run that changed its batch size): at a
    later epoch, the earlier bar's count is no longer the run's. Where it is the next epoch
    after one the earlier bar drew to its end, its steps the run's then, ``track`` carries
    them on; else the run's step is unknown from here (epochs fell between, or one ended
    short)."""
    if (
        label is None
        or earlier.label is None
        or label <= earlier.label
        or earlier.evaluation
        or earlier.continued
    ):
        return False
    earlier.continued = True
    epochs = earlier.epochs_done()
    if label == earlier.label + 1 and earlier.ended and earlier.step_known() and epochs:
        track.carried = Handover(earlier.work(), epochs, label)
    return True


def next_pass(track: BarTrack, label: int | None) -> None:
    """The bar started over: credit the pass that ended (a bar over a data loader ends at
    its total; only its last frame read may be short of it)."""
    if label is not None and track.label is not None and label < track.label:
        track.base, track.passes = 0, 0  # the epochs start again: a re-run
        track.first_label = None
        return
    done = max(track.last_n, track.total or 0)
    if track.counts_validation:
        done = track.pass_size or done
        track.trained = None
    skipped = 0
    if label is not None and track.label is not None and track.total:
        skipped = max(0, label - track.label - 1) * track.total
    track.base += done + skipped
    track.passes += 1
    track.last_n = 0


def again_at_end(track: BarTrack, bar: Bar, oldest: int, said: float | None = None) -> bool:
    """Whether ``bar`` is a further pass of ``track`` seen only at its end: a bar never
    read short of its total, drawn complete again after another bar ran after its end, or
    its description saying another loss (``said``; tqdm's close redraws the same), with a
    clock no later than before (a redraw of the same pass, as Trainer's after an
    evaluation, shows a later one). A log copied from a terminal shows each epoch's
    bare bar so: "100%|...| 2492/2492 [20:50<00:00, 1.99it/s]" once per epoch."""
    total = track.total
    last = track.last
    return bool(
        total
        and track.first_n is not None
        and track.first_n >= total
        and (track.other_after_end or (said is not None and said != track.said))
        and bar.n == oldest == track.last_n == total
        and last is not None
        and bar.elapsed_seconds is not None
        and last.elapsed_seconds is not None
        and bar.elapsed_seconds <= last.elapsed_seconds
    )


def counted_on(main: BarTrack, validation: BarTrack, n: int) -> bool:
    """Whether a validation bar drawn only at 0 is the one the main bar at ``n`` counts
    on: it appeared at the main bar's count ``opened_at``, that count and its batches
    fit in the main bar's length (Lightning before 2.0 sizes the main bar for both; from
    2.0 its length is the training batches alone, all done when validation starts at
    the epoch's end), and the main bar went no further than its batches since."""
    start = validation.opened_at
    if start is None or not main.total:
        return False
    if not validation.total:
        # "Validating: 0it": Lightning before 2.0 draws it before it knows the batches (from
        # 2.0 its bars say "Validation"); the main bar then counts them to its end.
        last = validation.last
        lightning_1 = last is not None and last.prefix.startswith("Validating")
        return lightning_1 and start < main.total and start <= n <= main.total
    return start + validation.total <= main.total and 0 <= n - start <= validation.total


def inner_loop(track: BarTrack, outer: Sequence[tuple[object, BarTrack]]) -> bool:
    """Whether a nested bar is the training loop inside an outer bar that counts its
    passes (an epoch bar), not an evaluation inside a training bar: the outer bar
    counts no more than the inner one's passes (plus the one under way), and the inner
    one did more work. A training bar at step 60 with an evaluation bar below it that
    ran twice is the other way round."""
    if not outer:
        return False
    return all(t.last_n <= track.passes + 1 < track.work() for _, t in outer)


def summary_beside(track: BarTrack, epoch: int) -> None:
    """An epoch's summary (``Epoch 61, Training loss: ...``) read while ``track`` is the
    training bar: numbered as its count or one past it at two counts or more, the bar counts
    the epochs (each frame, then the epoch's line), and so counts no steps (:attr:`items`);
    so too where it ran twice or more from one epoch's summary to the next's. A first summary
    after a bare pass's end numbered past the passes drawn shows a log begun mid-run."""
    if track.summarised is None and track.label is None and 0 < (track.total or 0) <= track.last_n:
        track.mid_run = epoch > track.passes + 1
    if track.summarised is None or track.summarised[0] != epoch:
        if track.summarised and epoch == track.summarised[0] + 1:
            track.items |= track.passes - track.summarised[1] >= 2
        track.summarised = (epoch, track.passes)
    if track.last_n in (epoch, epoch - 1) and track.last_n > 0:
        track.epoch_counts.add(track.last_n)
        if len(track.epoch_counts) >= 2:
            track.items = True


def validation_in_count(bars: Iterable[BarTrack], track: BarTrack, n: int) -> None:
    """A Lightning main bar advancing to ``n``: while a validation bar is open (drawn
    and short of its end), the main bar counts validation batches (Lightning before
    2.0, TQDMProgressBar.on_validation_batch_end: train_batch_idx + val_processed)."""
    open_bars = [
        t
        for t in bars
        if t.evaluation
        and t.frames
        and not t.ended
        and ((t.total and t.last_n > 0) or counted_on(track, t, n))
    ]
    if not open_bars:
        track.trained = None
        return
    validation = max(open_bars, key=lambda t: (t.last_n, t.opened_at or 0))
    track.counts_validation = True
    track.validation_total = validation.total
    if validation.last_n > 0 or validation.opened_at is None:
        trained = max(0, n - validation.last_n)
    else:
        # Drawn at 0 and not since (a terminal's copy keeps one frame of it): the main
        # bar's count when it appeared is the training done.
        trained = min(n, validation.opened_at)
    if track.trained is None or trained < track.trained:
        track.trained = trained


def bare_passes(chosen: BarTrack, tracks: Iterable[BarTrack]) -> bool:
    """Whether the bar ``chosen`` as the training loop's (it advanced most) may as well be an
    evaluation's: it has no description and started over more often than another bare bar
    that starts over too. A CPS trainer draws each epoch a bare bar of 2315 batches, then two
    bare evaluations of 1449 (``26% 604/2315 [06:39<18:49, 1.52it/s]``): the evaluations'
    bar advanced most, passing twice an epoch, and its passes were a wrong step. A training
    bar passes once an epoch, as its evaluation's does (a real tqdm loop's 30 and 12)."""
    if chosen.passes == 0 or chosen.last is None or chosen.last.prefix.strip():
        return False
    return any(
        t is not chosen
        and 0 < t.passes < chosen.passes
        and t.last is not None
        and not t.last.prefix.strip()
        for t in tracks
    )


def epoch_size(chosen: tuple[tuple[str, int | None], BarTrack] | None) -> int | None:
    """The steps of one epoch where the training bar (``chosen``, as the accumulator picks
    it) is one a format draws once per epoch (Keras, Ultralytics, Lightning): its length, less
    the validation batches it counts; None for any other bar or none."""
    if chosen is None or chosen[1].origin is None:
        return None
    return chosen[1].pass_size
