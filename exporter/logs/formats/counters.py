"""The loop counters the general reader of progress lines knows (:mod:`.progress`), most
specific first, each with what it says: the step (global, where the counter counts within
an epoch whose size it prints), the run's total, the epoch and the number of epochs.

One table, so that a new tool's counter is one entry: its regular expression and the
function that reads a match (:mod:`.counts`: 0- or 1-based as the tool prints it, checked in
its source).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .counts import (
    Count,
    after_index,
    batch_of_one_based_epoch,
    batch_of_zero_based_epoch,
    batch_then_epoch,
    clu,
    cntk,
    composer_epoch,
    dcgan,
    epoch_batches,
    epoch_of_n,
    epoch_summary,
    epochs_batches_and_step,
    espnet,
    eval_count,
    fairseq,
    kaldi,
    loop_count,
    ltr,
    lua_rnn,
    metric_logger,
    mm,
    mm_iter,
    moved_on,
    nemo,
    of_epoch,
    one_based_epoch,
    onmt_epoch,
    pcdet,
    split_step,
    step_header,
    step_of,
    step_unknown,
    swin,
    timm,
    train_step_in_epoch,
    tslib_epoch,
    wenet,
    zero_based_epoch,
    zero_based_epoch_of,
)

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
        step_of,
    ),
    # CLU's LoggingWriter (the Flax examples, T5X, Scenic): "[1000] steps_per_second=1.76,
    # train_loss=6.52", "[0] collection=train a=3, b=0.15" (clu/metric_writers/
    # logging_writer.py and its test): the global step, then name=value pairs. It leads the
    # message, or follows a logger's prefix ("...logging_writer.py:53] [1000] ...",
    # "INFO:absl:[2] ..."): after a
    # word it is another count's ("Checkpoint [88] Updates=440000", Sockeye's).
    (
        re.compile(
            r"(?:^\s*|(?<=\] )|(?<=:) ?)\[(?P<i>\d{1,15})\] (?:collection=(?P<c>[\w-]{1,64}) )?"
            r"(?=[A-Za-z_][\w/.-]{0,128}=)"
        ),
        clu,
    ),
    (
        re.compile(
            r"\bIter: (?P<i>\d{1,12})/(?P<n>\d{1,12})\s+(?:Jobs: \d{1,6}\s+)?"
            r"Epoch: (?P<e>\d{1,9}(?:\.\d+)?)/(?P<E>\d{1,9}(?:\.\d+)?) "
            r"\(\d{1,3}(?:\.\d+)?% complete\)"
        ),
        kaldi,
    ),
    # Composer: "[batch=366/48000]:" heads a block of "Train <metric>: <value>" lines; with a
    # duration in epochs "[epoch=2][batch=3/5]:", the 1-based epoch and its batches done
    # (composer/loggers/console_logger.py), or "[epoch=2][batch=3]:" where the epoch's length
    # is unknown.
    (
        re.compile(r"\[epoch=(?P<e>[1-9]\d{0,8})\]\[batch=(?P<i>\d{1,15})/(?P<n>\d{1,15})\]"),
        composer_epoch,
    ),
    (re.compile(r"\[epoch=\d{1,9}\]\[batch=\d{1,15}\]"), step_unknown),
    # A BERT pretraining benchmark's loop: "Epoch [0], Step [500], next_loss[0.98], ..., loss:
    # 10.93": the 0-based epoch and a step it never sizes; only epoch 0's is surely the run's.
    (re.compile(r"\bEpoch \[(?P<e>\d{1,9})\], Step \[(?P<i>\d{1,15})\],"), train_step_in_epoch),
    # A script's own "[Step 0] Training Debug Info:" heads a block of its step's values, one
    # a line ("  Loss: 0.661919"): the bracket leads the line, a title and the colon end it.
    (
        re.compile(
            r"(?i)^\s*\[step (?P<i>\d{1,15})(?:/(?P<n>\d{1,15}))?\](?: [A-Za-z][\w ]{0,60})?:$"
        ),
        step_header,
    ),
    (re.compile(r"\[batch=(?P<i>\d{1,15})/(?P<n>\d{1,15})\]"), step_of),
    (
        re.compile(
            r"\bEpoch(?:\((?P<mode>\w+)\))?\s*\[\s*(?P<e>\d{1,9})(?:/(?P<E>\d{1,9}))?\]\s*\[\s*"
            r"(?P<i>\d{1,12})\s*/\s*(?P<n>\d{1,12})\]"
        ),
        mm,
    ),
    (
        re.compile(r"\bIter\((?P<mode>\w+)\)\s*\[\s*(?P<i>\d{1,15})\s*/\s*(?P<n>\d{1,15})\]"),
        mm_iter,
    ),
    # reid-strong-baseline's ignite trainer and its many re-ID forks: "Epoch[50]
    # Iteration[550/593] Loss: 0.371" (ignite's 1-based epoch, the iteration within it from 1).
    (
        re.compile(r"\bEpoch\[(?P<e>\d{1,9})\] Iteration\[(?P<i>\d{1,12})/(?P<n>\d{1,12})\]"),
        one_based_epoch,
    ),
    # An improved-DDPM trainer: "[Epoch 302/500][   0:391]  Loss: ..." (the 1-based epoch of
    # 500, the batch's index of 391 as printed).
    (
        re.compile(
            r"\[Epoch (?P<e>\d{1,9})/(?P<E>\d{1,9})\]\[\s*(?P<i>\d{1,12}):(?P<n>\d{1,12})\]"
        ),
        epoch_of_n,
    ),
    # DCGAN-tensorflow's "Epoch: [ 1/25] [ 119/ 273] time: 299.8392, d_loss: ..., g_loss: ..."
    # ("[24] [1092/1093]" before its PR #272; a copy may print its counter first: "[     393
    # Epoch:[ 1/25] ..."): before MetricLogger's shape, as it prints once the batch is done.
    (
        re.compile(
            r"\bEpoch: ?\[\s*(?P<e>\d{1,9})(?:/\s*(?P<E>\d{1,9}))?\] \[\s*(?P<i>\d{1,12})/\s*"
            r"(?P<n>\d{1,12})\](?= time: [\d.]+, [dg]_loss: )"
        ),
        dcgan,
    ),
    # AlphaZero_Gobang and its forks (train.py): "batch i:3000, episode_len:12" with i + 1 after
    # each self-play batch, then the policy update's "kl:..., loss:..." on the next line.
    (re.compile(r"\bbatch i:(?P<i>\d{1,12})(?=, episode_len:\d)"), step_of),
    # zjy-ucas' ChineseNER and its many forks (main.py): "iteration:7 step:8/652, NER loss:
    # 1.525563", the global step split as step // steps_per_epoch + 1 and step % steps_per_epoch.
    (
        re.compile(
            r"\biteration:(?P<e>\d{1,9}) step:(?P<i>\d{1,12})/(?P<n>\d{1,12})(?=, NER loss:)"
        ),
        split_step,
    ),
    # LAVIS' iteration-based runner: "Train: data epoch: [0]; inner epoch [3]  [24/25]", the
    # MetricLogger of each 0-based inner epoch of iters_per_inner_epoch iterations.
    (
        re.compile(
            r"\binner epoch \[(?P<e>\d{1,9})(?:/(?P<E>\d{1,9}))?\]\s+\[\s*(?P<i>\d{1,12})\s*/\s*"
            r"(?P<n>\d{1,12})\]"
        ),
        metric_logger,
    ),
    (
        re.compile(
            r"\bEpoch: \[(?P<e>\d{1,9})(?:/(?P<E>\d{1,9}))?\]\s*\[\s*(?P<i>\d{1,12})\s*/\s*"
            r"(?P<n>\d{1,12})\]"
        ),
        metric_logger,
    ),
    (re.compile(r"^\s*Test:\s*(?:\[|Total)"), eval_count),  # MetricLogger's evaluation
    # WenmuZhou's OCR trainers: "[9/100], [0/11], step: 99, ..." (PSENet.pytorch; DBNet's
    # "global_step:"), the epoch, the batch and the run's step.
    (
        re.compile(
            r"\[(?P<e>\d{1,9})/(?P<E>\d{1,9})\], \[(?P<i>\d{1,12})/(?P<n>\d{1,12})\], "
            r"(?:global_)?step: (?P<s>\d{1,15})\b"
        ),
        epochs_batches_and_step,
    ),
    (
        re.compile(
            r"^\s*\[(?P<mode>train|val|valid|test): (?P<e>\d{1,9}), (?P<i>\d{1,12}) / "
            r"(?P<n>\d{1,12})\]"
        ),
        ltr,
    ),
    (
        re.compile(
            r"\bEpoch\[\s*(?P<e>\d{1,9}) of (?P<E>\d{1,9})\]-Minibatch\[\s*(?:\d{1,15}\s*-\s*)?"
            r"(?P<i>\d{1,15})\s*[,\]]"
        ),
        cntk,
    ),
    # char-rnn: "66/9500 (epoch 0.347), train_loss = 3.27353297, ..." (its TensorFlow port:
    # "290/446 (epoch 0), train_loss = 2.098, time/batch = 0.163"); torch-rnn:
    # "Epoch 1.00 / 50, i = 1 / 11450, loss = 4.213" (i of num_iterations, train.lua; its
    # epoch is 1-based, i / num_train + 1, and not read).
    (
        re.compile(r"^\s*(?P<i>\d{1,15})/(?P<n>\d{1,15}) \(epoch (?P<epoch>\d{1,9}(?:\.\d+)?)\),"),
        lua_rnn,
    ),
    (
        re.compile(r"\bEpoch \d{1,9}\.\d+ / \d{1,9}, i = (?P<i>\d{1,15}) / (?P<n>\d{1,15}),"),
        step_of,
    ),
    (
        re.compile(r"\b(?P<e>\d{1,9})epoch:(?P<mode>[a-z]+):(?P<a>\d{1,15})-(?P<b>\d{1,15})batch:"),
        espnet,
    ),
    # OpenCLIP's later trainers (TinyCLIP): "Train Epoch: 14 [41/14656] [ 41984/15007744 (0%)]",
    # the 0-based epoch and its batches done (batch_count = i + 1), then its samples.
    (
        re.compile(r"\bTrain Epoch: (?P<e>\d{1,9}) \[(?P<i>\d{1,15})/(?P<n>\d{1,15})\]"),
        zero_based_epoch,
    ),
    (re.compile(r"\bTrain Epoch: \d{1,9} \[\s*\d{1,15}/\d{1,15} \(\d{1,3}%\)\]"), step_unknown),
    # Fast-SCNN's train.py (Tramac) and the trainers copied from it: "Epoch: [199/200] Iter
    # [1487/1487] || Time: 104436.8641 sec || lr: ... || Loss: 1.1492", the epoch as
    # range(start_epoch, epochs) gives it (0-based, of E) and the batch i + 1 of the epoch's.
    (
        re.compile(
            r"\bEpoch: \[\s*(?P<e>\d{1,9})/(?P<E>\d{1,9})\] Iter \[\s*(?P<i>\d{1,15})/"
            r"(?P<n>\d{1,15})\] \|\| Time: "
        ),
        zero_based_epoch_of,
    ),
    # EquiBind's trainer and its kin (3DInfomax, EquiReact): "[Epoch 12; Iter    85/   85]",
    # the 1-based epoch (range(start_epoch, num_epochs + 1), from 1) and its batch (i + 1).
    (
        re.compile(r"\[Epoch (?P<e>[1-9]\d{0,8}); Iter\s+(?P<i>\d{1,12})/\s*(?P<n>\d{1,12})\]"),
        one_based_epoch,
    ),
    # Trimodal-Context's gesture trainers and their copies: "EP 3 (156) |  56m 14s, 584
    # samples/s | loss: ...", the 0-based epoch and the 1-based batch within it.
    (
        re.compile(r"(?<![\w-])EP (?P<e>\d{1,9}) \(\s*(?P<i>\d{1,12})\) \| "),
        batch_of_zero_based_epoch,
    ),
    (
        re.compile(r"\bepoch (?P<e>[1-9]\d{0,8}) - iter (?P<i>\d{1,15})/(?P<n>\d{1,15}) - "),
        one_based_epoch,
    ),
    # OpenNMT's Lua trainer (train.lua) and its forks (harvardnlp's data2text): "Epoch 2 ;
    # Iteration 4000/77776 ; ..." or "Epoch 3 ; Iter 200/213 ; ...", the 1-based epoch and
    # its iterations done, of the epoch's.
    (
        re.compile(
            r"\bEpoch (?P<e>[1-9]\d{0,8}) ; Iter(?:ation)? (?P<i>\d{1,15})/(?P<n>\d{1,15}) ;"
        ),
        one_based_epoch,
    ),
    # NCRF++: "Instance: 12500; Time: 5.25s; loss: 367.3678; acc: 141830/170170=0.8335", the
    # sentences of the epoch so far (main.py): no step, its values read.
    (re.compile(r"^\s*Instance: \d{1,15}; Time: "), step_unknown),
    # WeNet and WeKWS: "TRAIN Batch 4/203800", the 0-based epoch and the batch's index within
    # it (its size not printed); "CV Batch 4/0" a cross-validation still under way.
    (
        re.compile(r"\b(?P<mode>TRAIN|CV) Batch (?P<e>\d{1,9})/(?P<i>\d{1,15})\b"),
        wenet,
    ),
    # A text bar of the share done, no count: "| Progress [##   ][11.64%] | LR 0.000377 | Loss
    # 9.7263 (  6.9621) |" (MonoCon's engine): its values read, no step.
    (re.compile(r"\bProgress\s?\[[#=>.\- ]{0,200}\]\s?\[\s*\d{1,3}(?:\.\d+)?%\]"), step_unknown),
    # AllenNLP's "Batch 1701/17168: accuracy: ..., loss: 1.09 ||": the batches done in an
    # epoch it names on a line of its own, so the run's step is unknown here.
    (re.compile(r"\bBatch \d{1,15}/\d{1,15}: "), step_unknown),
    # AWS's FSDP example (awsome-distributed-training, src/train.py): "Batch 25 Loss: 7.60201,
    # Speed: 47.38 samples/sec, lr: 0.000100", the loop's batch index (its epochs print no
    # header; a stream of C4 is one epoch that does not end): the run's, as printed.
    (re.compile(r"(?<![\w/])Batch (?P<i>\d{1,15}) (?=Loss: )"), step_of),
    # A line led by its batch of the epoch's, "  batch 50/1646 | loss=5.4196 ppl=225.79 ..."
    # (HelixLM's trainer, under an "Epoch 3/3 | LR: ..." header): a count within an epoch
    # that is 0- or 1-based as its header prints it, which the header alone does not say:
    # its values read, no step.
    (re.compile(r"^\s*batch \d{1,15}/\d{1,15} \| "), step_unknown),
    (
        re.compile(
            r"\bTrain: \[(?P<e>\d{1,9})/(?P<E>\d{1,9})\]\[\s*(?P<i>\d{1,12})/(?P<n>\d{1,12})\]"
        ),
        swin,
    ),
    (
        re.compile(
            r"\bTrain:\s+(?P<e>\d{1,9})/(?P<E>\d{1,9}) \(\s*\d+%\)\s+\[\s*(?P<i>\d{1,12})/"
            r"(?P<n>\d{1,12}) \("
        ),
        pcdet,
    ),
    (
        re.compile(r"\bTrain: (?P<e>\d{1,9}) \[\s*(?P<i>\d{1,12})/(?P<n>\d{1,12}) \(\s*\d+%\)\]"),
        timm,
    ),
    (
        re.compile(r"\bepoch (?P<e>\d{1,9}):?\s+(?P<i>\d{1,12})\s*/\s*(?P<n>\d{1,12})(?![\d/])"),
        fairseq,
    ),
    (
        re.compile(
            r"^\s*\|\s*epoch\s+(?P<e>\d{1,9})\s+\|\s*(?P<i>\d{1,12})\s*/\s*(?P<n>\d{1,12})"
            r" batches\s*\|"
        ),
        one_based_epoch,
    ),
    (
        re.compile(
            r"\b(?P<stage>Training|Validation|Testing|Sanity checking Validation) epoch "
            r"(?P<e>\d{1,9}), iteration (?P<i>\d{1,15})/(?P<n>\d{1,15})"
        ),
        nemo,
    ),
    (
        re.compile(r"^\s*(?:Validation|Testing|Sanity checking)\b[^:]{0,40}: iteration \d"),
        eval_count,
    ),
    # A count in brackets leading the line, a named value after it: deep-text-recognition-
    # benchmark's "[1/300000] Train loss: 3.63, Valid loss: 3.57" ({iteration + 1} of
    # num_iter). A script's stages are counted so too, with words only ("[3/6] No new LoRA
    # adapter, training new layers directly..."): no value, no step.
    (
        re.compile(r"^\s*\[(?P<i>\d{1,12})/(?P<n>\d{1,12})\] (?=[A-Za-z][\w ]{0,40}[:=] ?[-+.\d])"),
        step_of,
    ),
    # rsl_rl (Isaac Lab, legged_gym): "Learning iteration 1/10", the 0-based index of the
    # iteration just learned (on_policy_runner.py: for it in range(start, tot_iter)).
    (re.compile(r"\bLearning iteration (?P<i>\d{1,15})/(?P<n>\d{1,15})\b"), after_index),
    (re.compile(r"\biteration\s+(?P<i>\d{1,15})\s*/\s*(?P<n>\d{1,15})\b"), step_of),  # Megatron
    (
        re.compile(r"^\s*iters: (?P<i>\d{1,12}), epoch: (?P<e>\d{1,9}) \| (?=loss: )"),
        batch_of_one_based_epoch,
    ),
    (
        re.compile(r"^\s*\[(?P<e>\d{1,9}),\s*(?P<i>\d{1,12})\] (?=loss: )"),
        batch_of_one_based_epoch,
    ),
    (re.compile(r"^\s*Epoch: (?P<e>\d{1,9}), Steps: (?P<n>\d{1,12}) \| "), tslib_epoch),
    (
        re.compile(r"\bEpoch (?P<e>\d{1,9}),? (?:iterations|batches) (?P<n>\d{1,12}),"),
        epoch_batches,
    ),
    # DGL-KE's "[proc 0][Train](15000/40000) average loss: 0.2598": the process's step of
    # its max_step (dglke/train_pytorch.py), one value a line.
    (re.compile(r"\[Train\]\((?P<i>\d{1,15})/(?P<n>\d{1,15})\)"), step_of),
    # PaddleSeg's "[TRAIN] epoch: 1, iter: 20/500": the run's iteration of its iters
    # (paddleseg/core/train.py; the epoch is derived from it, (iter - 1) // iters_per_epoch + 1).
    (re.compile(r"\[TRAIN\] epoch: \d{1,9}, iter: (?P<i>\d{1,15})/(?P<n>\d{1,15})\b"), step_of),
    (
        re.compile(
            r"(?i)(?<![\w/])epoch\s*[:=#]?\s*\[?\s*(?P<e>\d{1,9})\s*/\s*(?P<E>\d{1,9})\]?(?:[\s,;|]|\.(?=\s))+"
            r"(?:\w+\s+){0,2}?(?:step|iter(?:ation)?)s?\s*[:=#]?\s*\[?\s*(?P<i>\d{1,15})\s*(?:/|of)\s*"
            r"(?P<n>\d{1,15})\]?(?![\d/]|\.\d)"
        ),
        epoch_of_n,
    ),
    (
        re.compile(
            r"(?i)(?<![\w/])batch\s*[:=]?\s*(?P<i>\d{1,15})\s*/\s*(?P<n>\d{1,15})\s*[|,;]\s*"
            r"epoch\s*[:=]?\s*(?P<e>\d{1,9})\s*/\s*(?P<E>\d{1,9})(?![\d/])"
        ),
        batch_then_epoch,
    ),
    # MiniMind's trainers: "Epoch:[1/2](100/44160) loss:..." (the 1-based epoch of args.epochs,
    # the batch within the epoch's iters: enumerate(loader, start=start_step + 1) since 2025,
    # 0-based before; the last line of an epoch shows (n/n)).
    (
        re.compile(r"\bEpoch:\[(?P<e>\d{1,9})/(?P<E>\d{1,9})\]\((?P<i>\d{1,15})/(?P<n>\d{1,15})\)"),
        epoch_of_n,
    ),
    (re.compile(r"\bEpoch\s+(?P<e>\d{1,9}),\s+(?P<i>\d{1,12})/\s*(?P<n>\d{1,12});"), onmt_epoch),
    (
        re.compile(
            r"(?i)(?<![\w/.])(?P<i>\d{1,15})\s*/\s*(?P<n>\d{1,15}) of epoch (?P<e>\d{1,9})"
            r"(?:\s*/\s*(?P<E>\d{1,9}))?(?![\d/]|\.\d)"
        ),
        of_epoch,
    ),
    # icefall's "Epoch 0, batch 500, loss[...]": the batch's index within an epoch whose
    # size it does not print (train.py's enumerate(train_dl)); its epochs count from 0 in
    # older recipes and from 1 in newer ones, so only epoch 0 is surely the first.
    (re.compile(r"\bEpoch (?P<e>\d{1,9}), batch (?P<i>\d{1,15}),"), train_step_in_epoch),
    # PaddlePaddle's demos, v2 ("Pass 0, Batch 100, Cost 2.26, {...}") and Fluid ("Pass:0,
    # Batch:100, Cost:0.40671, ..."): its epoch is a pass, 0-based, and the batch's index
    # within it (the pass's size never printed).
    (
        re.compile(r"\bPass ?:? ?(?P<e>\d{1,9}), Batch ?:? ?(?P<i>\d{1,15}),"),
        train_step_in_epoch,
    ),
    # ... and after each pass its test ("Test:2, Cost:0.15264, Accuracy:0.95876", Fluid's
    # demos): the pass's evaluation.
    (re.compile(r"^\s*Test ?:? ?\d{1,9}, (?=Cost|Loss|Acc)"), eval_count),
    # "Epoch: 0 Sample 75/76" (DexiNed): a batch's index in the epoch; only 0 is surely first.
    (
        re.compile(
            r"(?i)(?<![\w/])epoch\s*[:=#]?\s*(?P<e>\d{1,9})[\s,;|]+(?:batch|sample)\s*[:=#]?\s*"
            r"(?P<i>\d{1,15})\s*/\s*(?P<n>\d{1,15})(?![\d/])"
        ),
        train_step_in_epoch,
    ),
    # MXNet's Speedometer: "Epoch[7] Batch [300]" (and "Batch [200-300]" since 1.3), the
    # 0-based epoch and the batch's index within it (module.fit's enumerate); GluonCV's
    # scripts under Horovod name the rank between: "Epoch [0] Rank [0] Batch [239]".
    (
        re.compile(
            r"\bEpoch ?\[(?P<e>\d{1,9})\]\s*(?:Rank ?\[\d{1,6}\]\s*)?Batch\s*"
            r"\[(?:\d{1,15}-)?(?P<i>\d{1,15})\]"
        ),
        train_step_in_epoch,
    ),
    # DGCNN's main.py (WangYueFt/dgcnn, and the point-cloud trainers copied from it): "Train
    # %d, loss: %.6f, train acc: ..." after each epoch (0-based), a per-epoch summary, and
    # "Test %d, loss: ..., test acc: ..." after the epoch's evaluation.
    (re.compile(r"^\s*Train (?P<e>\d{1,9})(?:/(?P<E>\d{1,9}))?, (?=loss: )"), epoch_summary),
    (re.compile(r"^\s*Test \d{1,9}(?:/\d{1,9})?, (?=loss: )"), eval_count),
    # The Hugging Face Flax examples (transformers' and diffusers'): "Step... (1000 | Loss:
    # 2.31, Learning Rate: ...)" (cur_step, the run's) and, after each epoch, "Epoch...
    # (47/116 | Loss: 0.1743)" (epoch + 1 of num_train_epochs: a per-epoch summary).
    (re.compile(r"\bStep\.\.\. \((?P<i>\d{1,15})(?:/(?P<n>\d{1,15}))? \|"), step_of),
    (re.compile(r"\bEpoch\.\.\. \((?P<e>\d{1,9})/(?P<E>\d{1,9}) \|"), epoch_summary),
    # Marian: "Ep. 1 : Up. 26000 :", the epoch under way and the updates done (the run's step).
    (re.compile(r"\bEp\.\s*\d{1,9}\s*:\s*Up\.\s*(?P<i>\d{1,15})\b"), step_of),
    # PaddleClas' "epoch:4   train step:6": the batch's index within an epoch of unknown size.
    (
        re.compile(
            r"(?i)(?<![\w/])epoch\s*[:=#]?\s*(?P<e>\d{1,9})[\s,;|]+train step\s*[:=#]?\s*"
            r"(?P<i>\d{1,15})(?![\w/%]|\.\w)"
        ),
        train_step_in_epoch,
    ),
    # The Annotated Transformer's run_epoch: "Epoch Step:   1801 | Accumulation Step: 181 |
    # Loss:   1.47 | ...", the batch's index within an epoch it names on a line of its own
    # ("[Epoch 3] Training ====") and never sizes: no run's step.
    (re.compile(r"(?i)(?<![\w/])epoch[ _]step\s*[:=#]?\s*\d"), moved_on),
    # LeRobot's MetricsTracker: "step:23K smpl:736K ep:2K epch:58.21 loss:0.032 ...", its
    # counts through format_big_number (rounded to thousands, millions...): no exact step.
    (
        re.compile(r"(?i)(?<![\w/])step\s*[:=#]?\s*\d{1,4}(?:\.\d{1,3})?[KMBGT](?![\w/])"),
        moved_on,
    ),
    # An RL loop's "Episode 600 Step 238: Training Loss ..." (a DQN's print per episode): a
    # step named right after the episode is counted within it (it goes down from one episode
    # to the next), no run's step; the line's values are read.
    (
        re.compile(r"(?i)(?<![\w/])episode\s*[:=#]?\s*\d{1,9}[\s,;|]+steps?\s*[:=#]?\s*\d"),
        step_unknown,
    ),
    # A line led by its RL episode, no step named on it ("Episode 3000, Avg Loss: 0.0011", a
    # DQN's print every ten episodes): an episode is no step; the line's values are read.
    (re.compile(r"(?i)^\s*episode\s*[:=#]?\s*\d{1,9}\b(?![^\n]*step)"), step_unknown),
    # "step 10/100", "Step 2250/200000;", "Step: 10 of 100", "step    1/74 |", nanoT5's
    # "Step 53050 out of 80000 |"
    (
        re.compile(
            r"(?i)(?<![\w/])(?:global[ _])?step\s*[:=#]?\s*\[?\s*(?P<i>\d{1,15})\s*"
            r"(?:/|(?:out )?of)\s*(?P<n>\d{1,15})\]?(?![\d/]|\.\d)"
        ),
        loop_count,
    ),
    # "iter: [10/500]", "Iteration 5/100", "Iters: 19990/20000 || Lr: ..." (awesome-semantic-
    # segmentation-pytorch's trainer and its forks: CIRKD, CWD, SKD)
    (
        re.compile(
            r"(?i)(?<![\w/])iter(?:ation)?s?\s*[:=#]?\s*\[?\s*(?P<i>\d{1,15})\s*/\s*(?P<n>\d{1,15})\]?"
            r"(?![\d/]|\.\d)"
        ),
        loop_count,
    ),
    # "step: 4", "step:1 -", "Step 1 |", "completed step: 9", "global step 37:"
    (
        re.compile(
            rf"(?i)(?<![\w/])(?:global[ _])?step\s*[:=#]?\s*(?P<i>{_GROUPED}|\d{{1,15}})"
            r"(?![\w/%]|\.\w)"
        ),
        loop_count,
    ),
    # A loop's own "iterations:57, train loss:..." leading its line (a script's print, after
    # its own time where it prints one: DeepLab-V1-PyTorch's "iters:6000, loss:0.2544"); the
    # plural elsewhere is a setting's ("Total iterations: 5000"), no count.
    (
        re.compile(
            r"^\s*(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?\s+)?"
            r"iter(?:ation)?s:\s{0,8}(?P<i>\d{1,15}), (?=[A-Za-z])"
        ),
        loop_count,
    ),
    # "iter: 1259", "iter 1631:", a loop's "batch_index=105472" (its enumerate's, kept as its
    # count: where it starts over each epoch the epoch counter tells)
    (
        re.compile(
            rf"(?i)(?<![\w/])(?:iter(?:ation)?|batch_(?:index|indx|idx))\s*[:=#]?\s*"
            rf"(?P<i>{_GROUPED}|\d{{1,15}})(?![\w/%]|\.\w)"
        ),
        loop_count,
    ),
    # A loop's own "epoch : 0 [13967/21279] Train loss: ..." (a text recognition trainer's),
    # tried after every tool's own: the batch within the epoch, whose base is 0 where it
    # prints 0 (of_epoch).
    (
        re.compile(
            r"(?i)(?<![\w/])epoch\s*:\s*(?P<e>\d{1,9})(?:/(?P<E>\d{1,9}))?\s+\[\s*(?P<i>\d{1,15})\s*/\s*"
            r"(?P<n>\d{1,15})\]"
        ),
        of_epoch,
    ),
    # "Epoch [3/10], Loss: 0.52", "epoch: 81, lr: ...", "(Epoch 21) TRAIN LOSS:0.1832",
    # "num_epoch: 44, loss: 0.3741" (a loop's epoch just done), "ep: 0, batch: 20, ..." (a
    # script's short word, with its colon)
    (
        re.compile(
            r"(?i)(?<![\w/])(?:(?:num_)?epoch\s*[:=#]?|ep\s*:(?!.*\bepo?ch\b))\s*\[?\s*(?P<e>\d{1,9})"
            r"(?:\s*(?:/|of)\s*(?P<E>\d{1,9}))?\]?"
            r"(?![\d/]|\.\d|[KMBGT]\b)"
        ),
        epoch_summary,
    ),
)


def find_counter(text: str) -> tuple[Count, tuple[int, int]] | None:
    """The line's counter and where it stands, or None."""
    for pattern, read in COUNTERS:
        m = pattern.search(text)
        if m is not None:
            return read(m), m.span()
    return None
