"""What a loop counter's match says (:class:`Count`): one function per counter shape of
:data:`.counters.COUNTERS`, each reading the step, the run's total, the epoch and the number
of epochs as the tool prints them (0- or 1-based, checked in its source).
"""

from __future__ import annotations

import re
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
    # The loop went on, to a step the line does not say exactly (LeRobot's rounded
    # "step:23K", the Annotated Transformer's "Epoch Step: 1801" within an unnamed epoch):
    # the step read so far is stale.
    moved_on: bool = False
    # A summary's epoch as printed ("Epoch[100/100], Train Loss: ..."): that epoch ended.
    done: int | None = None


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


def mm(m: re.Match[str]) -> Count:
    """mmengine ``Epoch(train) [e][i/n]`` and mmcv ``Epoch [e][i/n]``: 1-based epochs and
    iterations (mmengine ``LoggerHook``: ``runner.epoch + 1``, ``batch_idx + 1``); PASSL's
    LogHook, derived from mmcv's, prints the number of epochs too (``Epoch [1/300][20/365]``:
    ``current_epoch + 1`` of ``epochs``, ``inner_iter + 1``)."""
    if m["mode"] and m["mode"] != "train":
        return Count(evaluation=True)
    epochs = _int(m["E"])
    if epochs is not None and int(m["e"]) > epochs:
        return Count()
    return _epoch_relative(int(m["e"]) - 1, int(m["i"]), int(m["n"]), epochs)


def mm_iter(m: re.Match[str]) -> Count:
    """mmengine's iteration-based loop: ``Iter(train) [  50/90000]``."""
    if m["mode"] != "train":
        return Count(evaluation=True)
    return Count(step=int(m["i"]), total=int(m["n"]))


def metric_logger(m: re.Match[str]) -> Count:
    """The torchvision references' and DINO's ``MetricLogger``: ``Epoch: [e/E]  [i/n]``, a
    0-based epoch and the 0-based index of the batch (``enumerate``); pytorch/examples'
    ImageNet ``ProgressMeter`` (``Epoch: [e][i/n]``) counts the same way."""
    epochs = _int(m["E"])
    return _epoch_relative(int(m["e"]), int(m["i"]), int(m["n"]), epochs)


def ltr(m: re.Match[str]) -> Count:
    """pytracking's LTR trainer (OSTrack, STARK, LightFC): ``[train: 1, 300 / 937]``, the
    loader's name, the 1-based epoch and the 1-based batch of the epoch's (ltr/trainers/
    ltr_trainer.py: ``enumerate(loader, 1)``); ``[val: ...]`` is its evaluation."""
    if m["mode"] != "train":
        return Count(evaluation=True)
    return one_based_epoch(m)


def step_header(m: re.Match[str]) -> Count:
    """A bracketed step leading its line and heading the block under it (``[Step 0] Training
    Debug Info:``, then ``  Loss: 0.661919``): the step, of its total where it prints one;
    it stands without a value beside it, as Composer's header does."""
    return step_of(m)._replace(header=True)


def composer_epoch(m: re.Match[str]) -> Count:
    """Composer's ``[epoch=2][batch=3/5]``: the 1-based epoch and the batches done in it, of
    the epoch's ``n`` (its total is the epoch's, not the run's)."""
    return one_based_epoch(m)._replace(header=True)


def timm(m: re.Match[str]) -> Count:
    """timm's ``Train: e [ i/n ( p%)]``: a 0-based epoch and the index of the update."""
    return _epoch_relative(int(m["e"]), int(m["i"]), int(m["n"]), None)


def pcdet(m: re.Match[str]) -> Count:
    """OpenPCDet's timm-like ``Train: e/E ( p%) [ i/n ( p%)]``: the epoch is 1-based
    (``1/3 ( 33%)``) and the batch index 0-based (its ``Acc_iter`` is the index plus one)."""
    e, epochs, i, n = int(m["e"]), int(m["E"]), int(m["i"]), int(m["n"])
    if n <= 0 or i >= n or e < 1:
        return Count()
    return Count(total=epochs * n, epoch=e - 1 + (i + 1) / n, max_epochs=epochs)


def swin(m: re.Match[str]) -> Count:
    """Swin Transformer's ``Train: [e/E][i/n]``: the epoch from ``range(start, EPOCHS)``
    (0-based) and the batch index (main.py ``train_one_epoch``)."""
    return _epoch_relative(int(m["e"]), int(m["i"]), int(m["n"]), int(m["E"]))


def dcgan(m: re.Match[str]) -> Count:
    """DCGAN-tensorflow and its many copies (model.py ``train``): ``Epoch: [e/E] [i/n] time:
    ..., d_loss: ..., g_loss: ...`` (``[e]`` alone in most), the epoch from
    ``range(config.epoch)`` (0-based) and the batch's index from ``range(batch_idxs)``: the
    batches done, ``e * n + i + 1``."""
    return _epoch_relative(int(m["e"]), int(m["i"]) + 1, int(m["n"]), _int(m["E"]))


def split_step(m: re.Match[str]) -> Count:
    """A global step printed split in two, ``step // n + 1`` and ``step % n`` (zjy-ucas'
    ChineseNER: ``iteration:7 step:8/652``): ``(e - 1) * n + i``, the step run_step returned."""
    return _epoch_relative(int(m["e"]) - 1, int(m["i"]), int(m["n"]), None)


def epoch_of_n(m: re.Match[str]) -> Count:
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


def batch_then_epoch(m: re.Match[str]) -> Count:
    """``Batch i/n | epoch e/E``, the batch's count before its epoch's: a Chinese GPT-2
    trainer's ``当前Batch：10/6035 | 当前epoch:0/50`` (Medical_QA_System_GPT2's train.py:
    ``batch_index + 1`` of ``len(train_dataloader)``, the epoch from ``range(param.epochs)``).
    The count is within the epoch. Such lines print epoch 0 first where the loop is
    ``range(epochs)`` and 1 where it is ``range(1, epochs + 1)``: epoch 0 says the first;
    a later epoch, of a base the line does not print, places no step (unknown beats wrong)."""
    e, epochs = int(m["e"]), int(m["E"])
    if e == 0:
        return _epoch_relative(0, int(m["i"]), int(m["n"]), epochs)
    return Count()


def of_epoch(m: re.Match[str]) -> Count:
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


def batch_of_one_based_epoch(m: re.Match[str]) -> Count:
    """The 1-based batch of a 1-based epoch whose size the line does not print: the
    Time-Series-Library family (Informer, Autoformer, TimesNet, PatchTST, iTransformer:
    ``\titers: {i + 1}, epoch: {epoch + 1} | loss: ...``, the size on its summary line,
    :func:`tslib_epoch`) and PyTorch's CIFAR-10 tutorial and its many copies (``[{epoch +
    1}, {i + 1:5d}] loss: ...``, every 2000 batches, the size never printed). The first
    epoch's count is the step; a later one's only where the epoch's size is known."""
    e, i = int(m["e"]), int(m["i"])
    if e < 1:
        return Count()
    return Count(step=i if e == 1 else None, within=(e - 1, i))


def batch_of_zero_based_epoch(m: re.Match[str]) -> Count:
    """The 1-based batch of a 0-based epoch whose size the line does not print: the gesture
    generation trainers after Trimodal-Context (``EP {epoch} ({iter_idx + 1:3d}) | ...``,
    ``for epoch in range(args.epochs)``). The first epoch's count is the step; a later
    one's only where the epoch's size is known."""
    e, i = int(m["e"]), int(m["i"])
    return Count(step=i if e == 0 else None, within=(e, i))


def tslib_epoch(m: re.Match[str]) -> Count:
    """Its summary after each epoch: ``Epoch: {epoch + 1}, Steps: {train_steps} | Train Loss:
    ...`` with train_steps = len(train_loader): the epoch's size, so E epochs of it are done."""
    e, n = int(m["e"]), int(m["n"])
    if e < 1 or n < 1:
        return Count()
    return Count(step=e * n, epoch=float(e))


def epoch_batches(m: re.Match[str]) -> Count:
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


def fairseq(m: re.Match[str]) -> Count:
    """fairseq's ``epoch 001:   3200 / 160368``: a 1-based epoch and the update within it
    (its ``num_updates`` pair, where printed, is the global step)."""
    return one_based_epoch(m)


def nemo(m: re.Match[str]) -> Count:
    """NeMo 2's ``ProgressPrinter``: ``Training epoch e, iteration n/total`` with ``n`` the
    steps done in this epoch and ``total`` the trainer's ``max_steps``
    (nemo/lightning/pytorch/callbacks/progress_printer.py). The step is its ``global_step``
    pair, or ``n`` in the first epoch."""
    if m["stage"] != "Training":
        return Count(evaluation=True)
    step = int(m["i"]) if m["e"] == "0" else None
    return Count(step=step, total=int(m["n"]))


def espnet(m: re.Match[str]) -> Count:
    """ESPnet2's reporter: ``17epoch:train:6376-6750batch:``, the batches of a 1-based
    epoch whose size it does not print: the run's step only in the first epoch."""
    if m["mode"] != "train":
        return Count(evaluation=True)
    return Count(step=int(m["b"])) if m["e"] == "1" else Count()


def step_unknown(m: re.Match[str]) -> Count:
    """A counter that places no step: OpenCLIP's ``Train Epoch: 0 [ 38464/109468 (18%)]``
    (samples of the epoch), AllenNLP's ``Batch 1701/17168:`` (batches of an epoch named on
    a line of its own). Its line's values are still read."""
    return Count()


def moved_on(m: re.Match[str]) -> Count:
    """A count that is no run's exact step, though the loop went on: LeRobot's
    ``step:23K`` (its MetricsTracker prints the step through ``format_big_number``, rounded
    to thousands), the Annotated Transformer's ``Epoch Step: 1801`` (the batch's index
    within an epoch no line names or sizes). Its line's values are read; the step read
    before it is no longer the run's."""
    return Count(moved_on=True)


def one_based_epoch(m: re.Match[str]) -> Count:
    """A 1-based epoch and the batches done in it, of the epoch's ``n``: flair's ModelTrainer
    (``epoch 150 - iter 120/128 - loss ...``: ``self.epoch`` from 1, ``seen_batches`` counted
    after each batch), pytorch/examples' word_language_model and the PyTorch Transformer
    tutorial (``| epoch 3 |   200/ 2983 batches |``: ``range(1, epochs + 1)``, the batch's index
    of ``len(train_data) // bptt``); mmcv's, pytracking's and Composer's in their own shapes."""
    return _epoch_relative(int(m["e"]) - 1, int(m["i"]), int(m["n"]), None)


def zero_based_epoch(m: re.Match[str]) -> Count:
    """A 0-based epoch and the batches done in it, of ``n``."""
    return _epoch_relative(int(m["e"]), int(m["i"]), int(m["n"]), None)


def zero_based_epoch_of(m: re.Match[str]) -> Count:
    """A 0-based epoch of ``E`` (the last prints ``E-1/E``) and the batches done in it, of
    ``n``: the run's step and length."""
    e, epochs = int(m["e"]), int(m["E"])
    if e >= epochs:
        return Count()  # no epoch of a 0-based loop: not this shape's line
    return _epoch_relative(e, int(m["i"]), int(m["n"]), epochs)


def wenet(m: re.Match[str]) -> Count:
    """WeNet's ``TRAIN Batch e/i``: a 0-based epoch and the batch's index in it (the run's
    step in epoch 0 only); ``CV Batch``: the cross-validation's own count."""
    if m["mode"] == "CV":
        return Count(evaluation=True)
    return Count(step=int(m["i"])) if m["e"] == "0" else Count()


def epoch_summary(m: re.Match[str]) -> Count:
    """An epoch with no count within it (``Epoch [3/10], Loss: 0.52``, ``(Epoch 21) TRAIN
    LOSS:0.1832``): the number of epochs where printed; which epoch is done is 0- or 1-based,
    and the step unknown."""
    return Count(max_epochs=_int(m["E"]), summary=True, done=_int(m["e"]))


def onmt_epoch(m: re.Match[str]) -> Count:
    """OpenNMT-py before 0.4: ``Epoch  1, 12850/37527;``, both 1-based."""
    return one_based_epoch(m)


def train_step_in_epoch(m: re.Match[str]) -> Count:
    """PaddleClas' ``epoch:4   train step:6``: the index of the batch within the epoch
    (tools/program.py: ``enumerate(dataloader)``, the epoch 0-based), whose size the line
    does not print: the run's step in epoch 0; a later epoch's only where another line
    printed the epoch's size (else the step read so far is an earlier epoch's: unknown)."""
    e, i = int(m["e"]), int(m["i"])
    return Count(step=i if e == 0 else None, within=(e, i))


def cntk(m: re.Match[str]) -> Count:
    """CNTK 1's ``Epoch[ e of E]-Minibatch[ a- b]``: a 1-based epoch and its minibatches a to
    b (1-based), of an epoch whose size it does not print: the run's step in epoch 1 only."""
    epochs = int(m["E"])
    return Count(step=int(m["i"]) if m["e"] == "1" else None, max_epochs=epochs)


def lua_rnn(m: re.Match[str]) -> Count:
    """char-rnn's ``i/iterations (epoch 0.347)``: the run's iteration of all of them
    (train.lua: ``iterations = max_epochs * ntrain``) and the epochs done; its TensorFlow
    port's ``290/446 (epoch 0)`` (``e * num_batches + b`` of ``num_epochs * num_batches``)
    names the 0-based epoch under way, not read."""
    epoch = float(m["epoch"]) if "." in m["epoch"] else None
    return Count(step=int(m["i"]), total=int(m["n"]), epoch=epoch)


def step_of(m: re.Match[str]) -> Count:
    return Count(step=_int(m["i"]), total=_int(m.groupdict().get("n")))


def kaldi(m: re.Match[str]) -> Count:
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


def loop_count(m: re.Match[str]) -> Count:
    """A loop's ``step i/n``, ``iter: i``: the step as printed (and its total), unless an
    epoch beside it shows it counts within the epoch (:func:`.progress.read_progress`)."""
    glob = m[0].lstrip().lower().startswith("global")
    return Count(step=_int(m["i"]), total=_int(m.groupdict().get("n")), loop=not glob)


def clu(m: re.Match[str]) -> Count:
    """CLU's LoggingWriter: the step; an evaluation's collection counts no step of its own."""
    if m["c"] and m["c"].lower() in ("eval", "evaluation", "valid", "validation", "val", "test"):
        return Count(evaluation=True)
    return Count(step=int(m["i"]))


def after_index(m: re.Match[str]) -> Count:
    """A 0-based index of the iteration just done, of ``n``: ``i + 1`` are done."""
    return Count(step=int(m["i"]) + 1, total=int(m["n"]))


def eval_count(m: re.Match[str]) -> Count:
    return Count(evaluation=True)


def epochs_batches_and_step(m: re.Match[str]) -> Count:
    """WenmuZhou's OCR trainers (PSENet.pytorch, PAN.pytorch, DBNet.pytorch): ``[e/E], [i/n],
    step: s`` (or ``global_step: s``), the epoch of ``E``, the batch of the epoch's ``n`` and
    the run's step, printed. The run's length is ``E`` epochs of ``n`` batches only where the
    step is where the epoch and batch place it (0-based, PSENet's ``[9/100], [0/11], step:
    99``; or 1-based, DBNet's ``[1/200], [1/1], global_step: 1``): a run resumed from another
    run's checkpoint counts on from that run's steps (DBNet's ``[38/200], [1/604],
    global_step: 13099``), and its length in steps is unknown."""
    e, epochs, i, n, step = int(m["e"]), int(m["E"]), int(m["i"]), int(m["n"]), int(m["s"])
    placed = step in (e * n + i, e * n + i + 1, (e - 1) * n + i)
    total = epochs * n if placed and epochs > 0 and n > 0 else None
    return Count(step=step, total=total, max_epochs=epochs or None)
