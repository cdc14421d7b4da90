"""``transformers``: ``Trainer``'s log dicts, a Python repr whose values are strings in recent
versions: ``{'loss': '6.903', 'grad_norm': '1.095', 'learning_rate': '4.6e-05', 'epoch': '0.1'}``
(transformers ``trainer.py``, ``Trainer.log``); the final one carries ``train_runtime`` and
``train_loss`` and no ``loss``.
"""

from __future__ import annotations

import ast
import re

from ..lines import Format, LineReport, native
from .vocabulary import STEP_OF_MAX_KEY, field_of, step_of_max

# The dict alone on its line, or after a logger's prefix (TFTrainer, and Trainer under
# transformers' own logging: "[INFO|trainer_tf.py:398] 2021-01-15 10:28:50,371 >> {...}") or a
# launcher's, which ends in ":" with no space (torchrun --tee's "[rank0]:{...}", "[default0]:",
# mpirun's "[1,0]<stdout>:").
_DICT = re.compile(r"^(?:[^{]{0,200}[\s:])?(\{'[A-Za-z_][\w./-]*': .*\})\s*$")
# The dict after a bar's frames on one line: Trainer's ProgressCallback writes it with
# tqdm.write, which blanks the bar's line first ("\r" + spaces + "\r"); a copy of the log
# that lost its carriage returns keeps the frames, the blanking spaces and then the dict.
_AFTER_FRAME = re.compile(r"(?:it/s|s/it)\]\s{2,}(\{'[A-Za-z_][\w./-]*': .*\})\s*$")
_TRANSFORMERS_KEYS = {
    "loss",
    "grad_norm",
    "learning_rate",
    "epoch",
    "eval_loss",
    "train_runtime",
    "train_loss",
    "eval_runtime",
}


# The shape Trainer prints ({'loss': '6.9', 'epoch': 0.1}), read without ast: literal_eval
# costs 30 µs a line. Anything else falls back to literal_eval.
_FLAT_PAIR = r"'[A-Za-z_][\w./-]*': (?:'[^'\\]*'|[-+\w.]+)"
_FLAT_DICT = re.compile(rf"\{{{_FLAT_PAIR}(?:, {_FLAT_PAIR})*\}}")
_FLAT_ITEM = re.compile(r"'([A-Za-z_][\w./-]*)': (?:'([^'\\]*)'|([-+\w.]+))")


def literal_dict(text: str) -> object:
    """The dict ``text`` writes, or None; never evaluates code."""
    if _FLAT_DICT.fullmatch(text):
        out: dict[str, object] = {}
        for key, quoted, bare in _FLAT_ITEM.findall(text):
            if quoted or not bare:
                out[key] = quoted
            elif bare in ("True", "False", "None"):
                out[key] = {"True": True, "False": False, "None": None}[bare]
            else:
                try:
                    out[key] = int(bare) if bare.lstrip("-+").isdigit() else float(bare)
                except ValueError:
                    return _slow_literal(text)
        return out
    return _slow_literal(text)


def _slow_literal(text: str) -> object:
    try:
        return ast.literal_eval(text)  # a literal only: never code
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def _best(value: dict[object, object], name: str) -> str | None:
    """The key of ``value`` the vocabulary ranks best among those naming field ``name``
    with a number, or None."""
    ranked = [
        (found[1], k)
        for k, v in value.items()
        if isinstance(k, str)
        and isinstance(v, int | float)
        and not isinstance(v, bool)
        and (found := field_of(k)) is not None
        and found[0] == name
    ]
    return min(ranked)[1] if ranked else None


def parse_transformers(msg: str, now: float) -> LineReport | None:
    if "{'" not in msg:
        return None
    m = _DICT.match(msg) or _AFTER_FRAME.search(msg)
    if not m:
        return None
    value = literal_dict(m.group(1))
    if not isinstance(value, dict):
        return None
    loss_key = None if "loss" in value else _best(value, "loss")
    step_key = "step" if "step" in value else _best(value, "step")
    if _TRANSFORMERS_KEYS.isdisjoint(value) and not (loss_key or step_key):
        # A dict of the same family that names its loss or step otherwise (ParlAI's train
        # report: "{'exs': 570, 'mean_loss': 4.698, ..., 'total_train_updates': 73}").
        return None
    known = {
        k: value[k]
        for k in ("loss", "grad_norm", "learning_rate", "eval_loss", "epoch")
        if k in value
    }
    if loss_key is not None and "train_runtime" not in value:
        # A trainer of Trainer's family that names its loss otherwise (TRL's PPOTrainer:
        # "loss/policy_avg"): the vocabulary's best-ranked loss key.
        known["loss"] = value[loss_key]
    step = value.get(step_key) if step_key else None
    if isinstance(step, int | float) and not isinstance(step, bool) and step >= 0 and step % 1 == 0:
        # TFTrainer's dicts carry its global_step (trainer_tf.py), ParlAI's its
        # total_train_updates.
        known["step"] = int(step)
    elif (said := step_of_max(value.get(STEP_OF_MAX_KEY))) is not None:
        known["step"], known["max_steps"] = said  # ms-swift's dicts on stdout
    elif "final_loss" in value and isinstance(done := value.get("total_steps"), int):
        # A summary once training is over ({'total_steps': 24, 'avg_loss': ..., 'final_loss':
        # ...}): its total is the steps done, no length planned.
        known["step"], step_key = done, "total_steps"
    rest = {
        k: v
        for k, v in value.items()
        if k not in known and k not in (step_key, STEP_OF_MAX_KEY) and isinstance(k, str)
    }
    doc: dict[str, object] = {**known, "metrics": rest}
    if "train_runtime" in value and "train_loss" in value and "loss" not in value:
        # The summary Trainer logs once training is over (trainer.py: speed_metrics("train",
        # ...) plus train_loss): never a step's dict, which carries its "loss" (Unsloth's
        # step dicts carry train_runtime too).
        doc["final"] = True
    return native(doc, now, "transformers")


FORMAT = Format("transformers", ("{'",), parse_transformers)
