"""``ends``: a trainer's own sentence that training is over.

    [INFO] Reached max_steps (1635), stopping training.        LLaMA-Factory v1's trainer
    Reached max_steps (5000). Stopping training.               scripts of the same wording
    Training complete. [11/07 14:03:13]                        3D Gaussian Splatting
    150 epochs completed in 16.469 hours.                      YOLOv5, YOLOv7, Ultralytics
    [...][I][ezpz/launch:448:launch] Execution finished with 0.   ezpz launch
    [after training is done] datetime: 2025-10-06 03:27:07         Megatron-LM, Megatron-Bridge
    | End of training | test loss  4.74 | test ppl   114.95         pytorch/examples' word LM
    *** Best metric: 80.126 (epoch 287)                             timm's train.py
    Training completed. Do not forget to share your model on huggingface.co/models =)
                                                                    Transformers' Trainer
    ... | INFO | fairseq_cli.train | done training in 1234.5 seconds fairseq-train
    [titan] ... - root - INFO - Training completed                  torchtitan
    ('Final validation metrics: {...}')                             verl's PPO trainer
    INFO 2026-06-12 18:27:59 ot_train.py:438 End of training        LeRobot
    Training COMPLETE                                               GaitSet's train.py
    ... INFO: Total training time: 4:49:16.701480 (0.8678s / it)    awesome-semantic-
                                                                    segmentation-pytorch
    Finished Training                                               PyTorch's CIFAR-10 tutorial
    Statistics on  val_best_checkpoint                              EquiBind's trainer and kin
    save checkpoint at /home/aistudio/save_fine/final               PaddlePaddle's Model.fit
    Epoch 2: early stopping                                         Keras' EarlyStopping
    Epoch 6: Early stopping.                                        PaddlePaddle's EarlyStopping
    stopping_early: wallclock_cap train_time:599635ms step:6130/20000
                                                                    OpenAI's Parameter Golf
    Total training time: 170.39m                                    nanochat's trainers
    Minimum validation bpb: 0.8118
    training_seconds: 308.4                                         Karpathy's autoresearch
    total average iteration time: 2509.813786 ms                    llm.c's train_gpt2cu
    ... sagemaker-training-toolkit INFO     Reporting training SUCCESS  SageMaker's toolkit
    Final test accuracy = 92.0% (N=362)                             TensorFlow's retrain.py
    Process finished with exit code 0                               PyCharm's run console

The sentence names the steps it reached: the step and the total, and the end of the run (a
tool's own end marker, so it may finish the run). "Stopping training" must follow and end
the sentence: agents and RL episodes print "reached max_steps (N)" for an attempt or an
episode that gave up.

3D Gaussian Splatting's train.py ends with ``print("\nTraining complete.")`` under its
``safe_state``, which stamps every line it prints with `` [%d/%m %H:%M:%S]``
(utils/general_utils.py): the sentence alone on its line with that stamp is its end (the
words without it are any script's, which may train on in a next stage).

Argonne's ezpz launcher (``ezpz launch``, src/ezpz/launch.py) logs ``Execution finished with
{retcode}.`` under its own logger (``ezpz/launch``) once the command it ran has returned: the
end with 0; any other code is no end (the traceback, if any, says why). The words under
another logger are not its.

Megatron-LM's ``pretrain`` (training.py) and Megatron-Bridge's (training/pretrain.py) log
``[after training is done] datetime: ...`` once ``train()`` has returned; ``train()`` ends
the process itself when a signal, a duration or an exit interval stops it (``exiting program
at iteration N``), so the line means the planned iterations are done. NVIDIA's own
scripts/performance/setup_experiment.py takes it as the run's end. The evaluation of the
validation and test sets may follow it.

pytorch/examples' word_language_model (main.py) and the PyTorch Transformer tutorial print
``| End of training | test loss {:5.2f} | test ppl {:8.2f}`` once, after the epochs and the
test set's evaluation: the run's end, its loss the test set's (a metric of its own, not the
eval loss: the validation set's is printed after each epoch).

timm's train.py logs ``*** Best metric: {0} (epoch {1})`` once its epoch loop is over (or a
KeyboardInterrupt stopped it, which a pod's SIGTERM does not raise), just before it returns.

Each of these is logged once its loop is over, never on the way out of an exception:
Transformers' ``Trainer`` (``_inner_training_loop``: "Training completed. Do not forget to
share your model on huggingface.co/models =)"), fairseq-train (fairseq_cli/train.py: "done
training in {:.1f} seconds"), torchtitan (train.py: "Training completed", under its own
``[titan]`` logger prefix: the words alone are any script's), and verl's RayPPOTrainer at
its last step (``pprint(f"Final validation metrics: {last_val_metrics}")``, pprint's quotes
and parenthesis around it; its FSDP SFT trainer prints the same words plain, then
returns), and the trainer of EquiBind and its kin (3DInfomax, EquiReact:
``train()`` ends its epoch loop, early stopped or not, by evaluating the best checkpoint and
printing ``'Statistics on ', 'val_best_checkpoint'``; a terminal pane's border after it is
kept by a copy from one), nanochat's base_train, mid_train and chat_sft (each prints its
peak memory, ``Total training time: {minutes:.2f}m`` and ``Minimum validation bpb: ...``
after its loop, which has no ``try``), and Karpathy's autoresearch (train.py's summary after
its loop, ``---`` then ``val_bpb:``, ``training_seconds:`` aligned in one column; a loss
that explodes raises before it), and llm.c's train_gpt2.cu (``printf0("total average iteration
time: %f ms\\n", ...)`` once its step loop has broken out at its last step).
detectron2's "Total training time" is not one: its hooks log it
in a ``finally:``, after an exception too (its final checkpoint is: :mod:`.checkpoints`).
"""

from __future__ import annotations

import re

from ...core.model import ProgressReport
from ..lines import Format, LineReport
from .pairs import PRINTF_NUMBER
from .vocabulary import TEST_LOSS

_MAX_STEPS_REACHED = re.compile(
    r"\bReached max_steps \((?P<n>\d{1,15})\)[.,]?\s+[Ss]topping training(?: early)?"
    r"\s*(?:\.|!|$)"
)

# OpenAI's Parameter Golf train_gpt.py (a modded-nanoGPT script) at its wall-clock cap:
# "stopping_early: wallclock_cap train_time:599635ms step:6130/20000", then it breaks out of
# its loop (the steps done, of the steps it was given).
_WALLCLOCK_STOP = re.compile(
    r"^\s*stopping_early: wallclock_cap train_time:\d{1,12}ms "
    r"step:(?P<i>\d{1,15})/(?P<n>\d{1,15})\s*$"
)

_GAUSSIAN_SPLATTING_END = re.compile(r"^\s*Training complete\. \[\d\d/\d\d \d\d:\d\d:\d\d\]\s*$")

_YOLO_END = re.compile(r"^\s*(?P<n>[1-9]\d{0,6}) epochs completed in \d{1,9}\.\d{3} hours\.\s*$")

_EZPZ_LAUNCH_END = re.compile(
    r"\[ezpz/launch(?::\d{1,6}:\w{1,64})?\]\s*Execution finished with 0\.\s*$"
)

_MEGATRON_END = re.compile(
    r"^\s*\[after training is done\] datetime: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s*$"
)
_WORD_LM_END = re.compile(
    rf"^\s*\|\s*End of training \| test loss\s+(?P<loss>{PRINTF_NUMBER}) \| test ppl"
)
_TIMM_END = re.compile(rf"(?:^|\s)\*\*\* Best metric: {PRINTF_NUMBER} \(epoch \d{{1,9}}\)\s*$")
_TRAINER_END = re.compile(
    r"(?:^|\s)Training completed\. Do not forget to share your model on huggingface\.co/models =\)"
    r"\s*$"
)
_FAIRSEQ_END = re.compile(r"\| fairseq_cli\.train \| done training in \d{1,12}\.\d seconds\s*$")
_TORCHTITAN_END = re.compile(r"^\s*\[titan\] .{0,120} - INFO - Training completed\s*$")
# PyTorch's CIFAR-10 tutorial (beginner_source/blitz/cifar10_tutorial.py) and its copies:
# print('Finished Training') after the loop, which has no other way out.
_TUTORIAL_END = re.compile(r"^Finished Training\s*$")
# LeRobot (lerobot_train.py, and its older scripts/train.py): logging.info("End of training")
# after its loop, behind its logger's "INFO <time> <file>.py:<line> " prefix.
_LEROBOT_END = re.compile(r"(?:^|\.py:\d{1,6}\s)End of training\s*$")
# GaitSet's train.py: print("Training COMPLETE") once m.fit() returned (at total_iter).
_GAITSET_END = re.compile(r"^Training COMPLETE\s*$")
# awesome-semantic-segmentation-pytorch's train.py (and its forks: CIRKD, CWD) after its loop:
# "Total training time: 4:49:16.701480 (0.8678s / it)"; detectron2's "Total training time:
# 0:41:22 (0:00:03 on hooks)", logged in a finally, is none.
_SEGMENTATION_END = re.compile(
    r"(?:^|\sINFO: )Total training time: \d{1,5}:\d\d:\d\d(?:\.\d{1,6})? "
    r"\(\d{1,6}\.\d{4}s / it\)\s*$"
)
# PaddlePaddle's high-level API: hapi's ModelCheckpoint saves "final" in on_train_end, the
# last thing Model.fit does ("save checkpoint at /home/aistudio/save/final"; each epoch's save
# names the epoch, "save checkpoint at .../5").
_HAPI_END = re.compile(r"^\s*save checkpoint at (?:\S*/)?final\s*$")
_NANOCHAT_END = re.compile(
    r"^(?:Total training time: \d{1,7}\.\d\dm|Minimum validation bpb: \d{1,3}\.\d{4,6})\s*$"
)
_AUTORESEARCH_END = re.compile(r"^training_seconds: {1,8}\d{1,9}\.\d\s*$")
_LLMC_END = re.compile(r"^total average iteration time: \d{1,12}\.\d{6} ms\s*$")
# verl's trainers at their last step: RayPPOTrainer pprints it (quoted, in parentheses where
# it wraps), the FSDP SFT trainer prints it plain, then returns.
_VERL_END = re.compile(r"^\s*(?:\(?['\"])?Final validation metrics: (?:\{|None)")
_BEST_CHECKPOINT_END = re.compile(r"^\s*Statistics on\s+val_best_checkpoint(?:\s+│)?\s*$")
# Keras' EarlyStopping in on_train_end, once fit() has left its epoch loop: Keras 3 and late
# Keras 2 print "Epoch 2: early stopping", early Keras 2 "Epoch 00012: early stopping";
# PaddlePaddle hapi's EarlyStopping prints "Epoch 6: Early stopping." as it stops the fit.
_EARLY_STOPPING_END = re.compile(r"^\s*Epoch \d{1,9}: (?:early stopping|Early stopping\.)\s*$")
# SageMaker's training toolkit (sagemaker_training/trainer.py) once the user's entry point
# returned with 0 (a non-zero code raises and reports "training FAILURE"), under its logger:
# "2022-09-21 13:21:05,188 sagemaker-training-toolkit INFO     Reporting training SUCCESS".
_SAGEMAKER_END = re.compile(r"(?:^|\sINFO\s+)Reporting training SUCCESS\s*$")
# TensorFlow's retrain.py (image_retraining, then TF Hub's) and speech_commands' train.py
# test the trained model once their step loop is over, then write the graph and return:
# "Final test accuracy = 92.0%", since 2017 with "(N=362)", under tf.logging's prefix too.
_RETRAIN_END = re.compile(
    r"(?:^|INFO:tensorflow:|\] )Final test accuracy = \d{1,3}\.\d%(?: \(N=\d{1,9}\))?\s*$"
)
# PyCharm's run console once the process it started has exited ("\nProcess finished with exit
# code 0"): the run is over with 0; any other code is no end.
_PYCHARM_END = re.compile(r"^Process finished with exit code 0\s*$")
# The lines that end a run and say nothing else.
_BARE_ENDS = (
    _GAUSSIAN_SPLATTING_END,
    _EZPZ_LAUNCH_END,
    _MEGATRON_END,
    _TIMM_END,
    _TRAINER_END,
    _FAIRSEQ_END,
    _TORCHTITAN_END,
    _VERL_END,
    _TUTORIAL_END,
    _BEST_CHECKPOINT_END,
    _EARLY_STOPPING_END,
    _LEROBOT_END,
    _GAITSET_END,
    _SEGMENTATION_END,
    _HAPI_END,
    _NANOCHAT_END,
    _AUTORESEARCH_END,
    _LLMC_END,
    _SAGEMAKER_END,
    _RETRAIN_END,
    _PYCHARM_END,
)


def parse_ends(msg: str, now: float) -> LineReport | None:
    if (yolo := _YOLO_END.match(msg)) is not None:
        # The number of epochs done: YOLOv5's and YOLOv7's rows print "299/299" at the 300th
        # (0-based), Ultralytics' "300/300"; read without the header, the line tells which.
        epochs = float(yolo["n"])
        return LineReport("ends", ProgressReport(final=True, max_epochs=epochs))
    if any(end.search(msg) for end in _BARE_ENDS):
        return LineReport("ends", ProgressReport(final=True))
    if (end := _WORD_LM_END.match(msg)) is not None:
        tested = float(end["loss"])
        return LineReport("ends", ProgressReport(final=True, metrics=((TEST_LOSS, tested),)))
    if (stop := _WALLCLOCK_STOP.match(msg)) is not None:
        step, total = int(stop["i"]), int(stop["n"])
        return LineReport("ends", ProgressReport(step=step, max_steps=total or None, final=True))
    m = _MAX_STEPS_REACHED.search(msg)
    if m is None or (n := int(m["n"])) <= 0:
        return None
    return LineReport("ends", ProgressReport(step=n, max_steps=n, final=True))


FORMAT = Format(
    "ends",
    (
        "Reached max_steps (",
        "Training complete. [",
        " epochs completed in ",
        "Execution finished with 0",
        "[after training is done]",
        "End of training",
        "Training COMPLETE",
        "Total training time: ",
        "*** Best metric: ",
        "Training completed",
        "done training in ",
        "Final validation metrics: ",
        "Finished Training",
        "val_best_checkpoint",
        "save checkpoint at ",
        "stopping_early: wallclock_cap",
        "Reporting training SUCCESS",
        ": early stopping",
        ": Early stopping.",
        "Minimum validation bpb: ",
        "training_seconds: ",
        "total average iteration time: ",
        "Final test accuracy = ",
        "Process finished with exit code 0",
    ),
    parse_ends,
)
