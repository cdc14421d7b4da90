"""The step Trainer's log dicts count where no bar counts it.

Hugging Face Trainer logs a dict every ``logging_steps`` optimizer steps (``{'loss': 4.48,
'grad_norm': ..., 'epoch': 1.9}``) and names no step in it; a log without its bar (stdout
redirected, ``disable_tqdm``) may still print the step elsewhere, as DeepSpeed's ``Checkpoint
global_step450 is about to be saved!`` every ``save_steps``. Between two such steps the dicts
come evenly: 5 between 400 and 450 is one every 10 steps, so three after 450 are at 480. The
count is only trusted where two gaps measured it alike; otherwise the step printed stands.

The dicts' last loss is kept too: Trainer's closing summary (``{'train_runtime': ...,
'train_loss': 0.6491, ...}``) gives the run's mean, and a script's callback may print that
mean as its last line's loss (``step=613 | loss=0.649056``): no step's loss, so the last
dict's stands.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class DictSteps:
    """The printed steps and the training dicts between them, in one log."""

    anchor: int | None = None  # the last step printed by another line
    since: int = 0  # training dicts read since it
    gaps: list[int] = field(default_factory=list)  # steps per dict, each gap's
    loss: float | None = None  # the last training dict's loss

    def mean_repeated(
        self, closing: tuple[tuple[str, float], ...], values: dict[str, object]
    ) -> float | None:
        """The last dict's loss where the loss in ``values``, read since, is the run's mean
        the ``closing`` summary's metrics give (to its four places); else None."""
        mean, now = dict(closing).get("train_loss"), values.get("loss")
        if mean is None or self.loss is None or not isinstance(now, float) or now == self.loss:
            return None
        return self.loss if math.isclose(now, mean, rel_tol=5e-4) else None

    def printed(self, step: int) -> None:
        """A step printed by a line other than a dict: a new anchor, and where dicts came
        since the last one, the steps each of them stood for (0 where uneven or none)."""
        if self.anchor is not None and step == self.anchor:
            return  # the same save announced twice ("about to be saved", "is ready now")
        if self.anchor is not None and step > self.anchor and self.since > 0:
            gap, rest = divmod(step - self.anchor, self.since)
            self.gaps.append(gap if rest == 0 else 0)
        elif self.anchor is not None:
            self.gaps.append(0)  # no dict between, or back in steps: nothing to count on
        self.anchor, self.since = step, 0

    def interval(self) -> int | None:
        """The steps one dict stands for: where the last two gaps measured the same
        whole number of steps, else None."""
        if len(self.gaps) < 2 or 0 in self.gaps[-2:] or self.gaps[-1] != self.gaps[-2]:
            return None
        return self.gaps[-1]

    def dict_seen(self) -> int | None:
        """One more training dict: the step it is at, where the dicts' interval is known."""
        self.since += 1
        each = self.interval()
        if self.anchor is None or each is None:
            return None
        return self.anchor + self.since * each
