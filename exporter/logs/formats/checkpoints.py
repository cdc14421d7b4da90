"""``checkpoints``: the lines frameworks print when they save, as real runs print them.

* Transformers ``Trainer`` (logged at INFO): ``Saving model checkpoint to out/checkpoint-500``
  (captured from transformers 5.24 with ``log_level="info"``);
* Lightning ``ModelCheckpoint(verbose=True)``: ``Epoch 0, global step 8: 'train_loss' reached
  0.21965 (best 0.21965), saving model to '/ck/epoch=0-step=8.ckpt' as top 2`` (captured
  from lightning 2.6); where the monitored value is an evaluation's loss (``'val_loss'
  reached 6.90000``) it is the eval loss too;
* Accelerate ``save_state`` (INFO): ``[RANK 0] Saving current state to out/checkpoint_3``
  (accelerate 1.15; the directory counts saves, not steps: no step);
* Keras ``ModelCheckpoint(verbose=1)`` at an epoch's end: ``Epoch 4: val_loss improved from
  3.69903 to 3.69807, saving model to m.keras``, ``Epoch 4: saving model to m.keras`` and
  Keras 3's ``Epoch 4: finished saving model to m.keras`` (captured from keras 3.15; Keras 2
  pads the epoch, ``Epoch 00004:``): the epochs done; a monitored evaluation's loss is the
  eval loss too;
* DeepSpeed: ``[Torch] Checkpoint global_step10 is ready now!``, printed once every file of
  the checkpoint is written (``torch_checkpoint_engine.py`` ``commit``; copied from a real
  run's log of DeepSpeed 0.10 published with its training script, which this machine cannot
  run); ``[Torch] Checkpoint global_step10 is about to be saved!`` (``create``, as the save
  starts) is no save, but the default tag gives the run's step.

* nanoGPT ``train.py``: ``saving checkpoint to out`` (no step: the run's, at the line);
* Megatron-LM ``checkpointing.py``: ``successfully saved checkpoint from iteration     500 to
  /ckpt`` (older releases: ``... at iteration``);
* fairseq ``checkpoint_utils.py``: ``saved checkpoint checkpoints/checkpoint1.pt (epoch 1 @
  1891 updates, score 8.1) (writing took 3.2 seconds)``;
* NVIDIA's Tacotron 2 (``save_checkpoint``, also WaveGlow's and Mellotron's): ``Saving model
  and optimizer state at iteration 64000 to /out/checkpoint_64000``;
* mmengine ``CheckpointHook``: ``Saving checkpoint at 5000 iterations``, or ``at 3 epochs``
  (after the third epoch, ``runner.epoch + 1``): the epochs done, whose step the accumulator
  gives where the log printed the epoch's size.

* torchtitan ``components/checkpoint.py`` (@0128b99b): ``Finished saving the checkpoint (or
  staging if async is enabled)in 4.21 seconds.`` (no step: the run's, at the line; the
  seconds it took are the save time);
* Megatron-LM's start of a save, ``saving checkpoint at iteration     500 to /ckpt in
  torch_dist format`` (``checkpointing.py``; older versions and Megatron-DeepSpeed prefix
  ``global rank 0 is``);
* detectron2 (fvcore's ``PeriodicCheckpointer``): ``fvcore.common.checkpoint INFO: Saving
  checkpoint to ./output/model_final.pth``, saved only at the last iteration (``iteration >=
  max_iter - 1``): the run's end as well;
* LeRobot's ``lerobot_train.py``: ``Checkpoint policy after step 50000``, logged right before
  it saves, after the step's update (``step`` counts the updates done): the run's step too;
* and the lines people print themselves, read by one general rule: "saving" or "saved" (or
  "wrote", "writing"), then "checkpoint", optionally "a", "the", "model" or "new" between:
  ``Saved checkpoint at step 50 to ckpt/ckpt-50.pt``, ``Saving checkpoint to ckpt/``,
  ``[INFO] saved the checkpoint for iteration 1200``. The step is the one the line names
  (``step 50``, ``iteration 1200``, ``global_step50``, ``iter_0001200``, ``ckpt-50``); a
  line that says a save will come, was skipped or failed (``will``, ``every``, ``not``,
  ``skipping``, ``failed``, ``error``...) is no save.

Each gives the checkpoint's step where the line names one, and its time is the line's.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native
from .pairs import Pair, number, to_fields

_HF = re.compile(r"Saving model checkpoint to \S*?checkpoint-(\d{1,15})\b")
_LIGHTNING = re.compile(r"global step (\d{1,15}): .*saving model to '")
_MONITORED = re.compile(
    r"global step \d{1,15}: '(?P<name>[\w/.-]{1,64})' reached (?P<value>\S{1,40}) \("
)
_ACCELERATE = re.compile(r"Saving current state to \S")
_KERAS = re.compile(
    r"^\s*Epoch (?P<e>\d{1,9}): (?:(?P<name>[\w/.-]{1,64}) improved from \S{1,40} to "
    r"(?P<value>\S{1,40}), )?(?:finished )?saving model to \S"
)
_DEEPSPEED = re.compile(r"\[Torch\] Checkpoint (\S{1,256}) is ready now!")
# DeepSpeed's checkpoint engines' create(tag), logged as a save starts (torch_checkpoint_engine
# "[Torch]", the async and DataStates engines): the default tag names the run's step then.
_DS_STARTS = re.compile(
    r"\[(?:Torch|AsyncTorch|DataStates)\] Checkpoint global_step(\d{1,15}) is about to be saved!"
)
_DS_STEP = re.compile(r"global_step(\d{1,15})$")
_NANOGPT = re.compile(r"^saving checkpoint to \S")
_MEGATRON = re.compile(r"successfully saved checkpoint (?:from|at) iteration\s+(\d{1,15})\b")
_FAIRSEQ = re.compile(r"saved checkpoint \S+ \(epoch \d+ @ (\d{1,15}) updates")
_MMENGINE = re.compile(r"Saving checkpoint at (\d{1,15}) (iterations|epochs)\b")
_TACOTRON = re.compile(r"^Saving model and optimizer state at iteration (\d{1,15}) to \S")
_LEROBOT = re.compile(r"\bCheckpoint policy after step (\d{1,15})\s*$")
# "checkpoint" in either case of its first letter only, as the hint "heckpoint" lets through.
_SAVE = re.compile(
    r"(?i:\b(?:sav(?:ing|ed)|wr(?:ote|iting))\s+(?:(?:a|the|model|new)\s+)?)[Cc]heckpoint\b"
    r"|\b[Cc]heckpoint\s+(?i:saved|written)\b"
)
# What makes a line about a save no save: a plan, a schedule, a refusal, a failure.
_NO_SAVE = re.compile(
    r"(?i)\b(?:not|no|skip\w*|fail\w*|error|unable|cannot|could\s*n[o']t|won't|will|would|"
    r"every|interval|disabled?)\b"
)
_STEP = re.compile(
    r"(?i)(?:(?<![A-Za-z])(?:global[ _]?step|step|iteration|iter)(?:\s*[=:#]?\s*|_)"
    r"|\b(?:checkpoint|ckpt)[-_])(\d{1,15})\b"
)
# detectron2's PeriodicCheckpointer (fvcore's) saves "{file_prefix}_final" only once the
# iteration reaches max_iter - 1 (fvcore/common/checkpoint.py: "if iteration >= self.max_iter
# - 1"), logged by fvcore's Checkpointer: the training loop's last iteration, its end.
_DETECTRON2_FINAL = re.compile(
    r"\bfvcore\.common\.checkpoint INFO: Saving checkpoint to \S*\bmodel_final\.pth\s*$"
)
_SAVE_SECONDS = re.compile(
    r"(?i)(?:finished|saved|done|completed?)\b.*\bin\s+(\d{1,7}(?:\.\d+)?)\s*(?:s|secs?|seconds)\b"
)


def parse_checkpoint(msg: str, now: float) -> LineReport | None:
    step: int | None = None
    epochs: int | None = None
    run_step = False  # the line's step is the run's too (LeRobot's "after step N")
    keras: re.Match[str] | None = None
    if (m := _HF.search(msg)) is not None or (m := _LIGHTNING.search(msg)) is not None:
        step = int(m.group(1))
    elif (m := _DS_STARTS.search(msg)) is not None:
        return native({"step": int(m.group(1))}, now, "checkpoints")  # no save yet
    elif (m := _DEEPSPEED.search(msg)) is not None:
        tag = _DS_STEP.search(m.group(1))
        step = int(tag.group(1)) if tag else None
    elif (
        (m := _MEGATRON.search(msg)) is not None
        or (m := _FAIRSEQ.search(msg)) is not None
        or (m := _TACOTRON.search(msg)) is not None
    ):
        step = int(m.group(1))
    elif (m := _LEROBOT.search(msg)) is not None:
        step, run_step = int(m.group(1)), True
    elif (m := _MMENGINE.search(msg)) is not None:
        if m.group(2) == "iterations":
            step = int(m.group(1))
        else:
            epochs = int(m.group(1))
    elif (keras := _KERAS.match(msg)) is not None:
        epochs = int(keras["e"])
    elif _ACCELERATE.search(msg) is None and _NANOGPT.search(msg) is None:
        return _general(msg, now)
    doc: dict[str, object] = {"last_checkpoint_timestamp": now}
    if step is not None:
        doc["last_checkpoint_step"] = step
    if run_step:
        doc["step"] = step
    if epochs is not None:
        doc["epoch"] = float(epochs)
    monitored = _MONITORED.search(msg) or (keras if keras and keras["name"] else None)
    if monitored is not None:
        value = number(monitored["value"].rstrip(","))
        fields = to_fields([Pair(monitored["name"], value)]) if value is not None else None
        if fields is not None and "eval_loss" in fields.values:
            doc["eval_loss"] = fields.values["eval_loss"]
    return native(doc, now, "checkpoints")


def _general(msg: str, now: float) -> LineReport | None:
    """A save line no tool's own shape matched, by the general rule (module docstring)."""
    found = _SAVE.search(msg)
    if found is None or _NO_SAVE.search(msg) is not None:
        return None
    doc: dict[str, object] = {"last_checkpoint_timestamp": now}
    if (m := _STEP.search(msg, found.end())) is not None or (m := _STEP.search(msg)) is not None:
        doc["last_checkpoint_step"] = int(m.group(1))
    if (m := _SAVE_SECONDS.search(msg)) is not None:
        doc["last_checkpoint_seconds"] = float(m.group(1))
    if _DETECTRON2_FINAL.search(msg) is not None:
        doc["final"] = True
    return native(doc, now, "checkpoints")


FORMAT = Format(
    "checkpoints",
    (
        "Saving model checkpoint to",
        "saving model to ",
        "Saving current state to",
        "is ready now!",
        "saving checkpoint to ",
        "saved checkpoint ",
        "Saving checkpoint at ",
        "Saving model and optimizer state at iteration ",
        # The general rule's: "checkpoint" and "Checkpoint" both hold it.
        "heckpoint",
    ),
    parse_checkpoint,
)
