"""``boosting``: the gradient-boosting libraries' line per round (Kubeflow's XGBoostJob runs
them on Kubernetes, and so do plain Jobs).

    [500]   eval-logloss:0.41906    train-logloss:0.160439                XGBoost (xgb.train)
    [5739]  validation_0-mae:73.1365        validation_0-rmse:133.785     XGBoost (scikit-learn API)
    [4]     training's binary_logloss: 0.77109  valid_1's binary_logloss: 0.770573   LightGBM
    [30]:   train's l2:0.0850142    valid's l2:0.0935492                  LightGBM (R)
    [LightGBM] [Info] Iteration:21, training binary_logloss : 0.199708   LightGBM (CLI: a line
                                                                          per set and metric)
    600:    learn: 0.1498213   test: 0.1367448   best: 0.1366783 (566)   total: 28.9s
            remaining: 19.2s                                              CatBoost

The round is the step as the library prints it (XGBoost and CatBoost count from 0, LightGBM
from 1); none prints the number of rounds. Each value is kept as a custom metric
``<set>_<metric>``. The loss is the one loss metric (a log loss, an error in the target's
units: not an AUC, an error rate or a ranking score) of the training set (``train``,
``training``, ``learn``, ``dtrain``); the eval loss likewise of the line's one validation set
(``eval``, ``valid``, ``valid_1``, ``validation_0``, ``test``...). Two validation sets, two
loss metrics in a set, or a set named otherwise: neither, as a guess could be wrong (the
scikit-learn API names every set ``validation_N``, the training set among them).

CatBoost prints one metric and not its name: the loss function's value, unless the user
set an ``eval_metric`` (an AUC, say). Its ``best:`` is the best test value so far: above the
test value, the metric is maximized and none of the line's values is a loss.

The end: LightGBM's command line prints ``Finished training`` (``Finish train`` before 2017)
once the model is saved (``Application::Train``); the other libraries print no end.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..lines import Format, LineReport, native
from .pairs import PRINTF_NUMBER, number

MAX_LINE = 2048
_NUM = PRINTF_NUMBER
# One set's metric: XGBoost "train-logloss:0.16" (its cv adds "+0.01", the spread), LightGBM
# "training's binary_logloss: 0.77" (its R package without the space, its cv "+ 0.01").
_ITEM = (
    rf"(?P<set>[A-Za-z_][\w.]{{0,63}}?)(?:-|'s )(?P<metric>[A-Za-z][\w@.\-]{{0,63}}):\s?"
    rf"(?P<value>{_NUM})(?:\s?\+\s?(?:{_NUM}))?"
)
_ITEM_RE = re.compile(_ITEM)
_ANY_ITEM = re.sub(r"\(\?P<\w+>", "(?:", _ITEM)
_ROUND = re.compile(
    rf"^\[(?P<i>\d{{1,9}})\]:?\s+(?P<items>(?:{_ANY_ITEM})(?:\s+(?:{_ANY_ITEM}))*)\s*$"
)
_CLI = re.compile(
    r"^\[LightGBM\] \[Info\] Iteration:(?P<i>\d{1,9}), (?P<set>[\w.]{1,64}?)(?:'s)? "
    rf"(?P<metric>[\w@.\- ]{{1,64}}?)\s?: (?P<value>{_NUM})\s*$"
)
_CLI_END = re.compile(r"^\[LightGBM\] \[Info\] Finish(?:ed)? train(?:ing)?\s*$")
_CATBOOST = re.compile(
    rf"^(?P<i>\d{{1,9}}):\s+learn:? ?(?P<learn>{_NUM})(?:passed: [^\t]*?)?"
    rf"(?:\s+test: (?P<test>{_NUM}))?(?:\s+test\d+: (?:{_NUM}))*"
    rf"(?:\s+best: (?P<best>{_NUM}) \(\d{{1,9}}\))?"
    r"\s+total: [\w. ]{1,40}?\s+remaining: [\w. ]{1,40}$"
)
_TRAIN_SETS = frozenset({"train", "training", "learn", "dtrain"})
_EVAL_SET = re.compile(r"(?:eval|valid|val|validation|test|dtest|dvalid)(?:_?\d{1,3})?")
# Metrics that measure how good, not how wrong: never the loss.
_NOT_LOSS = re.compile(
    r"(?i)(?:auc|aucpr|auc_mu|average_precision|map|ndcg|pre|precision|recall|f1|accuracy|"
    r"r2|(?:binary_|multi_|m)?error)(?:@.*)?"
)


class _Value(NamedTuple):
    set: str
    metric: str
    value: float


def _name(text: str) -> str:
    return re.sub(r"[^\w]+", "_", text).strip("_")[:64] or "value"


def _doc(step: int, values: list[_Value], cli: bool = False) -> dict[str, object]:
    """The report of one round: its values as custom metrics, and the loss and the eval loss
    where the module's docstring says which they are."""
    doc: dict[str, object] = {
        "step": step,
        "metrics": {f"{_name(v.set)}_{_name(v.metric)}": v.value for v in values},
    }
    evals = {v.set for v in values if _EVAL_SET.fullmatch(v.set)}
    # The one validation set of the line; the command line prints one set a line, so there
    # only its first validation file (valid_1).
    if len(evals) != 1 or (cli and evals != {"valid_1"}):
        evals = set()
    for key, sets in (("loss", _TRAIN_SETS), ("eval_loss", evals)):
        losses = [v for v in values if v.set in sets and not _NOT_LOSS.fullmatch(v.metric)]
        if len(losses) == 1:
            doc[key] = losses[0].value
    return doc


def parse_boosting(msg: str, now: float) -> LineReport | None:
    if len(msg) > MAX_LINE:
        return None
    text = msg.rstrip("\r\n")
    if (m := _ROUND.match(text)) is not None:
        values = []
        for item in _ITEM_RE.finditer(m["items"]):
            value = number(item["value"])
            if value is None:
                return None
            values.append(_Value(item["set"], item["metric"], value))
        return native(_doc(int(m["i"]), values), now, "boosting")
    if (m := _CLI.match(text)) is not None:
        value = number(m["value"])
        if value is None:
            return None
        return native(_doc(int(m["i"]), [_Value(m["set"], m["metric"], value)], cli=True), now,
                      "boosting")  # fmt: skip
    if _CLI_END.match(text) is not None:
        return native({"final": True}, now, "boosting")
    if (m := _CATBOOST.match(text)) is not None:
        return native(_catboost(m), now, "boosting")
    return None


def _catboost(m: re.Match[str]) -> dict[str, object]:
    learn, test, best = (number(m[k]) if m[k] else None for k in ("learn", "test", "best"))
    doc: dict[str, object] = {"step": int(m["i"])}
    metrics = {k: v for k, v in (("learn", learn), ("test", test), ("best", best)) if v is not None}
    doc["metrics"] = metrics
    maximized = best is not None and test is not None and best > test
    if not maximized:
        if learn is not None:
            doc["loss"] = learn
        if test is not None:
            doc["eval_loss"] = test
    return doc


FORMAT = Format("boosting", ("]\t", "'s ", "Iteration:", "remaining: ", "Finish"), parse_boosting)
