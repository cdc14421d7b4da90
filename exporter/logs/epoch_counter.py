"""A printed step that counts within an epoch, its epoch on a header line of its own.

Hand-written loops often print the epoch once and then count its batches::

    --- Epoch 2 ---                         Epoch 2/3
    [Step 100] Past 100 steps: ...          Step 100/938, loss 0.31

The count alone looks like the run's step; it is not once it starts over under a later
header (or stands still across one: a run's own counter moves on in a new epoch). From then
on the run's step is the earlier epochs' steps plus the count: each epoch's size where the
counter prints it (``/938``), else the last count the epoch printed where the counter
printed every step (a count printed every so many steps falls short of the size by up to
an interval: unknown; so do the epochs a log skipped). Not where a count of 0 was printed
(DGL's GraphSAGE: ``Epoch 00029 | Step 00000``, then ``Step 00020``): such a counter is the
index of a batch, printed when it begins an interval, so an epoch's last count falls short
of its size by up to an interval, and the run's step is unknown once it starts over. A
counter that never starts over is the run's, as printed, and so is one that starts over
without a later header (the script run again).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class EpochCounter:
    """What the headers and the counts under them said so far (one per log)."""

    header: int | None = None  # the newest header's epoch
    epochs: int | None = None  # the run's epochs, where a header names them ("Epoch 2/3")
    base: int | None = 0  # the steps of the epochs before the counter's current one
    zero: bool = False  # a count of 0 was printed: the counter indexes batches
    last: int | None = None  # the last count printed
    last_header: int | None = None  # the header it was printed under
    size: int | None = None  # an epoch's steps, where the counter prints them
    relative: bool = False  # the counter started over under a later header
    from_zero: bool = False  # "Epoch 0/24" was read: headers print the last epoch's index
    first_header: int | None = None  # the header the first count was printed under
    strided: bool = False  # two counts under one header more than one apart: an interval

    def heading(self, epoch: int, epochs: int | None) -> None:
        """A header line: epoch ``epoch`` (of ``epochs``, where it says) begins."""
        self.header = epoch
        if epochs:
            self.epochs = epochs

    def count(
        self, step: int, total: int | None, printed: int | None = None
    ) -> tuple[int | None, int | None]:
        """The run's step and total for a count printed under the headers (and the
        counter's own total, if it prints one; ``printed``, a size its line printed that may
        be the epoch's or the run's): as printed until the counter starts over, then None
        where the epochs' sizes are unknown. Once it starts over, ``printed`` is the epoch's
        (a run's total does not start over)."""
        if self.header is None:
            return step, total
        self.zero = self.zero or step == 0
        if self.first_header is None:
            self.first_header = self.header
        last, last_header = self.last, self.last_header
        if last is not None and last_header == self.header and step > last + 1:
            self.strided = True
        # A count that did not move on over a new epoch's header: it counts within epochs.
        if (
            last is not None
            and last_header is not None
            and step <= last
            and self.header > last_header
        ):
            total = printed if total is None else total
            if not self.relative and self.first_header not in (0, 1):
                # Counted from a later epoch on (a log read from the middle of a run): the
                # steps of the epochs before the first one seen are not in it.
                self.base = None
            if self.base is None:
                pass  # an earlier epoch's size was unknown: so is the run's step
            elif total is not None and total >= last:
                self.base += total * (self.header - last_header)
            elif self.zero or self.strided or self.header - last_header != 1:
                # The epoch's last index printed is not its size; nor is a count printed
                # every so many steps (SAM-Med3D's "Step: 100" every 20 of an epoch it never
                # sizes); nor is one epoch's last count the size of epochs the log skipped.
                self.base = None
            else:
                self.base += last
            self.relative = True
        self.last, self.last_header = step, self.header
        if total is not None:
            self.size = total
        if not self.relative:
            return step, total
        run_total = self.size * self.epochs if self.size and self.epochs else None
        if self.base is None:
            return None, run_total
        return self.base + step, run_total


@dataclass
class WithinEpoch:
    """Counts within an epoch whose size their own line does not print: the
    Time-Series-Library's ``iters: 200, epoch: 5`` (its summary line prints the size), the
    CIFAR-10 tutorial's ``[2, 2000]`` (never printed). One per log."""

    size_at_least: int = 0  # the largest step read before a later epoch's count came

    def place(
        self, within: tuple[int, int], steps_per_epoch: float | None, step_read: object
    ) -> tuple[int | None, float | None]:
        """The run's step and fractional epoch for ``within`` (epochs done, the count): exact
        where an earlier line printed the epoch's size, nothing for a count past it. Where no
        line printed it, no step (the one read so far is an earlier epoch's), but an epoch
        placed by the first epoch's last count, a size it has at least: a run whose step
        became unknown still shows that it moves on, and is not stalled."""
        done, count = within
        if steps_per_epoch:
            if count > steps_per_epoch:
                return None, None
            return int(done * steps_per_epoch) + count, done + count / steps_per_epoch
        if isinstance(step_read, int) and step_read > self.size_at_least:
            self.size_at_least = step_read
        if self.size_at_least <= 0:
            return None, None
        at = done + min(count / self.size_at_least, 1.0)
        self.size_at_least = max(self.size_at_least, count)  # an epoch holds at least its count
        return None, at
