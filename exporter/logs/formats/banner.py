"""``banner``: the lines a trainer prints once before its first step, with the run's length.

* Transformers' ``Trainer`` and Accelerate scripts: ``  Total optimization steps = 9`` and
  ``  Num Epochs = 3`` under ``***** Running training *****`` (trainer.py
  ``_inner_training_loop``), a total for any Trainer log before its first bar frame;
* Unsloth's banner: ``Total batch size = 40 | Total steps = 220`` and
  ``Num examples = 1,760 | Num Epochs = 1``;
* kohya-ss' trainers (sd-scripts, musubi-tuner), in English and Japanese: ``total
  optimization steps / 学習ステップ数: 96`` (``train_network.py``);
* mmcv's runners (mmdetection 2, mmclassification): ``workflow: [('train', 1)], max: 12
  epochs`` (``EpochBasedRunner.run``) or ``max: 90000 iters`` (``IterBasedRunner.run``);
* mmengine's config as its Runner dumps it before training (OpenMMLab 2.0: MMDetection 3,
  MMPretrain, MMPose 1...): the training loop's ``train_cfg = dict(by_epoch=True,
  max_epochs=10, val_interval=1)`` on one line, or pretty-printed a setting a line
  (``    max_epochs=200,``); ``max_iters`` for an iteration-based loop. A top-level
  ``max_epochs = 200`` is a variable of the config file, which a child config's loop may not
  use: not read;
* the kohya_ss GUI (bmaltais), before it starts sd-scripts: ``max_train_steps (4800 / 4 / 1 *
  10 * 1) = 12000``, the total it passes on (its ``Total steps: 4800`` is an epoch's images);
* Google BERT's run_classifier and run_squad (and their forks, pytorch-pretrained-BERT's
  PyTorch ports among them), under ``***** Running training *****``: ``  Num steps = 8242``
  (``num_train_steps``), the line the setting alone;
* mlx-lm's trainer (LoRA and full fine-tuning on Apple silicon): ``Starting training...,
  iters: 3000`` (mlx_lm/tuner/trainer.py: ``args.iters``, the run's iterations);
* the run's arguments as a script echoes them: argparse's ``Namespace(..., epochs=12, ...)``
  (``print(args)``, pytorch/examples and most research code) and the command that started it
  (``python main.py --cuda --epochs 12``, ``torchrun ... train.py --max_steps 5000``). Only
  the names that plainly say the run's length are read (``epochs``, ``num_epochs``,
  ``num_train_epochs``, ``max_epochs``; ``max_steps``, ``max_iters``, ``train_iters``,
  ``total_steps``, ``max_train_steps``), and only a whole number (``max_steps=-1`` or ``None``,
  Trainer's "no limit", is none);
* a config dumped a setting a line, the name and the number alone at the line's end:
  InsightFace's arcface_torch (``: total_step               3318320``, the name padded to a
  column) and a YAML echo (``max_steps: 5000``).

Only the run's planned length is read here: a banner says nothing of progress.
"""

from __future__ import annotations

import re

from ...core.model import ProgressReport
from ..lines import EMPTY, Format, LineReport

_STEPS = re.compile(r"\bTotal (?:optimization )?steps = (?P<n>\d{1,3}(?:,\d{3})*|\d{1,15})\b")
_KOHYA = re.compile(r"\btotal optimization steps / [^:=]{1,40}: (?P<n>\d{1,15})\b")
_EPOCHS = re.compile(r"\bNum Epochs = (?P<n>\d{1,3}(?:,\d{3})*|\d{1,9})\b")
# Google BERT's run_classifier / run_squad and their forks, under "***** Running training *****":
# "  Num steps = 8242" (num_train_steps, the Estimator's max_steps), the setting alone, after
# TensorFlow's logger ("INFO:tensorflow:") or the Python logger of the PyTorch ports
# (pytorch-pretrained-BERT's "... - INFO - __main__ -     Num steps = 12216",
# num_train_optimization_steps).
_BERT_STEPS = re.compile(r"(?:^|:| -)\s+Num steps = (?P<n>\d{1,15})\s*$")
_KOHYA_GUI = re.compile(r"\bmax_train_steps \([\d /*.]{1,80}\) = (?P<n>\d{1,15})\b")
_MLX = re.compile(r"\bStarting training\.\.\., iters: (?P<n>\d{1,15})\b")
# Salesforce LAVIS' iteration-based runner (runner_base.py train(), and UniMERNet, BLIP-2 and
# InstructBLIP built on it): "Start training, max_iters=200, in total 8 inner epochs."
_LAVIS = re.compile(r"\bStart training, max_iters=(?P<n>\d{1,15}), in total \d{1,9} inner epochs\.")
# verl's RayPPOTrainer (_create_dataloader): print(f"Total training steps:
# {self.total_training_steps}"), the line the sentence alone; other scripts print the same.
_VERL_TOTAL = re.compile(r"(?:^|\s)Total training steps: (?P<n>\d{1,3}(?:,\d{3})+|\d{1,15})\s*$")
# The MAE/DeiT/BEiT/ConvNeXt family's main_*.py: print(f"Start training for {args.epochs}
# epochs"), the run's epochs, the line the sentence alone.
_START_EPOCHS = re.compile(r"(?:^|\s)Start training for (?P<n>\d{1,9}) epochs\s*$")
# The same sentence in steps, the loop's range: a build-nanoGPT-style trainer's
# logger.info(f"Starting training for {self.max_steps} steps") before "for step in
# range(self.max_steps)" (vijay0019/GPT-From-Scratch's training/trainer.py).
_START_STEPS = re.compile(
    r"(?:^|\s)Start(?:ing)? training for (?P<n>\d{1,3}(?:,\d{3})+|\d{1,15}) "
    r"(?:steps|iterations)\s*$"
)
# lightning-hydra-template's src/train.py: log.info("Starting training!") before
# trainer.fit. No length: a start, which after a traceback is a new attempt's.
_TEMPLATE_START = re.compile(r"(?:^|\s)Starting training!\s*$")
# BasicSR's "Training statistics:" (basicsr/train.py, and the trainers built on it: pyiqa,
# Real-ESRGAN, GFPGAN), its last line "\tTotal epochs: 100; iters: 11100.": the run's length.
_BASICSR = re.compile(r"\bTotal epochs: (?P<e>\d{1,9}); iters: (?P<n>\d{1,15})\.")
# TransUNet's trainer and those copied from it (Swin-Unet): "10 iterations per epoch. 1500
# max iterations", max_epochs x len(trainloader), the length it runs to (its argument
# max_iterations, printed in the Namespace above it, is overridden).
_TRANSUNET = re.compile(r"\b\d{1,12} iterations per epoch\. (?P<n>\d{1,15}) max iterations\b")
# The run's length among its arguments: "epochs=12" in a Namespace, "--epochs 12" on a command.
_ARG_EPOCHS = ("epochs", "num_epochs", "n_epochs", "num_train_epochs", "max_epochs", "num_epoch")
_ARG_STEPS = (
    "max_steps",
    "max_iters",
    "train_iters",
    "total_steps",
    "max_train_steps",
    "total_step",
)
_ARG_NAMES = "|".join(_ARG_EPOCHS + _ARG_STEPS)
# Each name as a command line writes it, with "_" or "-": the quick scan's hints.
_ARG_HINTS = tuple(
    dict.fromkeys(
        f"--{spelled}" for n in _ARG_EPOCHS + _ARG_STEPS for spelled in (n, n.replace("_", "-"))
    )
)
_NAMESPACE_ARG = re.compile(rf"[(,]\s*(?P<k>{_ARG_NAMES})=(?P<n>\d{{1,15}})(?=[,)])")
_COMMAND = re.compile(
    r"^\s*(?:[$+]\s+)?(?:\S*/)?(?:python[\d.]*|torchrun|accelerate launch|deepspeed)\s"
    # DeepSpeed's launcher logs the command it runs (runner.py: "cmd = /usr/bin/python3 -u
    # -m deepspeed.launcher.launch ... train_ds.py --epochs=50 --steps_per_epoch=32").
    r"|\bcmd = (?:\S*/)?python[\d.]*\s"
)
# Both said, the run's steps are their product: LISA's "--epochs=50 --steps_per_epoch=32"
# (train_ds.py runs steps_per_epoch steps in each of its epochs), Keras' fit arguments.
_ARG_PER_EPOCH = re.compile(r"\s--steps[_-]per[_-]epoch[= ](?P<n>\d{1,15})(?=\s|$)")
_COMMAND_ARG = re.compile(
    rf"\s--(?P<k>{_ARG_NAMES.replace('_', '[_-]')})[= ](?P<n>\d{{1,15}})(?=\s|$)"
)
# A config dumped a setting a line: the name padded to a column before its number, at the
# line's end (InsightFace's arcface_torch: ": total_step               3318320"), or the line
# the setting alone: a YAML echo ("max_steps: 5000"), a script's banner in words padded to a
# column ("Max steps               : 100,000": the steps' names only). A pair among others is
# no setting.
# ("Total steps: 512" is no length: rsl_rl's count of environment steps so far.)
_SPOKEN = "|".join(n.replace("_", "[ _]") for n in _ARG_STEPS if not n.startswith("total"))
# Their words as the hints see them: "Max steps", "max iters", "Train iters".
_SPOKEN_HINTS = ("ax steps", "ax iters", "ain iters", "ax train steps")
_DUMPED = re.compile(
    rf"(?:(?:^|\s)(?P<k>{_ARG_NAMES})\s{{2,60}}|^\s*(?P<y>{_ARG_NAMES}|(?i:{_SPOKEN}))\s{{0,40}}:\s{{0,40}}"
    # A yacs config's dump (detectron2, reid-strong-baseline) in capitals, a top-level
    # section's own setting ("SOLVER:" then "  MAX_EPOCHS: 50"); deeper, a stage's of several
    # (CLIP-ReID's "  STAGE1:" then "    MAX_EPOCHS: 120", "  STAGE2:" ... 60): no one length.
    rf"|^  (?P<u>{_ARG_NAMES.upper()}):\s{{1,40}})"
    r"(?P<n>\d{1,3}(?:,\d{3})+|\d{1,15})\s*$"
)
# A dataclass's repr a field a line ("   max_steps=1000," in Oumi's TrainingParams): the
# steps only, since Trainer's max_steps wins over the epochs printed beside it.
_FIELD = re.compile(rf"^\s*(?P<k>{'|'.join(_ARG_STEPS)})=(?P<n>\d{{1,15}}),?\s*$")
_MMENGINE_LOOP = re.compile(
    r"^(?:train_cfg = dict\(.{0,300}?\b|    )(?P<k>max_epochs|max_iters)=(?P<n>\d{1,15})"
    r"(?:[,)]|\s*$)"
)
_MMCV = re.compile(r"\bworkflow: \[.{1,200}\], max: (?P<n>\d{1,15}) (?P<unit>epochs|iters)\b")
# A sentence that ends in the setting by its own argument's name ("Calculated max_steps: 6,250",
# a script's summary): its length, the name written as the code does (not a running total).
_NAMED = "|".join(n for n in _ARG_STEPS if not n.startswith("total"))
_SETTING = re.compile(
    rf"(?<![\w.])(?:{_NAMED})\s{{0,40}}[:=]\s{{0,40}}(?P<n>\d{{1,3}}(?:,\d{{3}})+|\d{{1,15}})\s*$"
)


def _arguments(msg: str) -> LineReport | None:
    """The run's length among the arguments it echoes (a Namespace, a command line), or
    None: the number of epochs, or of steps, or both."""
    if msg.lstrip().startswith("Namespace(") or " Namespace(" in msg:
        found = _NAMESPACE_ARG.finditer(msg)
    elif _COMMAND.search(msg):
        found = _COMMAND_ARG.finditer(msg)
    else:
        return None
    said = {m["k"].replace("-", "_"): int(m["n"]) for m in found if int(m["n"]) > 0}
    epochs = next((said[k] for k in _ARG_EPOCHS if k in said), None)
    steps = next((said[k] for k in _ARG_STEPS if k in said), None)
    per_epoch = _ARG_PER_EPOCH.search(msg)
    if steps is None and epochs is not None and per_epoch is not None:
        steps = epochs * int(per_epoch["n"]) or None
    if epochs is None and steps is None:
        return None
    report = ProgressReport(max_steps=steps, max_epochs=float(epochs) if epochs else None)
    return LineReport("banner", report)


def _dumped(msg: str) -> LineReport | None:
    """A setting of the run's length on its own line, as a config dump prints it, or None."""
    if (field := _FIELD.match(msg)) is not None:
        n = int(field["n"])
        return LineReport("banner", ProgressReport(max_steps=n)) if n > 0 else None
    m = _DUMPED.search(msg)
    if m is None:
        setting = _SETTING.search(msg)
        n = int(setting["n"].replace(",", "")) if setting is not None else 0
        return LineReport("banner", ProgressReport(max_steps=n)) if n > 0 else None
    if (n := int(m["n"].replace(",", ""))) <= 0:
        return None
    if (m["k"] or m["y"] or m["u"]).lower().replace(" ", "_") in _ARG_STEPS:
        return LineReport("banner", ProgressReport(max_steps=n))
    return LineReport("banner", ProgressReport(max_epochs=float(n)))


def parse_banner(msg: str, now: float) -> LineReport | None:
    if (said := _arguments(msg) or _dumped(msg)) is not None:
        return said
    if (basicsr := _BASICSR.search(msg)) is not None and int(basicsr["n"]) > 0:
        length = ProgressReport(max_steps=int(basicsr["n"]), max_epochs=float(basicsr["e"]) or None)
        return LineReport("banner", length)
    if (loop := _MMENGINE_LOOP.match(msg)) is not None and (n := int(loop["n"])) > 0:
        if loop["k"] == "max_iters":
            return LineReport("banner", ProgressReport(max_steps=n))
        return LineReport("banner", ProgressReport(max_epochs=float(n)))
    if (mmcv := _MMCV.search(msg)) is not None:
        n = int(mmcv["n"])
        if n <= 0:
            return None
        if mmcv["unit"] == "iters":
            return LineReport("banner", ProgressReport(max_steps=n))
        return LineReport("banner", ProgressReport(max_epochs=float(n)))
    steps = (
        _STEPS.search(msg)
        or _KOHYA.search(msg)
        or _KOHYA_GUI.search(msg)
        or _MLX.search(msg)
        or _BERT_STEPS.search(msg)
        or _TRANSUNET.search(msg)
        or _LAVIS.search(msg)
        or _VERL_TOTAL.search(msg)
        or _START_STEPS.search(msg)
    )
    epochs = _EPOCHS.search(msg) or _START_EPOCHS.search(msg)
    if steps is None and epochs is None:
        return LineReport("banner", EMPTY) if _TEMPLATE_START.search(msg) else None
    report = ProgressReport(
        max_steps=int(steps["n"].replace(",", "")) or None if steps else None,
        max_epochs=float(epochs["n"].replace(",", "")) or None if epochs else None,
    )
    if report.max_steps is None and report.max_epochs is None:
        return None
    return LineReport("banner", report)


FORMAT = Format(
    "banner",
    (
        "Total optimization steps = ",
        "total optimization steps / ",
        "Total steps = ",
        "Num Epochs = ",
        "Num steps = ",
        "workflow: ",
        "max_epochs=",
        "max_iters=",
        "Starting training..., iters: ",
        "Start training",
        "Starting training for ",
        "Starting training!",
        "Total training steps: ",
        "; iters: ",
        " max iterations",
        "max_train_steps (",
        "Namespace(",
        *_ARG_HINTS,
        *_ARG_EPOCHS,
        *_ARG_STEPS,
        *(n.upper() for n in _ARG_EPOCHS + _ARG_STEPS),  # a yacs config's dump
        *_SPOKEN_HINTS,
    ),
    parse_banner,
)
