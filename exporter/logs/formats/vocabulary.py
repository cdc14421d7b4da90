"""The one vocabulary of progress logs: which printed key is the loss, the eval loss, the step,
the learning rate, the throughput... across every tool that prints ``key: value`` pairs.

Every reader of pairs (the general progress-line reader, tqdm postfixes, JSON lines) maps
its keys through :func:`field_of`, so a key means the same thing wherever it is printed. A
key the vocabulary does not name is a custom metric (``training_metric{metric=...}``), under
:func:`metric_name`.

Keys are compared normalized (:func:`normalize`): lower case, spaces, dashes and dots as
``_``, a trailing unit in parentheses dropped (``elapsed time per iteration (ms)``). Where
several keys of one line name the same field, the earlier in the field's list wins (verl
prints both ``actor/loss`` and ``actor/pg_loss``: the first is the loss).
"""

from __future__ import annotations

import re
from functools import lru_cache

# field -> the keys that name it, most specific first. Each source is named where it is not
# obvious; the world corpus (tests/fixtures/world/) holds a real line for each.
FIELDS: dict[str, tuple[str, ...]] = {
    "step": (
        "global_step",  # NeMo 2, Trainer-style JSON
        "global_batch_idx",  # ZipVoice (icefall's batch_idx_train): "global_batch_idx: 150"
        "training/global_step",  # verl
        "num_updates",  # fairseq
        "train_num_updates",  # fairseq's epoch summary ("| INFO | train | {...}")
        "valid_num_updates",  # fairseq's evaluations, by their subset's name
        "dev_num_updates",
        "test_num_updates",
        "acc_iter",  # OpenPCDet
        "current_steps",  # LLaMA-Factory trainer_log.jsonl
        "total_train_updates",  # ParlAI's train report
        "env_step",  # Tianshou's trainer: environment steps, its logger's x axis
        "trainer/global_step",
        "train/step",  # SkyRL v0's step dict ("'train/step': 1")
        "step",
        "steps",  # SpeechBrain's train logger: "epoch: 81, lr: ..., steps: 43659, ..."
        "updates",  # Sockeye's checkpoint: "Checkpoint [6] Updates=6000 Epoch=1 Samples=..."
        "numiters",  # Caffe's tools/extra/parse_log.py CSV: "NumIters,Seconds,LearningRate,..."
    ),
    "max_steps": (
        "max_steps",
        "total_steps",  # LLaMA-Factory trainer_log.jsonl, Unsloth's banner
        "total_optimization_steps",  # Trainer's and Accelerate scripts' banner
        "train_iters",
        "max_iters",
        "max_updates",  # MMF's LogisticsCallback ("progress: 10600/22000, ... max_updates: 22000")
    ),
    "loss": (
        "loss",
        "train_loss",
        "training_loss",  # "Training Loss: 0.41", "Avg Training Loss: 14.4859"
        "train_epoch_loss",  # llama-recipes and PEFT's examples, after each epoch
        "epoch_loss",  # a script's "EPOCH loss: 0.38" after its epoch: the epoch's mean
        "lm_loss",  # Megatron, GPT-NeoX
        "lm_loss_value",  # Megatron's evaluation: "validation loss at ... | lm loss value: ..."
        "reduced_train_loss",  # NeMo 2
        "total_loss",  # detectron2
        "tot_loss",  # WLASL, LMOps ("Tot Loss: 0.0044")
        "loss/train/total",  # Composer
        "loss/total",  # pytracking's LTR trainer (OSTrack, STARK): the total of its parts
        "train/loss",
        "train/total_loss",  # MMF: the sum of its losses, beside each ("train/<dataset>/<loss>")
        "loss_train",  # LitGPT ("loss train")
        "actor/loss",  # verl
        "actor/pg_loss",  # verl before it printed actor/loss
        "loss/policy_avg",  # TRL's PPOTrainer and RLOOTrainer: the policy's loss
        "ppo/loss/total",  # TRL's PPOTrainer before 0.11
        "policy_loss",  # OpenRLHF's PPO bar postfix
        "pg_loss",  # PPO loops' policy-gradient loss beside their v_loss ("pg_loss -0.021")
        "pg",  # OpenRLHF's earlier short bar status ("pg=-0.156, rm=0.25, ...")
        "actor_loss",  # RLHF loops: the policy's loss
        "act_loss",  # DeepSpeed-Chat step 3 ("act_loss: 30.92|cri_loss: ...")
        "mean_surrogate_loss",  # rsl_rl (Isaac Lab): PPO's policy loss, on a line of its own
        "surrogate_loss",  # rsl_rl's later versions
        "xent",  # OpenNMT-py's cross-entropy
        "step_loss",  # NVIDIA DeepLearningExamples' BERT through DLLogger
        "train/crossentropyloss",  # OLMo ("train/CrossEntropyLoss=12.18")
        "cross_entropy_loss",  # pith-train ("cross-entropy-loss 2.6636")
        "avr_loss",  # kohya-ss sd-scripts' bar postfix, the loss it shows
        "final_loss",  # a run's summary: {'avg_loss': ..., 'final_loss': ...}, the last one
        "avg_loss",  # fastText ("avg.loss: 0.5431"): the loss averaged since the start
        "closs",  # LLaMA2-Accessory and its SPHINX / LLaMA-Adapter kin: the cross-entropy loss
        "train_cross_entropy",  # MXNet's Speedometer ("Train-cross-entropy=0.1274")
        "cross_entropy",  # TF Hub's retrain.py ("Cross entropy = 0.0097"), ML.NET
        "ce_mean_words",  # Marian's validation cost per target word (read as the eval loss)
        "train_loss_per_sample",  # CNTK 1 ("TrainLossPerSample =  5.87155566;")
        "cost",  # Marian ("Cost 3.89087892"), the TensorFlow tutorials' "cost="
        "main/loss",  # Chainer's reporter: the optimizer's target link, observed as "main"
        "t_loss",  # Rasa's DIET and TED bars: their total loss
        # Chinese, as scripts print it: "训练损失" (training loss), "损失" (loss).
        "训练损失",
        "损失",
        "损失值",  # "loss value"
    ),
    "eval_loss": (
        "eval_loss",
        "val_loss",  # Keras, Lightning, nanoGPT ("val loss")
        "valid_loss",  # fairseq ("valid_loss", and "valid loss")
        "vali_loss",  # the Time-Series-Library family ("Vali Loss: 0.13 Test Loss: 0.20")
        "dev_loss",  # fairseq's evaluation on a subset named dev
        "validation_loss",
        "eval_epoch_loss",  # llama-recipes and PEFT's examples ("eval_epoch_loss=tensor(6.88)")
        "val/loss",
        "test/loss",  # as "test_loss": a test set's (Lightning's test table: the test loss metric)
        "eval/loss",
        "loss_val",
        "test_loss",
        "loss_test",  # Cellpose ("Loss 1.2783, Loss Test 1.2959")
        "metrics/eval/languagecrossentropy",  # Composer's evaluation of a language model
        "val",  # LitGPT: "loss train: 2.846, val: 2.861"
        "validation/main/loss",  # Chainer's Evaluator, under its default name "validation"
        "验证损失",  # Chinese: validation loss
    ),
    "learning_rate": (
        "learning_rate",
        "lr",
        "actor/lr",
        "train/learning_rate",
        "train_learning_rate",  # the Flax examples' CLU lines
        "train_lr",  # DeiT's, MAE's and their kin's log.txt
        "l.r.",  # Marian ("L.r. 4.6154e-05")
        "学习率",  # Chinese: learning rate
    ),
    "grad_norm": ("grad_norm", "gnorm", "actor/grad_norm", "train/grad_norm"),
    "epoch": ("epoch", "training/epoch", "train/epoch"),
    "max_epochs": ("num_epochs", "max_epochs", "total_epochs"),
    "tokens": (
        "num_input_tokens_seen",
        "tokens",
        "consumed_tokens",
        "trained_tokens",  # mlx-lm's "Trained Tokens 37481": every rank's, summed, so far
    ),
}
# Throughput and utilisation: custom metrics under these names, which the run reads
# (exporter.core.run.tokens: training_tokens_per_second; the printed MFU where the run gives no
# FLOPs).
RATES: dict[str, tuple[str, ...]] = {
    "tokens_per_second": (
        "tokens_per_second",
        "tok/s",
        "tokens/s",
        "tokens_per_sec",
        "tokens/sec",  # mlx-lm's "Tokens/sec 584.980", every rank's tokens
        "tok/sec",  # nanochat and autoresearch: "tok/sec: 1,089,422"
        "tok-sec",
    ),
    "tokens_per_second_per_gpu": (
        "tokens_per_second_per_gpu",  # torchtune
        "tps",  # torchtitan: tokens per second per device
        "tokens/s/device",  # MaxText
        "tokens/s/gpu",
        "tokens_per_sec_per_gpu",
        "tgs",  # tokens per GPU per second (InternEvo, xtuner)
    ),
    "model_flops_utilization": ("mfu", "perf/mfu/actor", "perf/mfu"),
}
# What the loop counts: a custom metric would only repeat the step.
COUNTER_KEYS = frozenset(
    {
        "iteration",
        "iter",
        "iters",
        "iterations",  # Megatron's "number of nan iterations: 0", once "nan" is no value
        "epoch_step",
        "batch",
        "time/batch",
        "time/batch_in_epoch",
    }
)
_UNIT = re.compile(r"\s*\([^()]*\)$")
# "Loss is 0.5386" (BigDL): the verb is no part of the name.
_IS = re.compile(r"\s+is$", re.IGNORECASE)
_SEPARATORS = re.compile(r"[\s.\-]+")


@lru_cache(maxsize=4096)
def normalize(key: str) -> str:
    """``key`` as the vocabulary compares it: ``Learning Rate`` and ``learning-rate`` are
    ``learning_rate``; ``elapsed time per iteration (ms)`` loses its unit, ``Loss is`` its
    verb."""
    key = _IS.sub("", _UNIT.sub("", key.strip()))
    return _SEPARATORS.sub("_", key.lower()).strip("_")


def _index() -> dict[str, tuple[str, int]]:
    out: dict[str, tuple[str, int]] = {}
    for table in (FIELDS, RATES):
        for name, keys in table.items():
            for rank, key in enumerate(keys):
                out.setdefault(normalize(key), (name, rank))
    return out


_INDEX = _index()


# "ValLoss", "trainLoss": words run together in camel case, split where a capital follows a
# small letter.
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_AVERAGED = re.compile(r"^(?:avg|average|mean|running)_")
# Lightning's loggers and bar name a value logged on_step and on_epoch "<name>_step" and
# "<name>_epoch" (its mean over the epoch so far). The loss is the step's ("train/loss_step");
# the eval loss is the epoch's ("val_loss_epoch", the evaluation's result: its "val_loss_step"
# is one batch's). The other of each is a custom metric of its own.
_REDUCED = re.compile(r"_(?P<over>step|epoch)$")
# "Test average loss" (gotorch), "val_mean_loss": the average after the data set's name.
_SUBSET_AVERAGED = re.compile(
    r"^(train|training|val|valid|validation|test|eval|dev)_(?:avg|average|mean|running)_"
)
# "train_total_loss" (a Lightning module's name for what it logs in training: EAGNet's,
# beside its "train_intent_loss_step" part): the training's own loss of a name the
# vocabulary knows as the loss.
_TRAINING = re.compile(r"^(?:train|training)_(?=\w)")


@lru_cache(maxsize=4096)
def field_of(key: str) -> tuple[str, int] | None:
    """The field ``key`` names and its rank among that field's keys (lower wins), or None
    for a custom metric. A key in camel case (``ValLoss``) is looked up as its words too."""
    name = normalize(key)
    found = _INDEX.get(name)
    if found is None and _CAMEL.search(key):
        name = normalize(_CAMEL.sub("_", key))
        found = _INDEX.get(name)
    if found is None:
        # "Avg Training Loss", "mean val loss": a loss averaged over the interval is the
        # loss (only the losses: "avg step time" is no step).
        rest = _SUBSET_AVERAGED.sub(r"\1_", _AVERAGED.sub("", name))
        reduced = _REDUCED.search(rest)
        rest = _REDUCED.sub("", rest)
        found = _INDEX.get(rest) if rest != name else None
        if found is None and (trained := _TRAINING.sub("", rest)) != rest and "loss" in trained:
            # (a loss-named key only: Angel's "train cost 79 ms" is a time)
            found = _INDEX.get(trained)
            if found is not None and found[0] != "loss":
                found = None
        if found is None and name.startswith(("losses/", "loss/")):
            # The losses' own namespace (trlx's "losses/total_loss", "losses/policy_loss"):
            # each key as the vocabulary names it.
            found = _INDEX.get(name.partition("/")[2])
        if found is not None and (
            found[0] not in ("loss", "eval_loss")
            or (reduced is not None and (found[0] == "loss") != (reduced["over"] == "step"))
        ):
            found = None
    return found


_METRIC_CHARS = re.compile(r"[^A-Za-z0-9_:]+")


@lru_cache(maxsize=4096)
def metric_name(key: str) -> str:
    """A custom metric's name for ``key``: Prometheus-safe (``actor/entropy`` is
    ``actor_entropy``), at most 64 characters; empty when nothing is left."""
    return _METRIC_CHARS.sub("_", normalize(key)).strip("_")[:64]


# A test set's loss, where a tool evaluates one after the validation set the run watches
# (Megatron, pytorch/examples' word language model): a custom metric, never the eval loss.
TEST_LOSS = "test_loss"


# ms-swift writes its step and total as one string, in its JSON lines and in the Python dict
# it logs to stdout alike: "'global_step/max_steps': '12/176'" (swift/trainers/callback.py).
STEP_OF_MAX_KEY = "global_step/max_steps"
_STEP_OF_MAX = re.compile(r"^\s*(\d{1,15})\s*/\s*(\d{1,15})\s*$")


def step_of_max(raw: object) -> tuple[int, int] | None:
    """The step and the total a ``global_step/max_steps`` value says, or None."""
    if not isinstance(raw, str):
        return None
    m = _STEP_OF_MAX.match(raw)
    return None if m is None else (int(m.group(1)), int(m.group(2)))


def evaluated(name: str) -> str:
    """An evaluation's custom metric's name: apart from the train step's own of the same name
    (Orbit's ``model_loss`` in both, NeuralClassifier's ``precision``)."""
    return name if name.startswith(("eval", "val")) else f"eval_{name}"
