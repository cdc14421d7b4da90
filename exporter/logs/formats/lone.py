"""``lone``: a loss printed on a line of its own, and Stable-Baselines3's console table.

Some tools print one value per line rather than a counter with its pairs:

    2024-04-23 15:23:41.803760: train_loss -0.7526                    nnU-Net v2
    2022-02-11 09:39:24.112771: train loss : -0.6745                  nnU-Net v1
    [INFO 2017-03-02 18:11:38,332 kur.model.executor:175] Validation loss: 155.686   kur
        train/CrossEntropyLoss=0.0                                    OLMo's block, under its
                                                                      "[step=3/739328,epoch=0]"
    |    loss                 | 20.1        |                         Stable-Baselines3
     | policy_loss              | -0.011813248  |                     Stable Baselines 2
                        Mean surrogate loss: -0.0076                  rsl_rl (Isaac Lab)
      • Loss: 0.0123                                                NeMo RL, under its
        • Validation loss: 0.6645                                   "📊 Training Results:"

The line is the pair and nothing else (after a date and time, a table's borders, or a
bullet: NeMo RL prints its results one ``  • {name}: {value:.4f}`` line each), and
only the vocabulary's losses are read from it: a lone ``Total params: 9`` or ``lr: 0.01``
says nothing about the run that a custom metric should keep. In SB3's table the row
``total_timesteps`` is the environment steps so far, which ``learn(total_timesteps=N)``
counts to N (stable_baselines3/common/logger.py prints the table); that row is the step.

A phase's line names the phase, then its loss first (no counter; the epoch is on a header
line of its own, or nowhere): the PyTorch transfer-learning tutorial's ``train Loss: 0.5821
Acc: 0.6844`` and ``val Loss: 0.2232 Acc: 0.9281`` (``print(f'{phase} Loss: ...')``), GAT's
``Training: loss = 1.46, acc = 0.53 | Val: loss = 1.68, acc = 0.49`` (one segment a phase).
The PyTorch tutorials' ``Test Error: Avg loss: 0.0629`` (and a loop's ``Train Error: Avg loss:
0.2325`` beside it) is such a line too. A validation or test phase's loss is the eval loss.
"Validation loss decreased (0.52 --> 0.48)" (an early-stopping note) is none: the loss must be
a ``loss: value`` pair.

The Annotated Transformer's ``train_worker`` prints what ``run_epoch`` returns after each
validation (``print(sloss)``; the training epochs' return is not printed): the evaluation's
mean loss as a tensor's repr, then its ``TrainState``: ``(tensor(1.5898),
<__main__.TrainState object at 0x000001EDF0FB6C90>)``. That line is the eval loss.

Transformers' ``log_metrics`` prints its table under ``***** train metrics *****``, each row
``"  {key: <{k_width}} = {value:>{v_width}}"`` (trainer_pt_utils.py). Its ``train_`` rows sum
up the whole run (``train_loss`` is the mean over every step), so they are not read; an
``eval_loss`` row is an evaluation's loss.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native
from .pairs import PAIR, PRINTF_NUMBER, Pair, find_pairs, number, to_fields

MAX_LINE = 256
# A date and time before the pair ("2024-04-23 15:23:41.803760: "), as loggers stamp lines.
_STAMP = re.compile(
    # (A pipe may lead the line: "| 2021-07-08 17:13:34 | INFO | Validation loss: 0.634, ...".)
    r"^\s*(?:\|\s)?(?:\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?\]?:?"
    # Python logging's "%(asctime)s - %(name)s - %(levelname)s - %(message)s" (the
    # cookbook's format: "2026-01-17 04:38:30 - training.trainer - INFO - validation loss:
    # 3.0839"), with or without the logger's name; or its fields between pipes, fairseq's
    # "%(asctime)s | %(levelname)s | %(name)s | %(message)s" (the name may be left out).
    r"(?:(?: - [\w.]{1,64})? - (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) -"
    r"| \| (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \|(?: [\w.]{1,64} \|)?)?"
    # A logger's bracket with its level first (kur's "[INFO 2017-03-02 18:11:38,332
    # kur.model.executor:175] Validation loss: 155.686").
    r"|\[(?:DEBUG|INFO|WARNING|WARN|ERROR) [^\[\]]{1,160}\])\s+"
)
# SB3's row: "|    loss                 | 20.1        |" (Stable Baselines 2 indents its table:
# " | policy_loss              | -0.011813248  |").
_ROW = re.compile(r"^\s*\|\s+(?P<key>[A-Za-z_][\w/.]{0,64})\s+\|\s+(?P<value>\S{1,40})\s+\|$")
_READ = ("loss", "eval_loss")
# A list's bullet before the pair (NeMo RL's nemo_rl/algorithms/*.py: "  • Loss: 0.0123").
_BULLET = re.compile(r"^[•·]\s+")
# (Two spaces at least: pasted into a README it may be indented further.)
_TRAINER_METRICS_ROW = re.compile(r"^ {2,}train_\w+ *= +\S+$")
_PHASE = re.compile(
    r"^(?P<phase>train|training|val|valid|validation|test|eval)(?: error)?\s*:?\s+"
    # "loss: 0.58", or the number after spaces: the fine-tuning tutorials' "Val   loss 0.139"
    # padded under "Train loss 0.141" ("Validation loss decreased (...)" is no such pair).
    r"(?=(?:avg\.?\s|average\s|mean\s)?loss(?:\s*[:=]|\s+[-+]?\.?\d))",
    re.I,
)
_EVALUATIONS = ("val", "valid", "validation", "test", "eval")


def _phases(body: str) -> tuple[dict[str, object], bool]:
    """The losses of a line of phases (``train Loss: 0.58 Acc: 0.68``, ``Training: loss =
    1.46, ... | Val: loss = 1.68, ...``), each segment's by its phase (an evaluation's loss
    is the eval loss), and whether that eval loss is a test phase's; empty unless every
    segment is a phase's (a last ``Time: ...`` aside)."""
    doc: dict[str, object] = {}
    tested = False
    for segment in (s.strip() for s in body.split(" | ")):
        m = _PHASE.match(segment)
        if m is None:
            kept = doc if doc and segment.lower().startswith("time") else {}
            return kept, tested and bool(kept)
        phase = m["phase"].lower()
        fields = to_fields(find_pairs(segment[m.end() :]), phase in _EVALUATIONS)
        read = {k: v for k, v in fields.values.items() if k in _READ}
        if "eval_loss" in read:
            tested = phase == "test" or fields.tested
        doc.update(read)
    return doc, tested


_TABLE_STEP = "total_timesteps"
_TRAIN_STATE_HINT = "TrainState object at 0x"
_TRAIN_STATE = re.compile(
    # (The tensor's repr is its number by then: exporter.logs.parse reads scalars' reprs first.)
    rf"^\((?:tensor\()?(?P<value>{PRINTF_NUMBER})(?:(?:, device='[\w:]{{1,16}}')?\))?, "
    rf"<[\w.]{{1,64}}\.{_TRAIN_STATE_HINT}[0-9a-fA-F]{{1,16}}>\)$"
)


def parse_lone(msg: str, now: float) -> LineReport | None:
    if len(msg) > MAX_LINE:
        return None
    text = msg.rstrip()
    if (state := _TRAIN_STATE.match(text)) is not None:
        return native({"eval_loss": float(state["value"])}, now, "lone")
    if _TRAINER_METRICS_ROW.match(text):
        return None  # the whole run's summary, not a step's values
    row = _ROW.match(text)
    if row is not None:
        value = number(row["value"])
        if value is None:
            return None
        if row["key"] == _TABLE_STEP:
            return native({"step": int(value)}, now, "lone") if value == int(value) else None
        pair = Pair(row["key"], value)
    else:
        stamp = _STAMP.match(text)
        body = text[stamp.end() :] if stamp is not None else text.lstrip()
        if (bullet := _BULLET.match(body)) is not None:
            body = body[bullet.end() :]
        if _PHASE.match(body):
            phases, tested = _phases(body)
            found = native(phases, now, "lone") if phases else None
            return found._replace(test_set=tested) if found is not None else None
        m = PAIR.fullmatch(body)
        if m is None or (value := number(m["value"])) is None:
            return None
        pair = Pair(m["key"], value)
    fields = to_fields([pair])
    doc: dict[str, object] = {k: v for k, v in fields.values.items() if k in _READ}
    found = native(doc, now, "lone") if doc else None
    return found._replace(test_set=fields.tested) if found is not None else None


FORMAT = Format("lone", ("oss", "OSS", _TABLE_STEP, _TRAIN_STATE_HINT), parse_lone)
