"""The training table a log printed last: its header, and the rows read under it.

A row of a training table names nothing alone (:mod:`exporter.logs.formats.table`): its
cells mean what the last header above it says. This keeps that header for one log, and
makes each row under it the report it is, where it fits the header and counts on from the
row before (a matrix printed later is no row).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.model import ProgressReport
from .formats import box_table, table
from .formats.pairs import number
from .lines import LineReport


@dataclass
class TableRows:
    """The last table header one log printed, and the count of its last row read."""

    header: tuple[str, ...] = ()
    starts: tuple[int, ...] = ()  # where the header's columns start, where they are aligned
    count: int = -1
    # A box table's header (exporter.logs.formats.box_table): its rows are the data's splits.
    box_header: tuple[str, ...] = ()

    def take(self, line: LineReport) -> LineReport | None:
        """A table's line as the log's accumulator takes it: a header is kept (and taken
        as it is); a row becomes the report it makes under that header, or None where it
        makes none (numbers under no header, or not the header's)."""
        if line.parser == "box-table":
            if not line.part:
                self.box_header = line.columns
                return line
            report = box_table.read_row(self.box_header, line.columns)
        elif not line.part:
            self.header, self.starts, self.count = line.columns, line.offsets, -1
            return line
        else:
            report = self._row(line.columns, line.offsets)
        if report is None:
            return None
        return line._replace(report=report, columns=(), part="")

    def _row(self, cells: tuple[str, ...], at: tuple[int, ...]) -> ProgressReport | None:
        if self.header and len(cells) < len(self.header):
            cells = table.placed(self.header, self.starts, cells, at) or cells
        if not self.header or len(cells) != len(self.header):
            return None
        if not table.counted(self.header):
            return table.read_row(self.header, cells)  # values only, an epoch a row
        count = table.counter(cells)
        if count is None or count < self.count:
            return None
        report = table.read_row(self.header, cells)
        if report is not None:
            self.count = count
        return report


def row_total(columns: tuple[str, ...], values: tuple[str, ...]) -> float | None:
    """The loss of a training table's row under its header (``columns``): its ``total``
    column, where the header has one (YOLOv5 before 6 and YOLOv7: box + obj + cls). The
    components alone (``box_loss``, ``cls_loss``...) are parts, never the loss: None."""
    if not values or len(values) != len(columns) or "total" not in columns:
        return None
    return number(values[columns.index("total")])
