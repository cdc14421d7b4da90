"""Whether a line moves the run on from what the lines before it said: past it, or back to
an earlier step.

Two states a log's reader sets and must be able to take back: a traceback's failure (the
run trained on after it, so it was not how the run ended) and a run's end (a script that
trains again in the same process, or a tool that launches again into the same log, starts
its next run after the last one's end marker: detectron2's file logger appends every launch
to one ``log.txt``, a script may call ``trainer.train()`` once per fold).
"""

from __future__ import annotations

from collections.abc import Mapping

from .bars import BarTrack
from .lines import LineReport
from .parse import bar_key


def after_a_crash(
    line: LineReport, said: object, bars: Mapping[tuple[str, int | None], BarTrack]
) -> bool:
    """Whether ``line`` shows the log went on past a traceback's failure: training beyond
    what was read before it (:func:`advances`), or a training's start announced (a banner:
    a new attempt, the script run again into the same log), after which the crash was an
    earlier attempt's, not how the run ended."""
    return line.parser == "banner" or advances(line, said, bars)


def advances(
    line: LineReport, said: object, bars: Mapping[tuple[str, int | None], BarTrack]
) -> bool:
    """Whether ``line`` shows training beyond what was read before it (``said``, the step
    read so far; ``bars``, the bars' tracks): a printed step past the last one, or a bar past
    its last count (a bar's final frame redrawn as the process exits after its traceback is
    no progress)."""
    step = line.report.step
    if step is not None:
        return not isinstance(said, int) or step > said
    if line.bar is not None:
        track = bars.get(bar_key(line.bar))
        return track is None or line.bar.n > track.last_n
    return False


def starts_over(line: LineReport, said: object) -> bool:
    """Whether ``line`` prints a step below the one read before it (``said``). After a run's
    end that is a new run in the same log; the end's own lines never do (detectron2 logs its
    final save before the last iteration's metrics, a step past it). A training bar that
    starts over after the end is the accumulator's to see (it tells its passes apart)."""
    step = line.report.step
    return step is not None and isinstance(said, int) and step < said
