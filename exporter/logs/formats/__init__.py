"""Log formats: one module per framework, each a :class:`~exporter.logs.lines.Format` (name,
hints, parser), and the one ordered list of them.

Every framework already prints its progress; these parsers read it without a code change.
Each takes one message (a log line without its CRI prefix) and returns a
:class:`~exporter.logs.lines.LineReport` or None. Nothing here keeps state: combining lines
(which progress bar is the training bar, Keras' per-epoch batches) is the accumulator's job
(:mod:`exporter.logs.accumulate`). The hints a line is scanned for are the formats' own, so
the quick scan and the parsers cannot drift apart (tests/test_logparse.py checks that each
parser reads nothing its hints would not let through).
"""

from __future__ import annotations

from ..lines import Format
from . import (
    allennlp,
    banner,
    boosting,
    box_table,
    build_nanogpt,
    centernet,
    chainer,
    checkpoints,
    composer,
    darknet,
    deepspeed,
    ends,
    epochs,
    espnet,
    fasttext,
    jsonl,
    katib,
    keras,
    kubeflow,
    lightning_bars,
    lone,
    metric_logger,
    microwakeword,
    mlperf,
    model_garden,
    nerfstudio,
    neuralclassifier,
    ocp,
    progress,
    ray_train,
    resume,
    returnn,
    stages,
    starspace,
    table,
    tacotron,
    tf_cnn_benchmarks,
    tqdm,
    tqdm_loggable,
    traceback,
    trainer_dicts,
    trax,
    values_first,
)

# In order: the formats of one tool's exact shape first (they are unambiguous), bars, then
# the general reader of progress lines, which reads what the others left.
FORMATS: tuple[Format, ...] = (
    kubeflow.FORMAT,
    traceback.FORMAT,
    checkpoints.FORMAT,
    resume.FORMAT,
    model_garden.FORMAT,
    neuralclassifier.FORMAT,
    stages.FORMAT,
    ray_train.FORMAT,
    metric_logger.FORMAT,
    allennlp.FORMAT,
    build_nanogpt.FORMAT,
    trainer_dicts.FORMAT,
    mlperf.FORMAT,
    ocp.FORMAT,
    jsonl.FORMAT,
    deepspeed.FORMAT,
    centernet.FORMAT,
    banner.FORMAT,
    keras.FORMAT,
    epochs.FORMAT,
    lightning_bars.RICH_BAR,
    tqdm.FORMAT,
    tqdm.ROW_HEADER,
    table.FORMAT,
    box_table.FORMAT,
    katib.FORMAT,
    lightning_bars.BANNER,
    ends.FORMAT,
    boosting.FORMAT,
    darknet.FORMAT,
    tf_cnn_benchmarks.FORMAT,
    tacotron.FORMAT,
    starspace.FORMAT,
    nerfstudio.FORMAT,
    tqdm_loggable.FORMAT,
    trax.FORMAT,
    fasttext.FORMAT,
    returnn.FORMAT,
    espnet.FORMAT,
    microwakeword.FORMAT,
    chainer.FORMAT,
    composer.FORMAT,
    values_first.FORMAT,
    progress.FORMAT,
    lone.FORMAT,
)
# Every hint of every format, each once.
HINTS: tuple[str, ...] = tuple(dict.fromkeys(h for f in FORMATS for h in f.hints))
# Every name a line's parser may carry (training_exporter_log_matches_total{parser}): the
# formats' own and those a format gives some of its lines. A format users add may take none.
PARSER_NAMES: frozenset[str] = frozenset(
    {f.name for f in FORMATS}
    | {"tqdm", "lightning", "ultralytics", "exception", "kubeflow-marker", "deepspeed"}
    | {"yolov5-header", "yolov6-header"}
)
