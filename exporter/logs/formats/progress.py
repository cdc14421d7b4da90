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

One reader, not a regular expression per tool: :data:`.counters.COUNTERS` find the loop's counter
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

from ..lines import Format, LineReport, native
from .counters import find_counter
from .counts import Count
from .pairs import (
    PRINTF_NUMBER,
    Pair,
    find_pairs,
    sole_eval_loss,
    sole_loss,
    to_fields,
    validation_twins,
)
from .vocabulary import TEST_LOSS, evaluated

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
    "batch i:",  # AlphaZero_Gobang (formats.counters)
    "num_updates",
    "| loss",
    "Train:",
    "Test:",
    "Up.",
    "Batch ",
    "Batch:",  # PaddlePaddle Fluid's "Pass:0, Batch:100, Cost:0.40671, ..."
    ": train ",  # nanoGPT's evaluation with "loss" left out (_SPLIT_MEANS)
    # A line with a loss and no counter this reader knows ("| Progress [##  ][11.64%] | ...
    # Loss 9.7263", Megatron's "... at the end of training for val data | lm loss value: ..."):
    # the quick scan already looks for these for the lone loss's reader.
    "oss",
    "OSS",
)


# jiwoon-ahn's weakly supervised segmentation trainers (IRNet's train_cam.py and
# train_irn.py, and their many forks) print "step:%5d/%5d" % (optimizer.global_step - 1,
# max_step) beside "imps:" and "etc:": the index of the step just taken, one short of the
# steps done. So does LLMs-from-scratch's train_model_simple (its global_step starts at -1 and
# grows after each optimizer step): "Ep 1 (Step 000010): Train loss ..." is 11 steps done.
_INDEX_OF_STEP_TAKEN = re.compile(
    r"^\s*(?:step:\s*\d+/\s*\d+ .*\bimps:[\d.]+ .*\betc:"
    r"|Ep \d{1,9} \(Step \d{6}\): Train loss )"
)
# NeMo RL's PPO prints "▶ Step {step + 1}/{ppo_epochs}..." for each pass over one rollout
# (nemo_rl/algorithms/ppo.py), under its "===== Step 5/100 =====" banner: no step of the run.
_PPO_EPOCH = re.compile(r"^\s*▶ Step \d{1,6}/\d{1,6}\.\.\.\s*$")
# A bare leading count before a "|" (modded-nanoGPT style "420 | loss 4.06 | lr ..."): only
# with a loss on the line, since many lines start with a number.
_BARE = re.compile(r"^\s*(?P<i>\d{1,12})\s+\|\s+(?=[A-Za-z])")
# "Epoch 2/8" beside a step counter: the number of epochs.
_EPOCHS = re.compile(r"(?i)(?<![\w/])epoch\s*[:=#]?\s*\d{1,9}\s*(?:/|of)\s*(?P<n>\d{1,9})(?![\d/])")
# "epoch 3", "Epoch 3:": a counter too (never read as a pair: 0- or 1-based is the tool's).
# (LLMs-from-scratch's loops print "Ep 1 (Step 000000): Train loss ...": the 1-based epoch.)
_EP = r"(?:epoch\s*[:=#]?\s*|ep\s+(?=\d{1,9}\s+\())"
_EPOCH_WORD = re.compile(rf"(?i)(?<![\w/]){_EP}\d{{1,9}}(?![\d/.])")
# "Epoch = 0" beside a loop's "iter = 1150/2714" (DrQA): the count may be the epoch's.
_EPOCH_NUMBER = re.compile(rf"(?i)(?<![\w/]){_EP}(?P<e>\d{{1,9}})(?![\d/.])")
# An evaluation line: what it prints before its first value says so (MaxText's "eval metrics
# after step: 99, loss=...", torchtitan's "validate step: 100  loss: ...", tf.estimator's
# "Saving dict for global step 93: ..., loss = 1.04", which it writes only after evaluating).
_EVAL_PHRASE = re.compile(
    r"(?i)(?:valid on|saving dict for global step|\bvalidat(?:e|ion|ing)(?:\b|(?-i:(?=[A-Z])))"
    r"|\bevaluat(?:ion|ing)(?:\b|(?-i:(?=[A-Z])))|\btest(?:ing)?\s*[:|]|\btest set\b|"
    r"[\[(](?:val|valid|eval|test)[\])]|\b(?:eval|val|test) epoch|\beval\b)"
)
_FRACTION = re.compile(r"\d\s*/\s*\d")
# An evaluation's count at its last batch, "[  78/78]", and a loss with its running mean.
_LAST_BATCH = re.compile(r"\[\s*(?P<i>\d{1,12})\s*/\s*(?P<n>\d{1,12})\]")
_LOSS_MEAN = re.compile(
    rf"(?i)(?<![\w/])loss:\s*{PRINTF_NUMBER}\s+\(\s*(?P<avg>{PRINTF_NUMBER})\s*\)"
)
# A logger's source location before the message: its file or module and line number
# ("[trainer/validate.py:88]", ezpz's "[I][ezpz/examples/test:325:train_step]", loguru's
# "finetune.trainer:train:469"). The file says nothing of the line (a module "test" is no test
# phase); the function that logged it may ("validate"), so it is kept.
_SOURCE_LOCATION = re.compile(
    r"[\w./\\-]{1,200}(?:\.py:\d{1,6}(?::(?P<f>\w{1,64}))?|:\d{1,6}:(?P<g>[A-Za-z_]\w{0,63})"
    r"|:(?P<h>[A-Za-z_]\w{0,63}):\d{1,6})\b"
)


def _said_evaluation(before: str, head: str) -> bool:
    """Whether what the line prints before its first value says it is an evaluation, a
    logger's source locations before the counter set aside: each is replaced by the function
    it names, if any (which can only take a match away, so it is done only after one)."""
    if _EVAL_PHRASE.search(before + head) is None:
        return False
    kept = _SOURCE_LOCATION.sub(lambda m: f" {m['f'] or m['g'] or m['h'] or ''} ", before)
    return _EVAL_PHRASE.search(kept + head) is not None


# Megatron's evaluation of the test set, after the validation set's at the end of training
# (training.py: "validation loss at iteration 10 on test set | lm loss value: ...", before
# 2023 "... at the end of training for test data"): another evaluation than the one the
# run watches, so its loss is the test loss, never the eval loss.
_MEGATRON_TEST_SET = re.compile(r"validation loss at .{0,80}\b(?:on test set|for test data)\b")
# A script's test of the set held out, its own section of a line of sections ("TEST |
# loss=0.3107 acc=0.8748" after the last epoch's "Epoch 10 | train_loss=... | val_loss=..."):
# the test loss too (timm's "Test: [ 78/78]" is its validation, and says so with a colon).
_TEST_SECTION = re.compile(r"(?i)\btest(?:ing)?\s*\|")
# A line whose first value is a validation's by its name ("[Epoch: 05] Valid acc: 0.2988 |
# loss: 2.0462" beside "[Epoch: 05] Train acc: ... | loss: ..."): its bare loss is that set's.
_EVAL_FIRST_KEY = re.compile(r"(?i)(?:val|valid|validation|eval)\s+(?!loss)\w")
# MACE's report after each evaluation: "Epoch 1: head: default, loss=  0.0001,
# RMSE_E_per_atom=    33.7 meV, RMSE_F= ..." (mace/tools/train.py log_errors), the
# validation set's loss beside its errors per atom and on forces: an evaluation's line.
_ERROR_REPORT = re.compile(r"(?:RMSE|MAE)_(?:E_per_atom|F|E|stress|virials)(?:_per_atom)?")
# What an evaluation says before the run's step it is for: "for step: 1500", "after step: 99",
# "at step 200", "at iteration 1000".
_FOR_STEP = re.compile(
    r"(?i)\b(?:for|after|at)\s+(?:epoch\s+\d{1,9},\s+)?(?:global[ _])?(?:step|iter(?:ation)?)\b"
)


# Every counter and every step key has one of these: a line without is no progress line,
# found with one scan instead of one per counter (most lines a hint lets through are not).
_MAYBE = re.compile(
    r"(?i)step|iter|epoch|\bep\s*:\s*\d|batch=|batch(?::? ?| i:)\d|batch_i(?:nde?x|dx)\b|train:|"
    r"\btest\b|num_updates|"
    r"^\s*\d+\s+\||\bUp\.|"
    r"loss value:|Progress \[|\[\d{1,15}\] |\[Train\]\(|Instance: \d|"
    r"^\s*\[\d{1,9},\s*\d{1,12}\] loss:|\bEP \d{1,9} \(|\[(?:val|valid|eval)\] |"
    r"^\s*\[\d{1,12}/\d{1,12}\] |^\s*Train \d{1,9}(?:/\d{1,9})?, loss: |^\s*episode\s*[:=#]?\s*\d"
)


# A best value's step after it ("Finished run 1. Best val accuracy: 0.6734, corresponding test
# accuracy: 0.6691 (step 16).", a sweep's summary of one of its runs): the step the best was
# at, not the run's now.
_BEST = re.compile(r"(?i)\bbest\b")
_GLOBAL_STEP = re.compile(r"(?i)global[_ ]step\s*[=:]")
# The batch within the epoch, printed between the epoch and the run's step.
_BATCH_IN_EPOCH = re.compile(r"(?i)(?<![\w/])batch\s*[:=#]?\s*(?P<b>\d{1,12})(?![\d/])")
_STEP_WORD = re.compile(r"(?i)\s*steps?\b")
# "Average loss at step  2000 :  118.86" (TensorFlow's word2vec tutorial and its copies),
# "Minibatch loss at step 500: 1.23": a value named before the step it is at, read as
# "step 2000 | Average loss: 118.86".
_AT_STEP = re.compile(
    rf"(?i)^\s*(?P<key>[a-z][a-z ]{{0,40}}?)\s+at\s+(?P<unit>step|iteration|iter)\s+"
    rf"(?P<i>\d{{1,15}})\s*[:=]\s*(?P<v>{PRINTF_NUMBER})\s*$"
)
# Deeplearning4j's ScoreIterationListener: "Score at iteration 78700 is 0.98", the
# network's score (its loss function's value) at its iteration count.
_DL4J_SCORE = re.compile(
    rf"(?:^|\s-\s)Score at iteration (?P<i>\d{{1,15}}) is (?P<v>{PRINTF_NUMBER})\s*$"
)
_ITERATION_KEYS = frozenset({"iter", "iters", "iteration"})
# A stage's end with the steps it took: LingJie's sft.py ends with print("sft done, steps:",
# step) after its last logged step (780 of 782). The count is the run's step; an evaluation's
# or a test's stage counts its own batches, so those are not read.
_DONE_STEPS = re.compile(
    r"^\s*(?P<what>[A-Za-z][\w-]{0,30})\s+done,?\s+steps:\s*(?P<i>\d{1,15})\s*$"
)
_NOT_TRAINING = re.compile(r"(?i)eval|val|test|predict|infer|warm")
# nanoGPT's evaluation line with the word "loss" left out: tiny-shrek's train.py prints "  eval
# {it}: train {losses['train']} | val {losses['val']} | {bpc} bpc", nanogpt-seis' "[eval] iter
# {it}: train {...} val {...} lr ...", estimate_loss's mean loss of each split at iteration
# it; read as nanoGPT's "step {it}: train loss ..., val loss ...".
_SPLIT_MEANS = re.compile(
    rf"^\s*(?:\[eval\] )?(?:eval|step|iter) (?P<i>\d{{1,15}}): train (?P<t>{PRINTF_NUMBER})"
    rf"\s?[|,]? val (?P<v>{PRINTF_NUMBER})(?=\s|[|,]|$)(?!.*(?:acc|%))"
)


def _run_iteration(count: Count, counter: str, pairs: list[Pair], msg: str) -> int | None:
    """The run's iteration, where the loop's counter is a bare ``step`` counting the epoch's
    batches beside it (acm5656's ssd_pytorch: ``epoch : 231  iter : 120160  step : 502``): one
    ``iter`` above the step, and the step no more than one of the epochs before it holds
    (502 of 120160 over 230 epochs). LitGPT's ``Epoch 34 | iter 3051000 step 610200`` counts
    micro-batches as iterations and optimizer steps as steps (610200 is no epoch's), and in a
    first epoch the two cannot be told apart: None, the step stands."""
    if count.step is None or not count.loop or not _STEP_WORD.match(counter):
        return None
    epoch = _EPOCH_NUMBER.search(msg)
    its = [p.value for p in pairs if p.key.lower() in _ITERATION_KEYS]
    if epoch is None or int(epoch["e"]) < 2 or len(its) != 1 or its[0] != int(its[0]):
        return None
    run = int(its[0])
    if run > count.step and count.step <= (run - count.step) / (int(epoch["e"]) - 1):
        return run
    return None


def _epochs_done(head: str, epochs: re.Match[str], doc: dict[str, object]) -> float | None:
    """The epochs done, where a line prints its 1-based epoch under way, its batch in that
    epoch before the run's step (``Epoch 17/100, Batch 110, Step 2750: Loss = ...``, a
    loop's own print): the epoch's size is (step - batch) / (epoch - 1) when that is whole
    and holds the batch (16 epochs of 165 before batch 110: 16.67 epochs done), or None
    (the first epoch, or a step that starts over with each epoch)."""
    step = doc.get("step")
    batch = _BATCH_IN_EPOCH.search(head)
    number = re.search(r"\d+", epochs.group(0))  # "Epoch 17/100": 17
    if batch is None or number is None or not isinstance(step, int):
        return None
    epoch, index = int(number.group(0)), int(batch["b"])
    if epoch < 2 or index < 1 or (step - index) % (epoch - 1):
        return None
    size = (step - index) // (epoch - 1)
    return epoch - 1 + index / size if size >= index else None


def read_progress(msg: str, now: float) -> LineReport | None:
    """The report a progress line makes, or None for any other line."""
    if " done" in msg and (done := _DONE_STEPS.match(msg)) is not None:
        if _NOT_TRAINING.search(done["what"]):
            return None
        return native({"step": int(done["i"])}, now, "progress")
    if ": train " in msg and (split_means := _SPLIT_MEANS.match(msg)) is not None:
        msg = f"step {split_means['i']}: train loss {split_means['t']}, val loss {split_means['v']}"
    if len(msg) > MAX_LINE or not any(h in msg for h in HINTS) or not _MAYBE.search(msg):
        return None
    if "Dropping entry" in msg:
        return None  # wandb refused a logged step ("User provided step: N is less than ...")
    if _PPO_EPOCH.match(msg):
        return None
    if (at_step := _AT_STEP.match(msg)) is not None:
        msg = f"{at_step['unit']} {at_step['i']} | {at_step['key']}: {at_step['v']}"
    elif "Score at iteration " in msg and (score := _DL4J_SCORE.search(msg)) is not None:
        msg = f"iteration {score['i']} | loss: {score['v']}"
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
    after_counter = find_pairs(rest)
    pairs = validation_twins(before + after_counter)
    if (run := _run_iteration(count, msg[start:end], pairs, msg)) is not None:
        count = count._replace(step=run, total=None)
    if before and count.step is not None and not after_counter and _BEST.search(msg[:start]):
        return None  # the step a best value was at, after it: no step of the run's now
    # What the line prints before its first value: the counter, and words saying what it is.
    after = pairs[len(before) :]
    head = msg[start:end] + (rest[: rest.find(after[0].key)] if after else rest)
    evaluation = (
        count.evaluation
        or _said_evaluation(msg[:start], head)
        or any(_ERROR_REPORT.fullmatch(p.key) for p in pairs)
        or (bool(after) and _EVAL_FIRST_KEY.match(after[0].key) is not None)
    )
    if evaluation and _FRACTION.search(head):
        last = _LAST_BATCH.search(head)
        mean = _LOSS_MEAN.search(rest) if last and last["i"] == last["n"] else None
        if mean is None:
            return None  # an evaluation still counting its batches: its result comes later
        # timm's validate() at its last batch ("Test: [  78/78] ... Loss:  0.9 (0.95)",
        # batch_idx of last_idx): the running mean over the whole set is its result.
        return native({"eval_loss": float(mean["avg"])}, now, "progress")
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
        # Its counter is the evaluation's; the global step keys still are the run's, and so
        # is a step the evaluation says it is for (Ludwig's "Running evaluation for step:
        # 1500, epoch: 23", MaxText's "eval metrics after step: 99").
        run_step = count.step if _FOR_STEP.search(msg[max(0, start - 30) : start + 5]) else None
        count = Count()
        values = {k: v for k, v in values.items() if k in ("eval_loss", "step")}
        tested_set = _MEGATRON_TEST_SET.search(msg) or _TEST_SECTION.search(msg[:start] + head)
        if "eval_loss" in values and tested_set:
            tested = {TEST_LOSS: values.pop("eval_loss")}
            tested.update({f"test_{k}": v for k, v in fields.metrics.items()})
            return native({"metrics": tested}, now, "progress")
        if run_step is not None and "step" not in values:
            values["step"] = run_step
        if "eval_loss" not in values and run_step is None:
            return None
    elif bare is not None and "loss" not in values:
        return None
    step = values.pop("step", None)
    doc: dict[str, object] = {}
    epoch_of = None
    printed_size = None
    # A counter and a step key on one line ("STEP: 49/377 -- GLOBAL_STEP: 370050"): two
    # counts are no sentence's "saved at step 100", so the line stands without a value.
    counted_twice = step is not None and count.step is not None
    if (
        count.step is not None
        and _GLOBAL_STEP.match(msg, start)
        and _EPOCH_NUMBER.search(msg[:start])
    ):
        # A global step after the epoch it is in ("Epoch: 677, global_step=69222400", the
        # CleanRL-style loops of ManiSkill's PPO at each iteration): two counts as well.
        counted_twice = True
    number = _EPOCH_NUMBER.search(msg[:start]) if count.loop else None
    if number is not None and not _EPOCHS.search(msg):
        # A loop's count after the epoch's number (not the number of epochs) may count
        # within it: its total is the epoch's or the run's, unknown, and the accumulator's
        # epoch counter tells whether the count starts over in each epoch (DrQA's "Epoch = 1
        # | iter = 25/2714"). A count that leads its line, the epoch after it, is the run's
        # (OLMo's "[step=1/739328,epoch=0]").
        printed_size = count.total
        count = count._replace(total=None)
        epoch_of = (int(number["e"]), 0)
    if step is not None and step >= 0 and step == int(step):
        doc["step"] = int(step)
        if count.step is not None and int(step) != count.step:
            # A step key the counter does not agree with: the counter counts something else,
            # the epoch's batches (Coqui's "STEP: 49/377 -- GLOBAL_STEP: 370050"), and its
            # total is no more the run's than its count (its epoch, where it places one, is
            # still the epoch's: fairseq's "epoch 001: 440 / 614 ... num_updates=441").
            count = count._replace(total=None)
    elif count.step is not None:
        doc["step"] = count.step + (1 if _INDEX_OF_STEP_TAKEN.match(msg) else 0)
    said = {k: v for k, v in values.items() if k != "max_steps" or v == int(v)}
    total = said.pop("max_steps", None)
    # A total of 0 ("step 0 / 0") is no run's length: none.
    if count.total is not None:
        if count.total > 0:
            doc["max_steps"] = count.total
    elif total is not None and total > 0:
        doc["max_steps"] = int(total)
    if count.epoch is not None and "epoch" not in said:
        doc["epoch"] = count.epoch
    epochs = _EPOCHS.search(msg)
    if count.max_epochs is not None:
        doc["max_epochs"] = count.max_epochs
    elif epochs is not None and not evaluation:
        doc["max_epochs"] = int(epochs["n"])
        if "epoch" not in doc and (passed := _epochs_done(msg[:start], epochs, doc)) is not None:
            doc["epoch"] = passed
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
        if not (named or fields.metrics or "max_steps" in doc or counted_twice or count.header):
            return None
        if count.summary and not named and step is None:
            # "Epoch 5: val_loss improved from 0.52 to 0.48" is no summary; a step key beside
            # the epoch makes it a step's line (Sockeye's "Updates=6000 Epoch=1 ...").
            return None
    if fields.metrics:
        # An evaluation's accuracy is not the train step's of the same name (PaddlePaddle's
        # "Test:2, Cost:..., Accuracy:..." after its "Pass:2, Batch:400, ..., Accuracy:...").
        doc["metrics"] = (
            {evaluated(k): v for k, v in fields.metrics.items()} if evaluation else fields.metrics
        )
    found_report = native(doc, now, "progress")
    if found_report is not None and fields.tested and "eval_loss" in doc:
        found_report = found_report._replace(test_set=True)  # exporter.logs.evaluations
    if found_report is not None and epoch_of is not None:
        found_report = found_report._replace(epoch_of=epoch_of, printed_size=printed_size)
    if found_report is not None and count.within is not None and "step" not in doc:
        found_report = found_report._replace(within=count.within)
    if found_report is not None and count.moved_on and "step" not in doc:
        found_report = found_report._replace(moved_on=True)
    if found_report is not None and count.done is not None and "step" not in doc:
        found_report = found_report._replace(epoch_done=count.done)
    return found_report


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
