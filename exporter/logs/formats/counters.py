"""The loop counters the general reader of progress lines knows (:mod:`.progress`), most
specific first, each with what it says: the step (global, where the counter counts within
an epoch whose size it prints), the run's total, the epoch and the number of epochs.

One table, so that a new tool's counter is one entry: its regular expression and the
function that reads a match (0- or 1-based as the tool prints it, checked in its source).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple


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
    # A loop's own "step i/n" or "iter i" (not a global step's): beside an epoch's number
    # it may count within that epoch (exporter.logs.epoch_counter decides).
    loop: bool = False
    # A count within an epoch of a size the line does not print: (epochs done, the count).
    # The accumulator places it where another line printed the epoch's size.
    within: tuple[int, int] | None = None
    # A block's header (Composer's "[epoch=2][batch=3/5]:"): its step stands without a value
    # beside it, the block's lines carry them.
    header: bool = False


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
    return _one_based_epoch(m)


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
    return _one_based_epoch(m)


def _composer_epoch(m: re.Match[str]) -> Count:
    """Composer's ``[epoch=2][batch=3/5]``: the 1-based epoch and the batches done in it, of
    the epoch's ``n`` (its total is the epoch's, not the run's)."""
    return _one_based_epoch(m)._replace(header=True)


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


def _of_epoch(m: re.Match[str]) -> Count:
    """``i/n of epoch e[/E]``: DLRM's ``Finished training it 8192/315310 of epoch 0`` (the
    1-based iteration, epoch 0 the first: dlrm_s_pytorch.py) and RSC's ``30/42 of epoch 6/30``
    (the batch index, the 1-based epoch of 30: utils/Logger.py). The count is within the
    epoch; which epoch is first is 0 where one prints 0, else 1 where the line prints the
    number of epochs (the last shows ``E/E``); a later epoch of unknown base places no step."""
    e, i, n = int(m["e"]), int(m["i"]), int(m["n"])
    epochs = _int(m["E"])
    if e == 0:
        return _epoch_relative(0, i, n, epochs)
    if epochs is None or e > epochs:
        return Count()
    return _epoch_relative(e - 1, i, n, epochs)


def _batch_of_one_based_epoch(m: re.Match[str]) -> Count:
    """The 1-based batch of a 1-based epoch whose size the line does not print: the
    Time-Series-Library family (Informer, Autoformer, TimesNet, PatchTST, iTransformer:
    ``\titers: {i + 1}, epoch: {epoch + 1} | loss: ...``, the size on its summary line,
    :func:`_tslib_epoch`) and PyTorch's CIFAR-10 tutorial and its many copies (``[{epoch +
    1}, {i + 1:5d}] loss: ...``, every 2000 batches, the size never printed). The first
    epoch's count is the step; a later one's only where the epoch's size is known."""
    e, i = int(m["e"]), int(m["i"])
    if e < 1:
        return Count()
    return Count(step=i if e == 1 else None, within=(e - 1, i))


def _tslib_epoch(m: re.Match[str]) -> Count:
    """Its summary after each epoch: ``Epoch: {epoch + 1}, Steps: {train_steps} | Train Loss:
    ...`` with train_steps = len(train_loader): the epoch's size, so E epochs of it are done."""
    e, n = int(m["e"]), int(m["n"])
    if e < 1 or n < 1:
        return Count()
    return Count(step=e * n, epoch=float(e))


def _epoch_batches(m: re.Match[str]) -> Count:
    """An epoch's summary that prints its batches, ``Epoch 9 iterations 12500, average loss
    ...`` (a loop's ``f"Epoch {epoch} iterations {count}, ..."``): the epoch's size. Epoch 0
    is surely the first: its size is the step, and later summaries place their epoch after
    that many (the accumulator's ``within``). A first epoch printed as 1 may be a 1-based
    loop's first or a 0-based loop's second: no step from it."""
    e, n = int(m["e"]), int(m["n"])
    if n < 1:
        return Count()
    if e == 0:
        return Count(step=n, epoch=1.0)
    return Count(within=(e, n))


def _fairseq(m: re.Match[str]) -> Count:
    """fairseq's ``epoch 001:   3200 / 160368``: a 1-based epoch and the update within it
    (its ``num_updates`` pair, where printed, is the global step)."""
    return _one_based_epoch(m)


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


def _one_based_epoch(m: re.Match[str]) -> Count:
    """A 1-based epoch and the batches done in it, of the epoch's ``n``: flair's ModelTrainer
    (``epoch 150 - iter 120/128 - loss ...``: ``self.epoch`` from 1, ``seen_batches`` counted
    after each batch), pytorch/examples' word_language_model and the PyTorch Transformer
    tutorial (``| epoch 3 |   200/ 2983 batches |``: ``range(1, epochs + 1)``, the batch's index
    of ``len(train_data) // bptt``); mmcv's, pytracking's and Composer's in their own shapes."""
    return _epoch_relative(int(m["e"]) - 1, int(m["i"]), int(m["n"]), None)


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
    return _one_based_epoch(m)


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


def _kaldi(m: re.Match[str]) -> Count:
    """Kaldi's nnet3 trainers (steps/nnet3/train_*.py, chain/train.py) log ``Iter: 27/59
    Jobs: 1   Epoch: 9.00/20.0 (45.0% complete)`` as iteration 27 (0-based) starts, of
    ``num_iters - 1``: 27 done of 60."""
    epochs = float(m["E"])  # num_epochs may be fractional ("1.5"): no whole count then
    return Count(
        step=int(m["i"]),
        total=int(m["n"]) + 1,
        epoch=float(m["e"]),
        max_epochs=int(epochs) if epochs.is_integer() else None,
    )


def _loop_count(m: re.Match[str]) -> Count:
    """A loop's ``step i/n``, ``iter: i``: the step as printed (and its total), unless an
    epoch beside it shows it counts within the epoch (:func:`.progress.read_progress`)."""
    glob = m[0].lstrip().lower().startswith("global")
    return Count(step=_int(m["i"]), total=_int(m.groupdict().get("n")), loop=not glob)


def _clu(m: re.Match[str]) -> Count:
    """CLU's LoggingWriter: the step; an evaluation's collection counts no step of its own."""
    if m["c"] and m["c"].lower() in ("eval", "evaluation", "valid", "validation", "val", "test"):
        return Count(evaluation=True)
    return Count(step=int(m["i"]))


def _after_index(m: re.Match[str]) -> Count:
    """A 0-based index of the iteration just done, of ``n``: ``i + 1`` are done."""
    return Count(step=int(m["i"]) + 1, total=int(m["n"]))


def _eval_count(m: re.Match[str]) -> Count:
    return Count(evaluation=True)


_N = r"(\d{1,15})"
# A count in groups of thousands ("iter: 107,600", BasicSR's '{:8,d}'): the whole number.
_GROUPED = r"\d{1,3}(?:,\d{3})+(?!\d|,\d)"
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
    # CLU's LoggingWriter (the Flax examples, T5X, Scenic): "[1000] steps_per_second=1.76,
    # train_loss=6.52", "[0] collection=train a=3, b=0.15" (clu/metric_writers/
    # logging_writer.py and its test): the global step, then name=value pairs.
    (
        re.compile(
            r"(?<![\w\[\]])\[(?P<i>\d{1,15})\] (?:collection=(?P<c>[\w-]{1,64}) )?"
            r"(?=[A-Za-z_][\w/.-]{0,128}=)"
        ),
        _clu,
    ),
    (
        re.compile(
            r"\bIter: (?P<i>\d{1,12})/(?P<n>\d{1,12})\s+(?:Jobs: \d{1,6}\s+)?"
            r"Epoch: (?P<e>\d{1,9}(?:\.\d+)?)/(?P<E>\d{1,9}(?:\.\d+)?) "
            r"\(\d{1,3}(?:\.\d+)?% complete\)"
        ),
        _kaldi,
    ),
    # Composer: "[batch=366/48000]:" heads a block of "Train <metric>: <value>" lines; with a
    # duration in epochs "[epoch=2][batch=3/5]:", the 1-based epoch and its batches done
    # (composer/loggers/console_logger.py), or "[epoch=2][batch=3]:" where the epoch's length
    # is unknown.
    (
        re.compile(r"\[epoch=(?P<e>[1-9]\d{0,8})\]\[batch=(?P<i>\d{1,15})/(?P<n>\d{1,15})\]"),
        _composer_epoch,
    ),
    (re.compile(r"\[epoch=\d{1,9}\]\[batch=\d{1,15}\]"), _step_unknown),
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
    (
        re.compile(r"\bepoch (?P<e>[1-9]\d{0,8}) - iter (?P<i>\d{1,15})/(?P<n>\d{1,15}) - "),
        _one_based_epoch,
    ),
    # NCRF++: "Instance: 12500; Time: 5.25s; loss: 367.3678; acc: 141830/170170=0.8335", the
    # sentences of the epoch so far (main.py): no step, its values read.
    (re.compile(r"^\s*Instance: \d{1,15}; Time: "), _step_unknown),
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
            r"^\s*\|\s*epoch\s+(?P<e>\d{1,9})\s+\|\s*(?P<i>\d{1,12})\s*/\s*(?P<n>\d{1,12})"
            r" batches\s*\|"
        ),
        _one_based_epoch,
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
        re.compile(r"^\s*iters: (?P<i>\d{1,12}), epoch: (?P<e>\d{1,9}) \| (?=loss: )"),
        _batch_of_one_based_epoch,
    ),
    (
        re.compile(r"^\s*\[(?P<e>\d{1,9}),\s*(?P<i>\d{1,12})\] (?=loss: )"),
        _batch_of_one_based_epoch,
    ),
    (re.compile(r"^\s*Epoch: (?P<e>\d{1,9}), Steps: (?P<n>\d{1,12}) \| "), _tslib_epoch),
    (
        re.compile(r"\bEpoch (?P<e>\d{1,9}),? (?:iterations|batches) (?P<n>\d{1,12}),"),
        _epoch_batches,
    ),
    # DGL-KE's "[proc 0][Train](15000/40000) average loss: 0.2598": the process's step of
    # its max_step (dglke/train_pytorch.py), one value a line.
    (re.compile(r"\[Train\]\((?P<i>\d{1,15})/(?P<n>\d{1,15})\)"), _step_of),
    # PaddleSeg's "[TRAIN] epoch: 1, iter: 20/500": the run's iteration of its iters
    # (paddleseg/core/train.py; the epoch is derived from it, (iter - 1) // iters_per_epoch + 1).
    (re.compile(r"\[TRAIN\] epoch: \d{1,9}, iter: (?P<i>\d{1,15})/(?P<n>\d{1,15})\b"), _step_of),
    (
        re.compile(
            r"(?i)(?<![\w/])epoch\s*[:=#]?\s*\[?\s*(?P<e>\d{1,9})\s*/\s*(?P<E>\d{1,9})\]?(?:[\s,;|]|\.(?=\s))+"
            r"(?:\w+\s+){0,2}?(?:step|iter(?:ation)?)s?\s*[:=#]?\s*\[?\s*(?P<i>\d{1,15})\s*(?:/|of)\s*"
            r"(?P<n>\d{1,15})\]?(?![\d/]|\.\d)"
        ),
        _epoch_of_n,
    ),
    (re.compile(r"\bEpoch\s+(?P<e>\d{1,9}),\s+(?P<i>\d{1,12})/\s*(?P<n>\d{1,12});"), _onmt_epoch),
    (
        re.compile(
            r"(?i)(?<![\w/.])(?P<i>\d{1,15})\s*/\s*(?P<n>\d{1,15}) of epoch (?P<e>\d{1,9})"
            r"(?:\s*/\s*(?P<E>\d{1,9}))?(?![\d/]|\.\d)"
        ),
        _of_epoch,
    ),
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
            r"(?P<i>\d{1,15})(?![\w/%]|\.\w)"
        ),
        _train_step_in_epoch,
    ),
    # "step 10/100", "Step 2250/200000;", "Step: 10 of 100", "step    1/74 |", nanoT5's
    # "Step 53050 out of 80000 |"
    (
        re.compile(
            r"(?i)(?<![\w/])(?:global[ _])?step\s*[:=#]?\s*\[?\s*(?P<i>\d{1,15})\s*"
            r"(?:/|(?:out )?of)\s*(?P<n>\d{1,15})\]?(?![\d/]|\.\d)"
        ),
        _loop_count,
    ),
    # "iter: [10/500]", "Iteration 5/100"
    (
        re.compile(
            r"(?i)(?<![\w/])iter(?:ation)?\s*[:=#]?\s*\[?\s*(?P<i>\d{1,15})\s*/\s*(?P<n>\d{1,15})\]?"
            r"(?![\d/]|\.\d)"
        ),
        _loop_count,
    ),
    # "step: 4", "step:1 -", "Step 1 |", "completed step: 9", "global step 37:"
    (
        re.compile(
            rf"(?i)(?<![\w/])(?:global[ _])?step\s*[:=#]?\s*(?P<i>{_GROUPED}|\d{{1,15}})"
            r"(?![\w/%]|\.\w)"
        ),
        _loop_count,
    ),
    # "iter: 1259", "iter 1631:"
    (
        re.compile(
            rf"(?i)(?<![\w/])iter(?:ation)?\s*[:=#]?\s*(?P<i>{_GROUPED}|\d{{1,15}})(?![\w/%]|\.\w)"
        ),
        _loop_count,
    ),
    # "Epoch [3/10], Loss: 0.52", "epoch: 81, lr: ...", "(Epoch 21) TRAIN LOSS:0.1832",
    # "num_epoch: 44, loss: 0.3741" (a loop's epoch just done)
    (
        re.compile(
            r"(?i)(?<![\w/])(?:num_)?epoch\s*[:=#]?\s*\[?\s*\d{1,9}(?:\s*(?:/|of)\s*(?P<E>\d{1,9}))?\]?"
            r"(?![\d/]|\.\d)"
        ),
        _epoch_summary,
    ),
)


def find_counter(text: str) -> tuple[Count, tuple[int, int]] | None:
    """The line's counter and where it stands, or None."""
    for pattern, read in COUNTERS:
        m = pattern.search(text)
        if m is not None:
            return read(m), m.span()
    return None
