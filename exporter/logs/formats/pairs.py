"""``key: value`` pairs as training tools print them, and what they say through the vocabulary.

Pure and shared: the general progress-line reader reads a line's pairs with
:func:`find_pairs`; it, tqdm postfixes and JSON lines turn pairs into report fields with
:func:`to_fields`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from .vocabulary import COUNTER_KEYS, field_of, metric_name

# A key: words of letters, digits and ``_/.@-``, up to seven of them, or a unit in
# parentheses ("elapsed time per iteration (ms)", "throughput per GPU (TFLOP/s/GPU)"),
# starting after a separator; a word may start with a CJK ideograph ("训练损失: 4.37",
# a script's Chinese "training loss").
_KEY = (
    r"(?<![\w/.@\-'\"])(?P<key>[A-Za-z_\u4e00-\u9fff][\w/.@\-]*"
    r"(?: (?:[A-Za-z_\u4e00-\u9fff][\w/.@\-]*|\([^()\s]{1,32}\))){0,6}?)"
)
# Between them: ":" or "=" (spaces around allowed), or spaces alone ("loss 4.0863").
# ":", "=", nanoT5's "-->" ("Loss --> 1.822"), or spaces.
_SEP = r"(?:\s*[:=]\s*|\s*-->\s*|\s+)"
# A number as printed: thousands separators ("10,050"), a decimal comma where a comma is not
# followed by exactly three digits ("0,4941176", "5,939554E+12": ML.NET in a German or
# French locale), exponents ("2.5E+00"), nan/inf; then
# an optional percent sign or unit ("3961M", "66.91GiB", "561.94ms"); never the first part of
# a clock ("4:44:04"), a ratio ("5092/261"), a date ("cellpose: 2021-12-10") or a longer
# word, unless that word is capitalized, the next message glued on ("loss is 7.078993Epoch
# time": MindSpore's benchmark monitor); a sentence's full stop may follow it ("Loss is
# 0.53861904."). The MSVC runtime's
# NaN and infinity ("1.#QNAN000", "-1.#IND", "1.#INF00": CNTK on Windows) are NaN and inf;
# so are Lightning's progress bar's, padded to five characters like every float it shows
# ("nan.0", "inf.0", "-inf.": its Tqdm.format_num), before a comma, a bracket or a space.
_VALUE = (
    r"(?P<value>[-+]?\d\.#(?:QNAN|SNAN|IND|INF)\d*"
    r"|[-+]?\d+,(?!\d{3}(?![\d,]))\d+(?:[eE][-+]?\d+)?(?![,.]\d)"
    r"|[-+]?(?:\d{1,3}(?:,\d{3})+(?![\d,])|\d+)(?:\.\d*)?(?:[eE][-+]?\d+)?"
    r"|[-+]?\.\d+(?:[eE][-+]?\d+)?|[-+]?(?:nan|NaN|inf|Inf)(?:\.0?(?=[,\]\s]|$))?)"
    r"(?:(?P<percent>%)?(?P<unit>[A-Za-z]{1,4})?(?![\w:/]|\.\w|-\d)|(?=[A-Z][a-z]{2,}))"
)
PAIR = re.compile(_KEY + _SEP + _VALUE)
# Another bare number right after a pair's value: the key names a list ("loss:0.3555 0.3044
# 2.7294 0.1937", IRNet's four loss parts), none of whose values is the key's alone.
# A number with its unit after it is no list's: a duration or a rate ("loss 2.0802 2302
# ms/iter", nanogpt-seis' train.py).
_LIST_GOES_ON = re.compile(
    r"[ \t]+[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?=[ \t,;|]|$)"
    r"(?![ \t]+(?:ms|s|sec|secs|seconds|min)(?:/\w+)?\b|[ \t]+[A-Za-z]+/(?:s|sec|iter|it|step)\b)"
)
# A number as C's printf writes it, for the formats whose values have no names (Darknet's,
# tf_cnn_benchmarks', the gradient-boosting libraries'): no separators, no unit; "-nan" and
# "inf" included; one group, so it embeds anywhere in a pattern.
PRINTF_NUMBER = r"(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf))"
MAX_PAIRS = 128
# A throughput's share of one device right after it: NeMo Automodel's "tps
# 11278.56(1409.82/gpu)" is all ranks' tokens per second, then one GPU's.
_PER_DEVICE = re.compile(rf"\(\s*(?P<each>{PRINTF_NUMBER})\s*/\s*(?:gpu|GPU|device)\s*\)")
_THROUGHPUT = ("tokens_per_second", "tokens_per_second_per_gpu")
# A scalar's repr where its number was meant: PyTorch's tensor ("tensor(6.8830,
# device='cuda:2')", "tensor(0.53, grad_fn=<...>)"), NumPy 2's ("np.float64(0.5234)"), JAX's
# ("Array(2.3456, dtype=float32)"), as a loop prints a dict or an f-string of its metrics.
_SCALAR_REPR = re.compile(
    rf"\b(?:tensor|np\.(?:float|int|uint)\d{{0,3}}|numpy\.(?:float|int)\d{{0,3}}|Array)"
    rf"\((?P<value>{PRINTF_NUMBER})(?:, [a-z_]+=[^()]{{1,64}}?)*\)"
)
# A logger's place in the code, never a metric: RichHandler's "train.py:42" at the line's
# end, loguru's "__main__:train:42" (a key right after a colon is the path's next part).
_SOURCE_LINE = re.compile(r"\.(?:py|pyx|c|cc|cpp|cu|h|go|rs|js|ts|java|lua|jl|scala)$")
# A date as time.ctime() prints it ("Tue Sep 17 15:31:19 2019"): its day is no metric "Tue Sep".
_CTIME = re.compile(
    r"(?i)(?:mon|tue|wed|thu|fri|sat|sun) (?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)$"
)
_LEVEL = re.compile(r"^(?:INFO|DEBUG|WARNING|WARN|ERROR|CRITICAL|TRACE) ")
_SCALAR_HINTS = ("tensor(", "np.", "numpy.", "Array(")
# A value in angle brackets right after its key's colon or equals sign (Apache MADlib's
# "Iteration: 8, Loss: <0.0995580174594>"); "loss < 0.5", a comparison, is no value.
_ANGLED = re.compile(rf"(?<=[:=] )<(?P<value>{PRINTF_NUMBER})>")


# A rate printed after its number: "171.26 samples/sec 8627.36 tokens/sec 1.61 updates/sec"
# (Sockeye's and MXNet's Speedometer), "491 samples/s", "112241 tok/s", "37.2k tok/s" (an SI
# prefix before a space: applied): the unit names the number before it, never the one after
# (read as "key value", the tokens per second would be the updates').
_RATE_AFTER = re.compile(
    r"(?<![\w.,])(?P<value>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)(?P<si>[kKM](?= ))?\s?"
    r"(?P<unit>(?:samples?|tokens?|toks?|updates?|words?|sents?|sentences?|examples?|images?"
    r"|imgs?|frames?|seqs?|sequences?|batches|records)/(?:s|sec|second))(?![\w/])"
)


IGNORED = frozenset({"eta"})  # a clock or a phrase, never a number worth keeping
# A word of a sentence before a number is no key, nor a phrase ending in one: "resuming from
# iteration 0, epoch 12 until 13 epochs" (ignite) names no metric "until", Megatron's "number of
# nan iterations: 0" none "number of" (its value "nan").
_PROSE = frozenset(
    {"until", "from", "to", "of", "at", "in", "on", "for", "by", "after", "before", "with",
     "and", "or", "than", "since", "over", "per", "into", "within", "the", "a", "an"}
)  # fmt: skip
_TIME_UNITS = frozenset({"s", "ms", "sec", "secs", "us", "min", "h"})
# Units a value may print apart, after a space, before the next key ("min" is no such word:
# "lr: 0.1 min loss: 0.5" names a minimum).
_UNIT_WORDS = frozenset({"s", "ms", "sec", "secs", "us"})
# Thousands ("k", "K"), millions, billions ("B", "G"), trillions.
_MAGNITUDES = frozenset({"k", "K", "M", "B", "G", "T"})
# The fields that count (a step, a number of tokens): a rounded count is none of them.
_COUNTS = frozenset({"step", "max_steps", "epoch", "max_epochs", "tokens"})
# The rest of a duration in two units ("Total running time: 2min 4s", Ray's): the first
# number alone is no value of it.
_DURATION_GOES_ON = re.compile(r"\s*\d+(?:\.\d+)?\s?(?:s|sec|secs|ms|m|min)\b")
# A unit of time printed apart, ending the line or a part of it ("====> Epoch: 4274, cost
# 7.40 s", so-vits-svc's): the value is a duration. Not before a number ("miniE 1 s 833":
# there "s" is the next key).
_UNIT_APART = re.compile(r"[ \t]+(?:s|ms|sec|secs|seconds)(?=[ \t]*(?:$|[,;|)\]]))")


def _path_part(text: str, m: re.Match[str]) -> bool:
    """Whether a pair joined by a bare colon is a place in the code: right after another
    colon ("__main__:train:42"), not a logger's prefix before a pair ("INFO:tensorflow:loss =
    4.26"); or a module and a line number, dotted or in parentheses ("olmo.train:1002",
    "(trainer:464)": Python logging's "%(name)s:%(lineno)d")."""
    if text[m.end("key") : m.start("value")] != ":":
        return False
    before = text[m.start() - 1] if m.start() > 0 else ""
    if before == ":":
        return True
    # "(trainer:464)": ESPnet's "%(module)s:%(lineno)d" in parentheses.
    in_parentheses = before == "(" and text[m.end() : m.end() + 1] == ")"
    return m["value"].isdigit() and ("." in m["key"] or in_parentheses)


def plain_scalars(text: str) -> str:
    """``text`` with each scalar's repr (:data:`_SCALAR_REPR`) as its number."""
    if "(" in text and any(h in text for h in _SCALAR_HINTS):
        return _SCALAR_REPR.sub(r"\g<value>", text)
    return text


@dataclass(frozen=True, slots=True)
class Pair:
    """One printed pair: its key as printed, its value, and whether it ended in ``%``."""

    key: str
    value: float
    percent: bool = False
    seconds: bool = False  # printed with a unit of time ("0.25s", "561.94ms"): never a loss
    # Rounded to thousands or more ("step:23K", "smpl:736K": LeRobot's format_big_number): no
    # count's exact value.
    rounded: bool = False


_GROUPED = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d*)?(?:[eE][-+]?\d+)?")


def number(text: str) -> float | None:
    """The number ``text`` prints (``10,050`` is 10050, ``0,4941176`` is 0.4941176), or
    None."""
    if "#" in text:
        special = text.lstrip("+-")[3:].rstrip("0123456789")
        sign = -1.0 if text.startswith("-") else 1.0
        return sign * math.inf if special == "INF" else math.nan
    if text.lstrip("+-")[:3].lower() in ("nan", "inf"):
        text = text.rstrip("0").rstrip(".")  # Lightning's padding: "nan.0", "-inf."
    try:
        if "," in text and not _GROUPED.fullmatch(text):
            return float(text.replace(",", ".", 1))
        return float(text.replace(",", ""))
    except ValueError:
        return None


def _scaled(value: str, si: str | None) -> float:
    """A rate as printed, its SI prefix applied: a rate rounded to three digits ("37.2k tok/s")
    is still the rate, unlike a count."""
    return float(value.replace(",", "")) * {"k": 1e3, "K": 1e3, "M": 1e6}.get(si or "", 1.0)


def find_pairs(text: str) -> list[Pair]:
    """Every ``key: value``, ``key=value`` and ``key value`` pair in ``text``, in order (at
    most :data:`MAX_PAIRS`). A value printed as a PyTorch tensor's repr
    (``eval_epoch_loss=tensor(6.8830, device='cuda:2')``) is its number (:func:`plain_scalars`),
    and so is one in angle brackets (:data:`_ANGLED`)."""
    text = plain_scalars(text)
    if ": <" in text or "= <" in text:
        # Only here, on a line the pairs are read from: a whole message may be a 16 KiB
        # chunk of bar frames, too long to scan once more for nothing.
        text = _ANGLED.sub(r"\g<value>", text)
    out: list[Pair] = []
    if "/s" in text and (rates := list(_RATE_AFTER.finditer(text))):
        out += [Pair(m["unit"], _scaled(m["value"], m["si"])) for m in rates]
        text = _RATE_AFTER.sub(" | ", text)
    for m in PAIR.finditer(text):
        value = number(m["value"])
        if (
            value is None
            or _LIST_GOES_ON.match(text, m.end())
            or m["key"].rsplit(" ", 1)[-1].lower() in _PROSE
            or _SOURCE_LINE.search(m["key"])
            or _CTIME.match(m["key"])
            or _path_part(text, m)
            or (m["unit"] in _TIME_UNITS and _DURATION_GOES_ON.match(text, m.end()))
        ):
            continue
        # A key does not run across a sentence's end ("records/second. Loss is 0.5386"), nor
        # does it start with a logger's level ("INFO loss 2.5").
        key = _LEVEL.sub("", m["key"].rsplit(". ", 1)[-1])
        # A sentence's next clause is no part of its key ("learning rate is 0.0017 and shrink
        # value is 0.97": Kaldi's "shrink value").
        if key[:4] in ("and ", "And ") or key[:3] in ("or ", "Or "):
            key = key.split(" ", 1)[1]
        unit, _, rest = key.partition(" ")
        if rest and unit in _UNIT_WORDS and text[: m.start()].rstrip()[-1:].isdigit():
            # The unit of the value before, printed apart ("batch_cost: 0.80452 sec
            # reader_cost: 0.03792 sec", PaddleGAN's): no word of this key.
            key = rest
        each = _PER_DEVICE.match(text, m.end())
        if each is not None and (field_of(key) or ("",))[0] in _THROUGHPUT:
            out.append(Pair("tokens_per_second", value))
            out.append(Pair("tokens_per_second_per_gpu", float(each["each"])))
            continue
        out.append(
            Pair(
                key,
                value,
                m["percent"] is not None,
                m["unit"] in _TIME_UNITS or _UNIT_APART.match(text, m.end()) is not None,
                m["unit"] in _MAGNITUDES,
            )
        )
        if len(out) >= MAX_PAIRS:
            break
    return out


def validation_twins(pairs: list[Pair]) -> list[Pair]:
    """``pairs`` with a short ``v_`` prefix read as the validation's where the line prints
    its values in twins, each ``v_x`` beside its ``x`` (TMR's ``v_recons ... recons ...
    v_loss 2.128 loss 0.3056 v_kl ... kl``): two twins at least, since a lone ``v_loss``
    beside a ``loss`` is a policy's value loss elsewhere (PPO); or ``v_x`` beside ``t_x``."""
    keys = {p.key for p in pairs}
    twins = {k for k in keys if k.startswith("v_") and k[2:] in keys}
    if len(twins) >= 2:
        return [replace(p, key="val_" + p.key[2:]) if p.key in twins else p for p in pairs]
    # "T_Loss 11.06 | T_acc 0.11 | V_Loss 9.87 | V_acc. 0.1": each value as the training's
    # and the validation's, by their initials.
    names = {p.key.lower().rstrip("."): p.key for p in pairs}
    split = {n[2:] for n in names if n.startswith("v_") and "t_" + n[2:] in names}
    if not split:
        return pairs
    initial = {names[f"{side}_{n}"]: f"{word}_{n}" for n in split for side, word in _SIDES}
    return [replace(p, key=initial[p.key]) if p.key in initial else p for p in pairs]


_SIDES = (("t", "train"), ("v", "val"))


@dataclass
class Fields:
    """What pairs said, by field: the vocabulary's fields, the rates, and the rest as custom
    metrics; each field from its best-ranked key."""

    values: dict[str, float]
    metrics: dict[str, float]
    # The eval loss is a test set's: its key names the test set ("Test loss: 0.634").
    tested: bool = False

    def has(self, *names: str) -> bool:
        return any(n in self.values for n in names)


def _ratio(p: Pair) -> float:
    """A utilisation as a ratio: ``34.33%`` and ``34.33`` are 0.3433, ``0.298`` stays."""
    return p.value / 100 if p.percent or p.value > 1 else p.value


# A custom metric named as a loss, and not an evaluation's (val_, eval_, test_, valid_, and
# a data set's name run into it: Angel's "validationData loss").
_TRAINING_LOSS = re.compile(
    r"(?!(?:val|eval|valid|validation|test|dev)(?:_|data_|set_))"
    # A part's qualifier names a part of the loss, never the loss: DGL-KE logs "average
    # pos_loss" and "average neg_loss" on lines of their own before "average loss"; a
    # reference's is not the loss trained (DPO's reference model; so-vits-svc's
    # "reference_loss", its GAN's losses summed "for reference").
    r"(?!(?:pos|neg|positive|negative|aux|auxiliary|reg|ref|reference)_)[a-z0-9]+_loss"
    # Or named after the loss ("loss_pixel", PaddleGAN's RCAN: the one loss it optimizes),
    # never a setting of it ("loss_scale", mixed precision's), its time ("Loss Time 0.029s",
    # openseg's) nor an evaluation's.
    r"|loss_(?!(?:val|eval|valid|validation|test|dev|scale|scaler|weight|weights|type|fn"
    r"|time|times|seconds|secs|ms)(?:_|$))"
    r"[a-z0-9]+"
)


# A custom metric named as an evaluation's loss: a data set's name before it.
_EVAL_LOSS = re.compile(r"(?:val|eval|valid|validation|test|dev)(?:data|set)_loss")


def _sole(metrics: dict[str, float], name: re.Pattern[str]) -> float | None:
    """The value of the one custom metric ``name`` matches, or None where there is none, or
    two or more (parts of a loss, none of them the loss)."""
    named = [k for k in metrics if name.fullmatch(k)]
    return metrics[named[0]] if len(named) == 1 else None


def sole_eval_loss(metrics: dict[str, float]) -> float | None:
    """The one custom metric named as an evaluation's loss ("validationData loss",
    Angel's), or None."""
    return _sole(metrics, _EVAL_LOSS)


def sole_loss(metrics: dict[str, float]) -> float | None:
    """The one custom metric named as a training loss ("Mask_Loss 1.55": ClearerVoice's one
    loss), or None ("ctc_loss" beside "att_loss": parts)."""
    return _sole(metrics, _TRAINING_LOSS)


# The eval loss's keys that name a test set (exporter.logs.evaluations weighs them).
_TEST_SET_LOSSES = ("test_loss", "loss_test")


def to_fields(pairs: Iterable[Pair], evaluation: bool = False) -> Fields:
    """Pairs by field. In an evaluation line (``evaluation``) the loss keys are the eval
    loss: fairseq's "valid on 'valid' subset | loss 1.94" is no training loss."""
    values: dict[str, float] = {}
    ranks: dict[str, int] = {}
    metrics: dict[str, float] = {}
    tested = False
    for p in pairs:
        found = field_of(p.key)
        if found is None:
            name = metric_name(p.key)
            if name and name not in IGNORED and name not in COUNTER_KEYS:
                metrics.setdefault(name, p.value)
            continue
        field, rank = found
        if p.rounded and field in _COUNTS:
            continue
        if field == "eval_loss" and "loss" not in values and metric_name(p.key) == "val":
            # A bare "val" is the eval loss after the line's train loss (LitGPT's "loss
            # train: 2.846, val: 2.861"); alone it is whatever was validated ("Accs: Train:
            # 0.7351, Val: 0.7079", an accuracy): a custom metric.
            metrics.setdefault("val", p.value)
            continue
        if p.seconds and field in ("loss", "eval_loss"):
            # "cost 0.25s": a time, not a cost (kept as cost_seconds, never as the loss).
            metrics.setdefault(metric_name(p.key) + "_seconds", p.value)
            continue
        if evaluation and field == "loss":
            field = "eval_loss"
        value = _ratio(p) if field == "model_flops_utilization" else p.value
        if field in ranks and ranks[field] <= rank:
            continue
        if not math.isfinite(value) and field not in ("loss", "eval_loss", "grad_norm"):
            continue
        values[field], ranks[field] = value, rank
        if field == "eval_loss":
            tested = metric_name(p.key) in _TEST_SET_LOSSES
    # The rates are the run's custom metrics under their one name (exporter.core.run reads them).
    for rate in ("tokens_per_second", "tokens_per_second_per_gpu", "model_flops_utilization"):
        if rate in values:
            metrics[rate] = values.pop(rate)
    return Fields(values, metrics, tested)
