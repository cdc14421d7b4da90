"""``checkpoints``: the lines frameworks print when they save, as real runs print them.

* Transformers ``Trainer`` (logged at INFO): ``Saving model checkpoint to out/checkpoint-500``
  (captured from transformers 5.24 with ``log_level="info"``);
* Lightning ``ModelCheckpoint(verbose=True)``: ``Epoch 0, global step 8: 'train_loss' reached
  0.21965 (best 0.21965), saving model to '/ck/epoch=0-step=8.ckpt' as top 2`` (captured
  from lightning 2.6);
* Accelerate ``save_state`` (INFO): ``[RANK 0] Saving current state to out/checkpoint_3``
  (accelerate 1.15; the directory counts saves, not steps: no step);
* DeepSpeed: ``[Torch] Checkpoint global_step10 is ready now!``, printed once every file of
  the checkpoint is written (``torch_checkpoint_engine.py`` ``commit``; copied from a real
  run's log of DeepSpeed 0.10 published with its training script, which this machine cannot
  run).

* nanoGPT ``train.py``: ``saving checkpoint to out`` (no step: the run's, at the line);
* Megatron-LM ``checkpointing.py``: ``successfully saved checkpoint from iteration     500 to
  /ckpt`` (older releases: ``... at iteration``);
* fairseq ``checkpoint_utils.py``: ``saved checkpoint checkpoints/checkpoint1.pt (epoch 1 @
  1891 updates, score 8.1) (writing took 3.2 seconds)``;
* mmengine ``CheckpointHook``: ``Saving checkpoint at 5000 iterations``, or ``at 3 epochs``
  (after the third epoch, ``runner.epoch + 1``): the epochs done, whose step the accumulator
  gives where the log printed the epoch's size.

Each gives the checkpoint's step where the line names one, and its time is the line's.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native

_HF = re.compile(r"Saving model checkpoint to \S*?checkpoint-(\d{1,15})\b")
_LIGHTNING = re.compile(r"global step (\d{1,15}): .*saving model to '")
_ACCELERATE = re.compile(r"Saving current state to \S")
_DEEPSPEED = re.compile(r"\[Torch\] Checkpoint (\S{1,256}) is ready now!")
_DS_STEP = re.compile(r"global_step(\d{1,15})$")
_NANOGPT = re.compile(r"^saving checkpoint to \S")
_MEGATRON = re.compile(r"successfully saved checkpoint (?:from|at) iteration\s+(\d{1,15})\b")
_FAIRSEQ = re.compile(r"saved checkpoint \S+ \(epoch \d+ @ (\d{1,15}) updates")
_MMENGINE = re.compile(r"Saving checkpoint at (\d{1,15}) (iterations|epochs)\b")


def parse_checkpoint(msg: str, now: float) -> LineReport | None:
    step: int | None = None
    epochs: int | None = None
    if (m := _HF.search(msg)) is not None or (m := _LIGHTNING.search(msg)) is not None:
        step = int(m.group(1))
    elif (m := _DEEPSPEED.search(msg)) is not None:
        tag = _DS_STEP.search(m.group(1))
        step = int(tag.group(1)) if tag else None
    elif (m := _MEGATRON.search(msg)) is not None or (m := _FAIRSEQ.search(msg)) is not None:
        step = int(m.group(1))
    elif (m := _MMENGINE.search(msg)) is not None:
        if m.group(2) == "iterations":
            step = int(m.group(1))
        else:
            epochs = int(m.group(1))
    elif _ACCELERATE.search(msg) is None and _NANOGPT.search(msg) is None:
        return None
    doc: dict[str, object] = {"last_checkpoint_timestamp": now}
    if step is not None:
        doc["last_checkpoint_step"] = step
    if epochs is not None:
        doc["epoch"] = float(epochs)
    return native(doc, now, "checkpoints")


FORMAT = Format(
    "checkpoints",
    (
        "Saving model checkpoint to",
        "saving model to '",
        "Saving current state to",
        "is ready now!",
        "saving checkpoint to ",
        "saved checkpoint ",
        "Saving checkpoint at ",
    ),
    parse_checkpoint,
)
