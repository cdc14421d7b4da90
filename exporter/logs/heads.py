"""A logger's head before a message: its time, level, name and place in the code.

Why it exists: most formats read their message wherever it starts, but the shapes that
span lines (a Keras epoch header and its bar, a table's header and rows, a tool's end
line) are read from the line's start. A script that sends the same text through Python's
``logging`` (or loguru, absl, Hydra, fairseq's, mmengine's logger) puts a head before each
line; :func:`without_head` gives the message so it reads as it would printed bare. Pure.
"""

from __future__ import annotations

import re

from .lines import without_colours

# A date and time as loggers write them: ISO (``2024-05-01 10:00:00,123``, with a zone),
# mmengine's ``2024/06/16 20:02:03`` (its early versions' and detectron2's ``12/07
# 10:00:00``), vLLM's ``04-24 17:49:20``, a time alone, syslog's and moreutils ts' ``Dec 07
# 13:22:48``.
_TIME = (
    r"(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d| UTC)?"
    r"|(?:\d{4}/)?\d\d/\d\d(?:/\d{2,4})? \d\d:\d\d:\d\d(?:[.,]\d{1,6})?"
    r"|\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d{1,6})?"
    r"|\d\d:\d\d:\d\d(?:[.,]\d{1,6})?"
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d)"
)
_LEVEL = r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|NOTICE|TRACE|SUCCESS)\b"
# A logger's name or its place in the code: ``__main__``, ``fairseq.trainer``, loguru's
# ``__main__:train:42``, ``trainer.py:123``; never a bare word followed by a number or a
# colon alone (``step:1`` is a counter).
_NAME = r"[A-Za-z_<][\w.<>/-]{0,80}(?:\.py:\d{1,6}(?::[\w<>]{1,80})?|:[\w<>]{1,80}:\d{1,6})?"
# A bracketed field: a module's name alone (Hydra's ``[__main__]``, ``[root]``), or one
# holding a time, a level or a file's line (DeepSpeed's
# ``[real_accelerator.py:219:get_accelerator]``, NeMo's ``[NeMo I 2024-05-01 10:00:00
# file:123]``, Transformers' ``[INFO|trainer.py:123]``, detectron2's ``[12/07 10:00:00
# d2.utils.events]``); never a counter (``[1/10]``) or a phase (``[TRAIN]``, ``[valid]``).
_BRACKET = (
    r"\[(?:[\w<>-]{0,80}(?:\.|__)[\w.<>/-]{0,80}|root"
    r"|[^\[\]]{0,60}?(?:" + _TIME + "|" + _LEVEL + r"|\w\.py:\d)[^\[\]]{0,100})\]:?"
)
_FIRM = r"\s{0,8}[-|]\s{1,8}"  # " - ", " | ": between a time, a level and a name
_LEVEL_FIELD = _LEVEL + r"(?::(?= ))?"  # "INFO", or "INFO:" before the message's space
_GENERIC = (
    r"(?:(?:\[" + _TIME + r"\]|" + _TIME + "|" + _LEVEL_FIELD + "|" + _BRACKET + ")"
    r"(?:(?:" + _FIRM + r"|\s{1,8}|(?<=\]))(?:" + _TIME + "|" + _LEVEL_FIELD + "|" + _BRACKET + ")"
    r"|" + _FIRM + _NAME + r"(?=" + _FIRM + r")){0,5})"
)
# A module's name as loggers are named: "__main__", "root", "transformers.trainer".
_MODULE = r"(?:__main__|root|[A-Za-z_][\w-]{0,80}(?:\.[\w-]{1,80}){1,8})"
_HEAD = re.compile(
    r"^(?:"
    # glog and absl: "I0501 10:00:00.123456 140234 train.py:123] "
    r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6}\s{1,8}\d{1,10}\s[\w./<>-]{1,120}:\d{1,6}\]\s"
    # logging.basicConfig's default: "INFO:__main__:", "WARNING:root:"
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.<>-]{0,80}:"
    # the same after a time ("%(asctime)s:%(levelname)s:%(name)s:%(message)s"), the name
    # optional and a module's (MindSpore's "%(asctime)s:%(levelname)s:%(message)s" has none:
    # "...:INFO:epoch: [1/10]" is MindOCR's message)
    r"|(?=\d)" + _TIME + r":(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):(?:" + _MODULE + r":)?"
    # "%(levelname)s %(name)s: %(message)s", the name a module's
    r"|" + _LEVEL + r":?\s{1,8}" + _MODULE + r": "
    # loguru's format without its time: "| INFO     | __main__:train:82 - "
    r"|\|\s{1,8}" + _LEVEL + r"\s{0,8}\|\s{1,8}" + _NAME + r"\s{1,8}-\s"
    # syslog and journald: "Dec 07 13:22:48 node-1 python3[1234]: "
    r"|" + _TIME + r" [\w.-]{1,63} [\w./-]{1,64}\[\d{1,10}\]: "
    # vLLM: "INFO 04-24 17:49:20 __init__.py:183] ", "INFO 04-24 17:49:20 [loader.py:447] "
    r"|" + _LEVEL + r" " + _TIME + r" \[?[\w./<>-]{1,120}:\d{1,6}\]\s"
    # the rest: fields between " - ", " | ", spaces or brackets, ended by one more of them
    # or Transformers' ">>": "2024-05-01 10:00:00,123 - __main__ - INFO - ", loguru's
    # "2024-05-01 10:00:00.123 | INFO     | __main__:train:42 - ", Hydra's
    # "[2024-05-01 10:00:00,123][__main__][INFO] - ", fairseq's "... | INFO | train | "
    # (one space of it: the message's own indent is its own, "  train_loss = 0.5")
    r"|" + _GENERIC + r"(?:\s{0,8}(?:[-|]|>>) |[ \t]|(?<=[\]:])))"
)
# Rich's logging handler: its time (blank where it repeats the line before's), its level
# padded to eight and a space, the message (its own indent kept), and the file and line at
# the right: "[12/07/24 10:00:00] INFO
#     step 10 loss 0.5              train.py:42".
_RICH = re.compile(
    r"^(?:\[" + _TIME + r"\] |\s{8,40})?(?=" + _LEVEL + r" {0,5} )[A-Z ]{8} (?P<message>.{1,4096}?)"
    r"\s{2,}[\w.-]{1,80}\.py:\d{1,6}\s*$"
)
# What a head holds at least once, so a name alone in brackets is no head.
_MARK = re.compile(_TIME + "|" + _LEVEL + r"|\.py:\d|\d{4} \d\d:\d\d|:\d{1,6}\b")
_LEVEL_IN = re.compile(_LEVEL)
_STARTS = frozenset("0123456789[ACDEFIJMNOSTW|")  # what a head's first character can be
# A level last in a head, before its one space: "%(levelname)-8s " pads it to eight.
_PADDED_LEVEL = re.compile(_LEVEL + r" $")
# The head's last field, after a level, a test's or an evaluation's name ("| INFO | TEST | ").
_PHASE_FIELD = re.compile(
    _LEVEL + r"\s{0,8}\|\s{1,8}(?P<phase>(?i:test(?:ing)?|eval(?:uation)?|valid(?:ation)?|val))"
    r"\s{0,8}\|\s$"
)


def split_head(msg: str) -> tuple[str, str] | None:
    """``msg`` as its logger's head (:data:`_HEAD`; :data:`_RICH`'s with the place it prints
    at the right) and its message, colours taken off; None where it has no head or nothing
    follows it."""
    msg = without_colours(msg)  # around a head's fields (loguru's); parse_message's are off
    if not msg or (msg[0] not in _STARTS and not msg[:8].isspace()):
        return None
    if (rich := _RICH.match(msg)) is not None:
        return msg[: rich.start("message")] + msg[rich.end("message") :], rich["message"]
    if msg[0] not in _STARTS:
        return None
    head = _HEAD.match(msg)
    if head is None or _MARK.search(text := head.group()) is None:
        return None
    end = head.end()
    if (
        (bar := text.find(" |") + 1) > 0
        and text[0] != "|"
        and (_LEVEL_IN.search(text) is None or _LEVEL_IN.search(text, 0, bar))
    ):
        # A "|" after a time alone, or after a time and a level that spaces separate, is no
        # separator of the head's ("2024-05-01 10:00:00 INFO |    total_timesteps | 3584 |"):
        # the message is a framed row ("| 1 | 2.93 |", "| epoch   6 |   200/ 2983 batches").
        # Loguru's and fairseq's heads put theirs between every field.
        end = bar
    elif msg[end : end + 1] == " " and (level := _PADDED_LEVEL.search(text)) is not None:
        # "%(levelname)-8s %(message)s": spaces that pad the level to eight are the head's
        # ("INFO     Epoch 1/10"), those past them the message's own indent; fewer are all
        # the message's ("INFO   train_loss = 0.58" after "%(levelname)s ").
        pad = 9 - len(level.group())
        if msg[end : end + pad] == " " * pad:
            end += pad
    elif (phase := _PHASE_FIELD.search(text)) is not None:
        # A test's or an evaluation's name as the head's last field ("... | INFO | TEST |
        # loss=0.3107", fairseq's "| valid | "): the message's, which says what it is.
        end = phase.start("phase")
    rest = msg[end:]
    return (msg[:end], rest) if rest.strip() else None
