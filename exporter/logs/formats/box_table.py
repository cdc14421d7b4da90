"""``box-table``: a table drawn with box characters whose rows are the data's splits, as
Ludwig prints one per output feature after each evaluation (tabulate's ``fancy_grid``)::

    │ rating   │   loss │   accuracy │   hits_at_k │
    │ train    │ 1.0847 │     0.7543 │      0.9364 │
    │ vali     │ 1.6780 │     0.5833 │      0.9583 │
    │ test     │ 1.2223 │     0.7264 │      0.9057 │

The header names the feature, then the metrics; a row names its split, then its values.
The train row's ``loss`` is the training loss, the validation row's the eval loss; the
test row is another evaluation, not read (the validation set is what training watches).
Borders (``╒══╤``, ``├──┼``) are no rows. A row names nothing alone, so the accumulator pairs
it with the last header (:mod:`exporter.logs.table_rows`); this module is pure.
"""

from __future__ import annotations

import re

from ...core.model import ProgressReport
from ..lines import EMPTY, MAX_COLUMNS, Format, LineReport
from .pairs import number

_BAR = "│"
_LINE = re.compile(rf"^\s*{_BAR}(.{{1,600}}){_BAR}\s*$")
_NAME = re.compile(r"[A-Za-z_][\w .%/()-]{0,60}")
_TRAIN = frozenset({"train", "training"})
_VALIDATION = frozenset({"vali", "val", "valid", "validation", "dev"})
_SPLITS = _TRAIN | _VALIDATION | {"test"}


def parse_box_table(msg: str, now: float) -> LineReport | None:
    """A box table's header (a name, then metric names, one ``loss``) or a split's row (its
    name, then numbers): its cells, a row's as ``part`` "row"; else None."""
    m = _LINE.match(msg)
    if m is None:
        return None
    cells = tuple(c.strip() for c in m.group(1).split(_BAR))
    if not 2 <= len(cells) <= MAX_COLUMNS or not all(cells):
        return None
    if cells[0].lower() in _SPLITS and all(number(c) is not None for c in cells[1:]):
        return LineReport("box-table", EMPTY, columns=cells, part="row")
    if "loss" in cells[1:] and all(_NAME.fullmatch(c) for c in cells):
        return LineReport("box-table", EMPTY, columns=cells)
    return None


def read_row(header: tuple[str, ...], cells: tuple[str, ...]) -> ProgressReport | None:
    """What a split's row under ``header`` says: the train row's loss, or the validation
    row's as the eval loss; None for any other row, or one that does not fit the header."""
    if len(cells) != len(header) or "loss" not in header[1:]:
        return None
    value = number(cells[header.index("loss")])
    split = cells[0].lower()
    if value is None:
        return None
    if split in _TRAIN:
        return ProgressReport(loss=value)
    if split in _VALIDATION:
        return ProgressReport(eval_loss=value)
    return None


FORMAT = Format("box-table", (_BAR,), parse_box_table)
