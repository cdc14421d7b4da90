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

Lightning prints the results of ``trainer.validate()`` and ``trainer.test()`` as such a table
when ``rich`` is installed (``_EvaluationLoop._print_results``): a header in heavy bars,
``┃ Validate metric ┃ DataLoader 0 ┃`` (``Test metric``), then a row a metric,
``│ val_loss │ 5.576150417327881 │`` (2.5: ``┃ Runningstage.validating ┃ ┃`` above ``┃ metric ┃
DataLoader 0 ┃``). Under the validation's header a loss is the eval loss;
under the test's, the ``test_loss`` metric (the validation set is what training watches).
"""

from __future__ import annotations

import re

from ...core.model import ProgressReport
from ..lines import EMPTY, MAX_COLUMNS, Format, LineReport
from .pairs import number
from .vocabulary import TEST_LOSS, field_of

_BAR = "│"
_LINE = re.compile(rf"^\s*{_BAR}(.{{1,600}}){_BAR}\s*$")
_NAME = re.compile(r"[A-Za-z_][\w .%/()-]{0,60}")
_TRAIN = frozenset({"train", "training"})
_VALIDATION = frozenset({"vali", "val", "valid", "validation", "dev"})
_SPLITS = _TRAIN | _VALIDATION | {"test"}
_HEAVY_LINE = re.compile(r"^\s*┃(.{1,600})┃\s*$")
# Lightning 2.5's header names the stage by its enum's repr on a row of its own, above
# "┃ metric ┃ DataLoader 0 ┃" ("┃ Runningstage.validating ┃ ┃"): that row is the header.
_RESULTS = re.compile(
    r"(?i)^(?:(?P<stage>validate|test) metric|runningstage\.(?P<running>validat|test)ing)$"
)
_DATALOADER = re.compile(r"^DataLoader \d{1,3}$")


def parse_box_table(msg: str, now: float) -> LineReport | None:
    """A box table's header (a name, then metric names, one ``loss``) or a split's row (its
    name, then numbers): its cells, a row's as ``part`` "row"; else None."""
    if (heavy := _HEAVY_LINE.match(msg)) is not None:
        cells = tuple(c.strip() for c in heavy.group(1).split("┃"))
        if (found := _RESULTS.match(cells[0])) and all(
            _DATALOADER.match(c) or (found["running"] and not c) for c in cells[1:]
        ):
            return LineReport("box-table", EMPTY, columns=cells)  # Lightning's results
        return None
    m = _LINE.match(msg)
    if m is None:
        return None
    cells = tuple(c.strip() for c in m.group(1).split(_BAR))
    if not 2 <= len(cells) <= MAX_COLUMNS or not all(cells):
        return None
    numbers = all(number(c) is not None for c in cells[1:])
    if numbers and (cells[0].lower() in _SPLITS or field_of(cells[0]) is not None):
        return LineReport("box-table", EMPTY, columns=cells, part="row")
    if "loss" in cells[1:] and all(_NAME.fullmatch(c) for c in cells):
        return LineReport("box-table", EMPTY, columns=cells)
    return None


def read_row(header: tuple[str, ...], cells: tuple[str, ...]) -> ProgressReport | None:
    """What a split's row under ``header`` says: the train row's loss, or the validation
    row's as the eval loss; None for any other row, or one that does not fit the header."""
    if header and (results := _RESULTS.match(header[0])) is not None:
        stage = results["stage"] or results["running"].lower().replace("validat", "validate")
        return _result(stage.lower(), cells)
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


def _result(stage: str, cells: tuple[str, ...]) -> ProgressReport | None:
    """A row of Lightning's results table (one metric, its value on the first dataloader):
    a loss is the eval loss under ``validate``, the test loss metric under ``test``."""
    found = field_of(cells[0])
    value = number(cells[1]) if len(cells) > 1 else None
    if found is None or found[0] not in ("loss", "eval_loss") or value is None:
        return None
    if stage == "test":
        return ProgressReport(metrics=((TEST_LOSS, value),))
    return ProgressReport(eval_loss=value)


FORMAT = Format("box-table", (_BAR, "┃"), parse_box_table)
