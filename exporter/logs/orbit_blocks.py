"""Orbit's output dict a log printed over several lines: whose its entries are.

Orbit's controller pretty-prints a step's output under its header when it does not fit on
the line (:mod:`exporter.logs.formats.model_garden`); the entry lines do not say whether
they are the train step's or an evaluation's. This keeps, for one log, the block the last
header opened, and makes each entry the value it is in it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .formats import model_garden
from .lines import LineReport

_BLOCKS = (model_garden.TRAIN_BLOCK, model_garden.EVAL_BLOCK)
_ENTRIES = (model_garden.ENTRY, model_garden.LAST_ENTRY)


@dataclass
class OrbitBlocks:
    """The block Orbit's last header opened in one log, until its dict closes or another
    line is read."""

    open: str | None = None

    def take(self, line: LineReport) -> LineReport | None:
        """``line`` as the log's accumulator takes it: an entry becomes its block's value
        (None, dropped, under no block: a dict printed by anyone else); a header opens its
        block; any other line closes it."""
        if line.part not in _ENTRIES:
            self.open = line.part if line.part in _BLOCKS else None
            return line
        block = self.open
        if block is None:
            return None
        self.open = block if line.part == model_garden.ENTRY else None
        return model_garden.in_block(line, block)
