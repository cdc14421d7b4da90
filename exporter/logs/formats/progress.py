"""``progress``: the general reader of progress lines, a counter plus ``key: value`` pairs.

Most training tools print one line per logging interval: a counter of the loop and the
values of the moment, in a shape of their own (docs/logs.md has the table, and
tests/fixtures/world/ a real line of each):

    iteration       73/     100 | consumed samples: ... | lm loss: 1.798953E+00 | ...   Megatron
    Training epoch 0, iteration 8/9 | lr: ... | global_step: 8 | reduced_train_loss: 7.113  NeMo 2
    step:1 - actor/pg_loss:0.001 - ...                                               verl
    | epoch 001:   3200 / 160368 loss=10.278, ..., num_updates=3200                  fairseq
    [11/01 11:27:04 d2.utils.events]: eta: 8:05:12  iter: 1259  total_loss: 1.012     detectron2
    Epoch(train) [1][10/90]  lr: 1.000e-02  eta: 0:00:25  ...  loss: 11.4723         mmengine
    Epoch: [0/100]  [2290/2502]  eta: 0:02:13  loss: 5.645083 (7.501284)  ...        MetricLogger
    step:  4  loss:  7.62585  grad_norm: 26.6250  memory: ...  tps: 10,050  mfu: 13.99%  torchtitan

One reader, not a regular expression per tool: :data:`COUNTERS` find the loop's counter
(and, where it counts within an epoch whose size it prints, the global step), then
:func:`~.pairs.find_pairs` reads every pair and :mod:`.vocabulary` says which is the loss,
the step, the learning rate... A step key among the pairs (``global_step``, ``num_updates``)
wins over the counter. Nothing here says a run finished: only a tool's own end marker does.

An evaluation line ("valid on 'valid' subset", "Validation: iteration 3/10", "Test: [0/391]")
never moves the step: its losses are eval losses, and one still counting its own batches is
skipped until it prints its result.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from ..lines import Format, LineReport, native
from .pairs import find_pairs, sole_eval_loss, sole_loss, to_fields

MAX_LINE = 4096
# Text one of which every line this reader reads contains (the quick scan's, and its own).
HINTS = (
    "tep",
    "TEP",
    "ter",
    "TER",
    "poch",
    "POCH",
    "batch=",
    "num_updates",
    "| loss",
    "Train:",
    "Test:",
    "Up.",
    "Batch ",
    "words/sec/thread",
    # A line with a loss and no counter this reader knows ("| Progress [##  ][11.64%] | ...
    # Loss 9.7263", Megatron's "... at the end of training for val data | lm loss value: ..."):
    # the quick scan already looks for these for the lone loss's reader.
    "oss",
    "OSS",
)


class Count(NamedTuple):
    """What a counter says: the step (global), the run's total, the fractional epoch and the
    number of epochs, each None where the counter does not say it."""

    step: int | None = None
    total: int | None = None
    epoch: float | None = None
    max_epochs: int | None = None
    evaluation: bool = False
    # An epoch alone ("Epoch 3/10:", "(Epoch 21)"): a per-epoch summary, whose values are
    # read only where the vocabulary names one (its step is unknown).
    summary: bool = False


def _int(text: str | None) -> int | None:
    return int(text.replace(",", "")) if text else None


def _epoch_relative(done_epochs: int, index: int, per_epoch: int, epochs: int | None) -> Count:
    """An index within an epoch whose size the line prints: the global step and epoch."""
    if per_epoch <= 0 or index > per_epoch * 4:
        return Count()  # not an index of that epoch: unknown beats wrong
    return Count(
        step=done_epochs * per_epoch + index,
        total=epochs * per_epoch if epochs else None,
        epoch=done_epochs + index / per_epoch,
        max_epochs=epochs,
    )


def _mm(m: re.Match[str]) -> Count:
    """mmengine ``Epoch(train) [e][i/n]`` and mmcv ``Epoch [e][i/n]``: 1-based epochs and
    iterations (mmengine ``LoggerHook``: ``runner.epoch + 1``, ``batch_idx + 1``)."""
    if m["mode"] and m["mode"] != "train":
        return Count(evaluation=True)
    return _epoch_relative(int(m["e"]) - 1, int(m["i"]), int(m["n"]), None)


def _mm_iter(m: re.Match[str]) -> Count:
    """mmengine's iteration-based loop: ``Iter(train) [  50/90000]``."""
    if m["mode"] != "train":
        return Count(evaluation=True)
    return Count(step=int(m["i"]), total=int(m["n"]))


def _metric_logger(m: re.Match[str]) -> Count:
    """The torchvision references' and DINO's ``MetricLogger``: ``Epoch: [e/E]  [i/n]``, a
    0-based epoch and the 0-based index of the batch (``enumerate``); pytorch/examples'
    ImageNet ``ProgressMeter`` (``Epoch: [e][i/n]``) counts the same way."""
    epochs = _int(m["E"])
    return _epoch_relative(int(m["e"]), int(m["i"]), int(m["n"]), epochs)


def _ltr(m: re.Match[str]) -> Count:
    """pytracking's LTR trainer (OSTrack, STARK, LightFC): ``[train: 1, 300 / 937]``, the
    loader's name, the 1-based epoch and the 1-based batch of the epoch's (ltr/trainers/
    ltr_trainer.py: ``enumerate(loader, 1)``); ``[val: ...]`` is its evaluation."""
    if m["mode"] != "train":
        return Count(evaluation=True)
    return _epoch_relative(int(m["e"]) - 1, int(m["i"]), int(m["n"]), None)


def _timm(m: re.Match[str]) -> Count:
    """timm's ``Train: e [ i/n ( p%)]``: a 0-based epoch and the index of the update."""
    return _epoch_relative(int(m["e"]), int(m["i"]), int(m["n"]), None)


def _pcdet(m: re.Match[str]) -> Count:
    """OpenPCDet's timm-like ``Train: e/E ( p%) [ i/n ( p%)]``: the epoch is 1-based
    (``1/3 ( 33%)``) and the batch index 0-based (its ``Acc_iter`` is the index plus one)."""
    e, epochs, i, n = int(m["e"]), int(m["E"]), int(m["i"]), int(m["n"])
    if n <= 0 or i >= n or e < 1:
        return Count()
    return Count(total=epochs * n, epoch=e - 1 + (i + 1) / n, max_epochs=epochs)


def _swin(m: re.Match[str]) -> Count:
    """Swin Transformer's ``Train: [e/E][i/n]``: the epoch from ``range(start, EPOCHS)``
    (0-based) and the batch index (main.py ``train_one_epoch``)."""
    return _epoch_relative(int(m["e"]), int(m["i"]), int(m["n"]), int(m["E"]))


def _epoch_of_n(m: re.Match[str]) -> Count:
    """``epoch e/E`` and ``iter i/n`` (or ``step``) on one line: YOLOX (``epoch: 36/300,
    iter: 1040/1849``, yolox/core/trainer.py: ``self.epoch + 1``, ``self.iter + 1``), the
    PyTorch tutorials' ``Epoch [2/8], Step [10/100]``, llama-recipes' ``Training Epoch:
    1/3, step 10/100``: the count is within the epoch, whose number is 1-based where it
    prints its total (the last epoch shows ``E/E``; a 0 says 0-based)."""
    e, epochs = int(m["e"]), int(m["E"])
    if e > epochs:
        return Count()
    done = e if e == 0 else e - 1
    return _epoch_relative(done, int(m["i"]), int(m["n"]), epochs)


def _fairseq(m: re.Match[str]) -> Count:
    """fairseq's ``epoch 001:   3200 / 160368``: a 1-based epoch and the update within it
    (its ``num_updates`` pair, where printed, is the global step)."""
    return _epoch_relative(int(m["e"]) - 1, int(m["i"]), int(m["n"]), None)


def _nemo(m: re.Match[str]) -> Count:
    """NeMo 2's ``ProgressPrinter``: ``Training epoch e, iteration n/total`` with ``n`` the
    steps done in this epoch and ``total`` the trainer's ``max_steps``
    (nemo/lightning/pytorch/callbacks/progress_printer.py). The step is its ``global_step``
    pair, or ``n`` in the first epoch."""
    if m["stage"] != "Training":
        return Count(evaluation=True)
    step = int(m["i"]) if m["e"] == "0" else None
    return Count(step=step, total=int(m["n"]))


def _espnet(m: re.Match[str]) -> Count:
    """ESPnet2's reporter: ``17epoch:train:6376-6750batch:``, the batches of a 1-based
    epoch whose size it does not print: the run's step only in the first epoch."""
    if m["mode"] != "train":
        return Count(evaluation=True)
    return Count(step=int(m["b"])) if m["e"] == "1" else Count()


def _step_unknown(m: re.Match[str]) -> Count:
    """A counter that places no step: OpenCLIP's ``Train Epoch: 0 [ 38464/109468 (18%)]``
    (samples of the epoch), AllenNLP's ``Batch 1701/17168:`` (batches of an epoch named on
    a line of its own). Its line's values are still read."""
    return Count()


def _zero_based_epoch(m: re.Match[str]) -> Count:
    """A 0-based epoch and the batches done in it, of ``n``."""
    return _epoch_relative(int(m["e"]), int(m["i"]), int(m["n"]), None)


def _wenet(m: re.Match[str]) -> Count:
    """WeNet's ``TRAIN Batch e/i``: a 0-based epoch and the batch's index in it (the run's
    step in epoch 0 only); ``CV Batch``: the cross-validation's own count."""
    if m["mode"] == "CV":
        return Count(evaluation=True)
    return Count(step=int(m["i"])) if m["e"] == "0" else Count()


def _epoch_summary(m: re.Match[str]) -> Count:
    """An epoch with no count within it (``Epoch [3/10], Loss: 0.52``, ``(Epoch 21) TRAIN
    LOSS:0.1832``): the number of epochs where printed; which epoch is done is 0- or 1-based,
    and the step unknown."""
    return Count(max_epochs=_int(m["E"]), summary=True)


def _onmt_epoch(m: re.Match[str]) -> Count:
    """OpenNMT-py before 0.4: ``Epoch  1, 12850/37527;``, both 1-based."""
    return _epoch_relative(int(m["e"]) - 1, int(m["i"]), int(m["n"]), None)


def _train_step_in_epoch(m: re.Match[str]) -> Count:
    """PaddleClas' ``epoch:4   train step:6``: the index of the batch within the epoch
    (tools/program.py: ``enumerate(dataloader)``, the epoch 0-based), whose size the line
    does not print: the run's step only in epoch 0."""
    return Count(step=int(m["i"])) if m["e"] == "0" else Count()


def _cntk(m: re.Match[str]) -> Count:
    """CNTK 1's ``Epoch[ e of E]-Minibatch[ a- b]``: a 1-based epoch and its minibatches a to
    b (1-based), of an epoch whose size it does not print: the run's step in epoch 1 only."""
    epochs = int(m["E"])
    return Count(step=int(m["i"]) if m["e"] == "1" else None, max_epochs=epochs)


def _lua_rnn(m: re.Match[str]) -> Count:
    """char-rnn's ``i/iterations (epoch 0.347)``: the run's iteration of all of them
    (train.lua: ``iterations = max_epochs * ntrain``) and the epochs done; its TensorFlow
    port's ``290/446 (epoch 0)`` (``e * num_batches + b`` of ``num_epochs * num_batches``)
    names the 0-based epoch under way, not read."""
    epoch = float(m["epoch"]) if "." in m["epoch"] else None
    return Count(step=int(m["i"]), total=int(m["n"]), epoch=epoch)


def _step_of(m: re.Match[str]) -> Count:
    return Count(step=_int(m["i"]), total=_int(m.groupdict().get("n")))


def _after_index(m: re.Match[str]) -> Count:
    """A 0-based index of the iteration just done, of ``n``: ``i + 1`` are done."""
    return Count(step=int(m["i"]) + 1, total=int(m["n"]))


def _eval_count(m: re.Match[str]) -> Count:
    return Count(evaluation=True)


_N = r"(\d{1,15})"
# The loop's counter, most specific first; the first found is the line's.
COUNTERS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], Count]], ...] = (
    # Trainer's notebook progress as text: "[ 22/290 02:50 < 38:04, 0.12 it/s, Epoch 0.36/5]"
    # (transformers utils/notebook.py: the global step of max_steps, then the epoch).
    (
        re.compile(
            r"^\s*\[\s*(?P<i>\d{1,15})/(?P<n>\d{1,15}) [\d:]{4,12} < [\d:]{4,12}, "
            r"[\d.]+ (?:it/s|s/it), Epoch [\d.]+/\d+\]"
        ),
        _step_of,
    ),
    # Composer: "[batch=366/48000]:" heads a block of "Train <metric>: <value>" lines.
    (re.compile(r"\[batch=(?P<i>\d{1,15})/(?P<n>\d{1,15})\]"), _step_of),
    (
        re.compile(
            r"\bEpoch(?:\((?P<mode>\w+)\))?\s*\[\s*(?P<e>\d{1,9})\]\s*\[\s*(?P<i>\d{1,12})\s*/\s*"
            r"(?P<n>\d{1,12})\]"
        ),
        _mm,
    ),
    (
        re.compile(r"\bIter\((?P<mode>\w+)\)\s*\[\s*(?P<i>\d{1,15})\s*/\s*(?P<n>\d{1,15})\]"),
        _mm_iter,
    ),
    (
        re.compile(
            r"\bEpoch: \[(?P<e>\d{1,9})(?:/(?P<E>\d{1,9}))?\]\s*\[\s*(?P<i>\d{1,12})\s*/\s*"
            r"(?P<n>\d{1,12})\]"
        ),
        _metric_logger,
    ),
    (re.compile(r"^\s*Test:\s*(?:\[|Total)"), _eval_count),  # MetricLogger's evaluation
    (
        re.compile(
            r"^\s*\[(?P<mode>train|val|valid|test): (?P<e>\d{1,9}), (?P<i>\d{1,12}) / "
            r"(?P<n>\d{1,12})\]"
        ),
        _ltr,
    ),
    (
        re.compile(
            r"\bEpoch\[\s*(?P<e>\d{1,9}) of (?P<E>\d{1,9})\]-Minibatch\[\s*(?:\d{1,15}\s*-\s*)?"
            r"(?P<i>\d{1,15})\s*[,\]]"
        ),
        _cntk,
    ),
    # char-rnn: "66/9500 (epoch 0.347), train_loss = 3.27353297, ..." (its TensorFlow port:
    # "290/446 (epoch 0), train_loss = 2.098, time/batch = 0.163"); torch-rnn:
    # "Epoch 1.00 / 50, i = 1 / 11450, loss = 4.213" (i of num_iterations, train.lua; its
    # epoch is 1-based, i / num_train + 1, and not read).
    (
        re.compile(r"^\s*(?P<i>\d{1,15})/(?P<n>\d{1,15}) \(epoch (?P<epoch>\d{1,9}(?:\.\d+)?)\),"),
        _lua_rnn,
    ),
    (
        re.compile(r"\bEpoch \d{1,9}\.\d+ / \d{1,9}, i = (?P<i>\d{1,15}) / (?P<n>\d{1,15}),"),
        _step_of,
    ),
    (
        re.compile(r"\b(?P<e>\d{1,9})epoch:(?P<mode>[a-z]+):(?P<a>\d{1,15})-(?P<b>\d{1,15})batch:"),
        _espnet,
    ),
    # OpenCLIP's later trainers (TinyCLIP): "Train Epoch: 14 [41/14656] [ 41984/15007744 (0%)]",
    # the 0-based epoch and its batches done (batch_count = i + 1), then its samples.
    (
        re.compile(r"\bTrain Epoch: (?P<e>\d{1,9}) \[(?P<i>\d{1,15})/(?P<n>\d{1,15})\]"),
        _zero_based_epoch,
    ),
    (re.compile(r"\bTrain Epoch: \d{1,9} \[\s*\d{1,15}/\d{1,15} \(\d{1,3}%\)\]"), _step_unknown),
    # WeNet and WeKWS: "TRAIN Batch 4/203800", the 0-based epoch and the batch's index within
    # it (its size not printed); "CV Batch 4/0" a cross-validation still under way.
    (
        re.compile(r"\b(?P<mode>TRAIN|CV) Batch (?P<e>\d{1,9})/(?P<i>\d{1,15})\b"),
        _wenet,
    ),
    # fastText: "Progress: 41.3% words/sec/thread: 1767038 lr: 0.0998 loss: 1.3856 ETA: 0h11m"
    # (avg.loss since 0.9), the share of the words to process: no step, its values read.
    (re.compile(r"^\s*Progress:\s+\d{1,3}(?:\.\d+)?%\s+words/sec/thread:"), _step_unknown),
    # A text bar of the share done, no count: "| Progress [##   ][11.64%] | LR 0.000377 | Loss
    # 9.7263 (  6.9621) |" (MonoCon's engine): its values read, no step.
    (re.compile(r"\bProgress\s?\[[#=>.\- ]{0,200}\]\s?\[\s*\d{1,3}(?:\.\d+)?%\]"), _step_unknown),
    # AllenNLP's "Batch 1701/17168: accuracy: ..., loss: 1.09 ||": the batches done in an
    # epoch it names on a line of its own, so the run's step is unknown here.
    (re.compile(r"\bBatch \d{1,15}/\d{1,15}: "), _step_unknown),
    (
        re.compile(
            r"\bTrain: \[(?P<e>\d{1,9})/(?P<E>\d{1,9})\]\[\s*(?P<i>\d{1,12})/(?P<n>\d{1,12})\]"
        ),
        _swin,
    ),
    (
        re.compile(
            r"\bTrain:\s+(?P<e>\d{1,9})/(?P<E>\d{1,9}) \(\s*\d+%\)\s+\[\s*(?P<i>\d{1,12})/"
            r"(?P<n>\d{1,12}) \("
        ),
        _pcdet,
    ),
    (
        re.compile(r"\bTrain: (?P<e>\d{1,9}) \[\s*(?P<i>\d{1,12})/(?P<n>\d{1,12}) \(\s*\d+%\)\]"),
        _timm,
    ),
    (
        re.compile(r"\bepoch (?P<e>\d{1,9}):?\s+(?P<i>\d{1,12})\s*/\s*(?P<n>\d{1,12})(?![\d/])"),
        _fairseq,
    ),
    (
        re.compile(
            r"\b(?P<stage>Training|Validation|Testing|Sanity checking Validation) epoch "
            r"(?P<e>\d{1,9}), iteration (?P<i>\d{1,15})/(?P<n>\d{1,15})"
        ),
        _nemo,
    ),
    (
        re.compile(r"^\s*(?:Validation|Testing|Sanity checking)\b[^:]{0,40}: iteration \d"),
        _eval_count,
    ),
    # rsl_rl (Isaac Lab, legged_gym): "Learning iteration 1/10", the 0-based index of the
    # iteration just learned (on_policy_runner.py: for it in range(start, tot_iter)).
    (re.compile(r"\bLearning iteration (?P<i>\d{1,15})/(?P<n>\d{1,15})\b"), _after_index),
    (re.compile(r"\biteration\s+(?P<i>\d{1,15})\s*/\s*(?P<n>\d{1,15})\b"), _step_of),  # Megatron
    (
        re.compile(
            r"(?i)(?<![\w/])epoch\s*[:=#]?\s*\[?\s*(?P<e>\d{1,9})\s*/\s*(?P<E>\d{1,9})\]?[\s,;|]+"
            r"(?:\w+\s+){0,2}?(?:step|iter(?:ation)?)s?\s*[:=#]?\s*\[?\s*(?P<i>\d{1,15})\s*(?:/|of)\s*"
            r"(?P<n>\d{1,15})\]?(?![\d/.])"
        ),
        _epoch_of_n,
    ),
    (re.compile(r"\bEpoch\s+(?P<e>\d{1,9}),\s+(?P<i>\d{1,12})/\s*(?P<n>\d{1,12});"), _onmt_epoch),
    # icefall's "Epoch 0, batch 500, loss[...]": the batch's index within an epoch whose
    # size it does not print (train.py's enumerate(train_dl)); its epochs count from 0 in
    # older recipes and from 1 in newer ones, so only epoch 0 is surely the first.
    (re.compile(r"\bEpoch (?P<e>\d{1,9}), batch (?P<i>\d{1,15}),"), _train_step_in_epoch),
    # "Epoch: 0 Sample 75/76" (DexiNed): a batch's index in the epoch; only 0 is surely first.
    (
        re.compile(
            r"(?i)(?<![\w/])epoch\s*[:=#]?\s*(?P<e>\d{1,9})[\s,;|]+(?:batch|sample)\s*[:=#]?\s*"
            r"(?P<i>\d{1,15})\s*/\s*(?P<n>\d{1,15})(?![\d/])"
        ),
        _train_step_in_epoch,
    ),
    # MXNet's Speedometer: "Epoch[7] Batch [300]" (and "Batch [200-300]" since 1.3), the
    # 0-based epoch and the batch's index within it (module.fit's enumerate).
    (
        re.compile(r"\bEpoch\[(?P<e>\d{1,9})\]\s*Batch\s*\[(?:\d{1,15}-)?(?P<i>\d{1,15})\]"),
        _train_step_in_epoch,
    ),
    # The Hugging Face Flax examples (transformers' and diffusers'): "Step... (1000 | Loss:
    # 2.31, Learning Rate: ...)" (cur_step, the run's) and, after each epoch, "Epoch...
    # (47/116 | Loss: 0.1743)" (epoch + 1 of num_train_epochs: a per-epoch summary).
    (re.compile(r"\bStep\.\.\. \((?P<i>\d{1,15})(?:/(?P<n>\d{1,15}))? \|"), _step_of),
    (re.compile(r"\bEpoch\.\.\. \((?P<e>\d{1,9})/(?P<E>\d{1,9}) \|"), _epoch_summary),
    # Marian: "Ep. 1 : Up. 26000 :", the epoch under way and the updates done (the run's step).
    (re.compile(r"\bEp\.\s*\d{1,9}\s*:\s*Up\.\s*(?P<i>\d{1,15})\b"), _step_of),
    # PaddleClas' "epoch:4   train step:6": the batch's index within an epoch of unknown size.
    (
        re.compile(
            r"(?i)(?<![\w/])epoch\s*[:=#]?\s*(?P<e>\d{1,9})[\s,;|]+train step\s*[:=#]?\s*"
            r"(?P<i>\d{1,15})(?![\w/.%])"
        ),
        _train_step_in_epoch,
    ),
    # "step 10/100", "Step 2250/200000;", "Step: 10 of 100", "step    1/74 |"
    (
        re.compile(
            r"(?i)(?<![\w/])(?:global[ _])?step\s*[:=#]?\s*\[?\s*(?P<i>\d{1,15})\s*(?:/|of)\s*"
            r"(?P<n>\d{1,15})\]?(?![\d/.])"
        ),
        _step_of,
    ),
    # "iter: [10/500]", "Iteration 5/100"
    (
        re.compile(
            r"(?i)(?<![\w/])iter(?:ation)?\s*[:=#]?\s*\[?\s*(?P<i>\d{1,15})\s*/\s*(?P<n>\d{1,15})\]?"
            r"(?![\d/.])"
        ),
        _step_of,
    ),
    # "step: 4", "step:1 -", "Step 1 |", "completed step: 9", "global step 37:"
    (
        re.compile(r"(?i)(?<![\w/])(?:global[ _])?step\s*[:=#]?\s*(?P<i>\d{1,15})(?![\w/.%])"),
        _step_of,
    ),
    # "iter: 1259", "iter 1631:"
    (re.compile(r"(?i)(?<![\w/])iter(?:ation)?\s*[:=#]?\s*(?P<i>\d{1,15})(?![\w/.%])"), _step_of),
    # "Epoch [3/10], Loss: 0.52", "epoch: 81, lr: ...", "(Epoch 21) TRAIN LOSS:0.1832",
    # "num_epoch: 44, loss: 0.3741" (a loop's epoch just done)
    (
        re.compile(
            r"(?i)(?<![\w/])(?:num_)?epoch\s*[:=#]?\s*\[?\s*\d{1,9}(?:\s*(?:/|of)\s*(?P<E>\d{1,9}))?\]?"
            r"(?![\d/.])"
        ),
        _epoch_summary,
    ),
)
# jiwoon-ahn's weakly supervised segmentation trainers (IRNet's train_cam.py and
# train_irn.py, and their many forks) print "step:%5d/%5d" % (optimizer.global_step - 1,
# max_step) beside "imps:" and "etc:": the index of the step just taken, one short of the
# steps done.
_INDEX_OF_STEP_TAKEN = re.compile(r"^\s*step:\s*\d+/\s*\d+ .*\bimps:[\d.]+ .*\betc:")
# A bare leading count before a "|" (modded-nanoGPT style "420 | loss 4.06 | lr ..."): only
# with a loss on the line, since many lines start with a number.
_BARE = re.compile(r"^\s*(?P<i>\d{1,12})\s+\|\s+(?=[A-Za-z])")
# "Epoch 2/8" beside a step counter: the number of epochs.
_EPOCHS = re.compile(r"(?i)(?<![\w/])epoch\s*[:=#]?\s*\d{1,9}\s*(?:/|of)\s*(?P<n>\d{1,9})(?![\d/])")
# "epoch 3", "Epoch 3:": a counter too (never read as a pair: 0- or 1-based is the tool's).
_EPOCH_WORD = re.compile(r"(?i)(?<![\w/])epoch\s*[:=#]?\s*\d{1,9}(?![\d/.])")
# An evaluation line: what it prints before its first value says so (MaxText's "eval metrics
# after step: 99, loss=...", torchtitan's "validate step: 100  loss: ...").
_EVAL_PHRASE = re.compile(
    r"(?i)(?:valid on|\bvalidat(?:e|ion|ing)(?:\b|(?-i:(?=[A-Z])))"
    r"|\bevaluat(?:ion|ing)(?:\b|(?-i:(?=[A-Z])))|\btest(?:ing)?:|\btest\b|"
    r"\[(?:val|valid|eval|test)\]|\b(?:eval|val|test) epoch|\beval\b)"
)
_FRACTION = re.compile(r"\d\s*/\s*\d")


# Every counter and every step key has one of these: a line without is no progress line,
# found with one scan instead of one per counter (most lines a hint lets through are not).
_MAYBE = re.compile(
    r"(?i)step|iter|epoch|batch=|batch \d|train:|\btest\b|num_updates|^\s*\d+\s+\||\bUp\.|"
    r"words/sec/thread|loss value:|Progress \["
)


def find_counter(text: str) -> tuple[Count, tuple[int, int]] | None:
    """The line's counter and where it stands, or None."""
    for pattern, read in COUNTERS:
        m = pattern.search(text)
        if m is not None:
            return read(m), m.span()
    return None


def read_progress(msg: str, now: float) -> LineReport | None:
    """The report a progress line makes, or None for any other line."""
    if len(msg) > MAX_LINE or not any(h in msg for h in HINTS) or not _MAYBE.search(msg):
        return None
    if "Dropping entry" in msg:
        return None  # wandb refused a logged step ("User provided step: N is less than ...")
    found = find_counter(msg)
    bare = None
    if found is None:
        bare = _BARE.match(msg)
        if bare is not None:
            found = (Count(step=int(bare["i"])), bare.span())
    start, end = found[1] if found is not None else (0, 0)
    count = found[0] if found is not None else Count()
    rest = msg[end:]
    if rest.startswith(":"):
        rest = rest[1:]
    # Other counters on the line (an epoch beside a step) are no pairs.
    rest = _EPOCH_WORD.sub(" | ", rest)
    # Values printed before the counter count too ("loss:0.74, global_step:190").
    before = find_pairs(_EPOCH_WORD.sub(" | ", msg[:start])) if found is not None else []
    pairs = before + find_pairs(rest)
    # What the line prints before its first value: the counter, and words saying what it is.
    after = pairs[len(before) :]
    head = msg[start:end] + (rest[: rest.find(after[0].key)] if after else rest)
    evaluation = count.evaluation or _EVAL_PHRASE.search(msg[:start] + head) is not None
    if evaluation and _FRACTION.search(head):
        return None  # an evaluation still counting its batches: its result comes later
    fields = to_fields(pairs, evaluation=evaluation)
    values = fields.values
    if found is None and bare is None and "eval_loss" in values and "loss" not in values:
        # No counter, and an eval loss as the line's only loss: an evaluation's result
        # ("eval_ppl=tensor(975.55, ...) eval_epoch_loss=tensor(6.8830, ...)").
        evaluation = True
    if found is not None and not evaluation and "loss" not in values:
        # A counted line whose only loss-named value is one the vocabulary does not know.
        loss = sole_loss(fields.metrics)
        if loss is not None:
            values = {**values, "loss": loss}
    if found is not None and "eval_loss" not in values:
        eval_loss = sole_eval_loss(fields.metrics)
        if eval_loss is not None:
            values = {**values, "eval_loss": eval_loss}
    if evaluation:
        # Its counter is the evaluation's; the global step keys still are the run's.
        count = Count()
        values = {k: v for k, v in values.items() if k in ("eval_loss", "step")}
        if "eval_loss" not in values:
            return None
    elif bare is not None and "loss" not in values:
        return None
    step = values.pop("step", None)
    doc: dict[str, object] = {}
    if step is not None and step >= 0 and step == int(step):
        doc["step"] = int(step)
    elif count.step is not None:
        doc["step"] = count.step + (1 if _INDEX_OF_STEP_TAKEN.match(msg) else 0)
    said = {k: v for k, v in values.items() if k != "max_steps" or v == int(v)}
    total = said.pop("max_steps", None)
    if count.total is not None:
        doc["max_steps"] = count.total
    elif total is not None:
        doc["max_steps"] = int(total)
    if count.epoch is not None and "epoch" not in said:
        doc["epoch"] = count.epoch
    epochs = _EPOCHS.search(msg)
    if count.max_epochs is not None:
        doc["max_epochs"] = count.max_epochs
    elif epochs is not None and not evaluation:
        doc["max_epochs"] = int(epochs["n"])
    tokens = said.pop("tokens", None)
    doc.update(said)
    if tokens is not None:
        doc["tokens"] = int(tokens)
    named = {k for k in doc if k not in ("step", "max_steps", "epoch", "max_epochs")}
    if not evaluation:
        # A line needs a step (a counter or a step key), or a counter whose step is
        # unknown (a later epoch of unknown size), and a value beside it: a counter alone
        # is too common a word ("saved at step 100").
        if "step" not in doc and (found is None or count.step is not None):
            return None
        if not (named or fields.metrics or "max_steps" in doc):
            return None
        if count.summary and not named:
            return None  # "Epoch 5: val_loss improved from 0.52 to 0.48" is no summary
    if fields.metrics:
        doc["metrics"] = fields.metrics
    return native(doc, now, "progress")


FORMAT = Format("progress", HINTS, read_progress)


def read_continued(msg: str, now: float) -> LineReport | None:
    """The values of a line with a loss and no counter (``Learning rate = [...]\tLoss =
    3.5443 (ave = 3.6228)``), or None. A logger's one message may run over two lines, its
    counter on the first and its loss on the second (openseg.pytorch's trainer): the
    accumulator takes such a line only right after a counted line that printed no loss, and
    drops it anywhere else. Tried after every other format, those users add included."""
    if len(msg) > MAX_LINE or find_counter(msg) is not None or _BARE.match(msg):
        return None
    if _EVAL_PHRASE.search(msg):
        return None
    fields = to_fields(find_pairs(msg))
    if "loss" not in fields.values:
        return None
    doc: dict[str, object] = {
        k: v for k, v in fields.values.items() if k in ("loss", "learning_rate", "grad_norm")
    }
    if fields.metrics:
        doc["metrics"] = fields.metrics
    found = native(doc, now, "progress")
    return None if found is None else found._replace(part="continued")


# Not in FORMATS: parse.parse_line tries it last. Its hints are the progress reader's.
CONTINUED = Format("progress", ("oss", "OSS"), read_continued)
