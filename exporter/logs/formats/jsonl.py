"""``jsonl``: one JSON object per line, as trainers write them to stdout or a log file.

Keys the native report format names (docs/report-format.md) are taken as they are; every
other key goes through the vocabulary (:mod:`.vocabulary`), so each tool's own names mean
what they say: LLaMA-Factory's ``trainer_log.jsonl`` (``current_steps``, ``total_steps``),
ms-swift's ``"global_step/max_steps": "105/1230"``, fairseq's ``--log-format json``
(``num_updates``, ``valid_loss``, numbers as strings; since 0.10 after its logger's prefix,
``... | INFO | train_inner | {...}``), DeiT- and DINO-style ``log.txt`` (``train_loss``),
Detectron's ``json_stats: {...}`` (``iter``, numbers as strings). LLaMA-Factory's
``throughput`` is its tokens per second (its LogCallback: the tokens seen over the time
since the start), where it counted tokens (``total_tokens`` above 0; else it writes
``"0.00"``). An object after a prefix
naming an evaluation (``| valid | {...}``, ``eval: {...}``) gives its eval loss only.
A record that names its one value (``{"name": "loss", "data": {"step": 2, "value": 4.49,
"epoch": 0.01}}``: caikit-nlp's and fms-hf-tuning's ``training_logs.jsonl``, where
fms-hf-tuning names it ``training_loss`` or ``validation_loss``) is read as that value under
its name beside the data's other keys. ``null`` says nothing. Trainer's summary after
training (``train_runtime`` and ``train_loss``, no ``loss``: ms-swift's ``logging.jsonl``
keeps it) ends the run, its ``train_loss`` the run's mean, not the loss; so does
LLaMA-Factory's record of it (at its last step, with no step's or evaluation's values). A
whole epoch index with no step beside it (a per-epoch summary: 0- or 1-based is the tool's)
is no fractional epoch and is not read.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...core.model import NATIVE_FIELDS, as_float
from ..lines import Format, LineReport, native
from .pairs import Pair, number, to_fields
from .vocabulary import STEP_OF_MAX_KEY, step_of_max

# What may stand before the object, with no brace of its own: a label ("json_stats: {...}":
# Detectron's training_stats) or a logger's prefix (fairseq's --log-format json since 0.10:
# "2020-10-28 17:41:27 | INFO | train_inner | {...}").
_BEFORE = re.compile(r'^([^{]{1,200}?)(?=\{")')
_EVALUATION = re.compile(r"(?i)eval|valid|\bval\b|test")
# The loop's own counter as a JSON key: the step where no step key is there (Detectron's
# "iter", the trainer's iteration as it counts it).
_STEP_IF_NONE = ("iter", "iteration")
_READ = ("step", "loss", "epoch", "max_steps", "eval_loss")  # one of these makes it progress


def _value(raw: object) -> float | None:
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, int | float):
        return as_float(raw)
    if isinstance(raw, str) and len(raw) <= 40:
        return number(raw.strip().rstrip("%"))
    return None


_RECORD_KEYS = frozenset({"name", "data", "timestamp"})


def _named_record(value: dict[str, Any]) -> dict[str, Any]:
    """A record that names its value (``{"name": ..., "data": {..., "value": ...}}``) as one
    object of its data with the value under its name; any other object as it is."""
    name, data = value.get("name"), value.get("data")
    if not (isinstance(name, str) and isinstance(data, dict) and "value" in data):
        return value
    if not value.keys() <= _RECORD_KEYS or name in data:
        return value
    return {**{k: v for k, v in data.items() if k != "value"}, name: data["value"]}


# The values LLaMA-Factory's LogCallback copies from a log of Trainer's that a training step's
# or an evaluation's log has (train/callbacks.py on_log: the last log's loss, eval_loss...).
_LLAMAFACTORY_LOGGED = ("loss", "eval_loss", "predict_loss", "reward", "lr", "learning_rate")


def _llamafactory_summary(value: dict[str, Any]) -> bool:
    """Whether ``value`` is LLaMA-Factory's record of Trainer's summary after training:
    at its last step (``current_steps`` = ``total_steps``) with none of the values a step's or
    an evaluation's log has (null, or left out by the versions that drop None): the log
    train() writes last (``train_runtime``, ``train_loss``)."""
    current, total = value.get("current_steps"), value.get("total_steps")
    if type(current) is not int or current <= 0 or current != total:
        return False
    return all(value.get(key) is None for key in _LLAMAFACTORY_LOGGED)


def _step_of(value: dict[str, Any]) -> int | None:
    """The run's length where a dict says ``"step": i, "of": n`` (LingJie's sft.py:
    ``{"step": step, "of": n_steps, ...}``): n, or None where the two are no such pair."""
    step, total = value.get("step"), value.get("of")
    if type(step) is not int or type(total) is not int or not 0 <= step <= total:
        return None
    return total


def parse_jsonl(msg: str, now: float) -> LineReport | None:
    text = msg.strip()
    before = _BEFORE.match(text)
    # "eval: {...}", fairseq's "| INFO | valid | {...}": an evaluation's object, whose
    # loss is no training loss (its keys may not say so).
    evaluation = before is not None and _EVALUATION.search(before.group()) is not None
    if before is not None:
        text = text[before.end() :]
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict) or len(value) > 512:
        return None
    value = _named_record(value)
    native_keys = set(NATIVE_FIELDS)
    doc: dict[str, object] = {}
    pairs: list[Pair] = []
    # Trainer's summary once training is over, as ms-swift's logging.jsonl keeps it: its
    # train_loss is the whole run's mean, no step's loss, and the dict is the run's end.
    summary = (
        "train_runtime" in value and "train_loss" in value and "loss" not in value
    ) or _llamafactory_summary(value)
    length = _step_of(value)
    for key, raw in value.items():
        if not isinstance(key, str) or raw is None:
            continue
        if summary and key == "train_loss":
            if (mean := _value(raw)) is not None:
                doc["metrics"] = {"train_loss": mean}
            continue
        if key == STEP_OF_MAX_KEY and isinstance(raw, str):
            said = step_of_max(raw)
            if said is not None:
                doc["step"], doc["max_steps"] = said
            continue
        if key in native_keys and not isinstance(raw, str):
            doc.setdefault(key, raw)
            continue
        if key == "of" and length is not None:
            doc["max_steps"] = length
            continue
        number_ = _value(raw)
        if key == "throughput" and "current_steps" in value:
            tokens = _value(value.get("total_tokens"))
            if not tokens:
                continue  # LLaMA-Factory counted no tokens: "0.00" is no throughput
            key = "tokens_per_second"
        if number_ is not None:
            pairs.append(Pair(key, number_, isinstance(raw, str) and raw.strip().endswith("%")))
    if "step" not in doc:
        counter = next((value[k] for k in _STEP_IF_NONE if isinstance(value.get(k), int)), None)
        if counter is not None and not isinstance(counter, bool) and counter >= 0:
            doc["step"] = counter
    fields = to_fields(pairs, evaluation=evaluation)
    if evaluation:
        result = fields.values.get("eval_loss")
        return None if result is None else native({"eval_loss": result}, now, "jsonl")
    for name, v in fields.values.items():
        if name in doc:
            continue
        whole = name in ("step", "max_steps", "tokens") and float(v).is_integer()
        doc[name] = int(v) if whole else v
    if summary:
        doc["final"] = True
    elif not any(k in doc for k in _READ):
        return None
    epoch = doc.get("epoch")
    update = fields.metrics.get("update")
    if isinstance(epoch, int | float) and update is not None and epoch - 1 <= update <= epoch:
        # fairseq's JSON bar: "epoch" is the 1-based epoch under way, "update" the epochs
        # done (epoch - 1 + i / size, fairseq/logging/progress_bar.py).
        doc["epoch"] = epoch = update
    # (is_integer: an infinite or NaN epoch is no whole number, where int() would raise)
    if isinstance(epoch, int | float) and as_float(epoch).is_integer() and "step" not in doc:
        del doc["epoch"]
    if fields.metrics:
        doc["metrics"] = {**fields.metrics, **doc.get("metrics", {})}  # type: ignore[dict-item]
    return native(doc, now, "jsonl")


FORMAT = Format("jsonl", ("{",), parse_jsonl)
