"""``jsonl``: one JSON object per line carrying step or loss keys."""

from __future__ import annotations

import json

from ...model import NATIVE_FIELDS
from ..lines import Format, LineReport, native

_JSON_KEYS = {"step", "global_step", "loss", "train_loss", "epoch", "max_steps", "total_steps"}


def parse_jsonl(msg: str, now: float) -> LineReport | None:
    text = msg.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict) or not _JSON_KEYS & set(value):
        return None
    doc = dict(value)
    if "global_step" in doc and "step" not in doc:
        doc["step"] = doc.pop("global_step")
    if "total_steps" in doc and "max_steps" not in doc:
        doc["max_steps"] = doc.pop("total_steps")
    if "train_loss" in doc and "loss" not in doc:
        doc["loss"] = doc.pop("train_loss")
    known = set(NATIVE_FIELDS)
    metrics = {
        k: v
        for k, v in doc.items()
        if k not in known and isinstance(v, int | float) and not isinstance(v, bool)
    }
    fields = {k: v for k, v in doc.items() if k in known}
    return native({**fields, "metrics": metrics}, now, "jsonl")


FORMAT = Format("jsonl", ("{",), parse_jsonl)
