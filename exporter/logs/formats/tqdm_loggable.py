"""``tqdm-loggable``: the lines tqdm-loggable logs for a bar where no terminal is (openpi's
training, which imports its tqdm; any script that does)::

    04:51:12.146 [I] Progress on: 12.8kit/200kit rate:1.4it/s remaining:36:56:20
        elapsed:2:48:09 postfix:- (8428:tqdm_logging.py:145)
    01:09:19.915 [I] Progress on: -/30000 rate:- remaining:? elapsed:00:00 postfix:-

(tqdm_loggable/tqdm_logging.py ``display``, 0.4: ``"Progress on:%s %s/%s rate:%s remaining:%s
elapsed:%s postfix:%s"``, the bar's description, then n and total through tqdm's
``format_sizeof`` where both are non-zero, else as they are, a 0 as ``-``.) ``format_sizeof``
keeps three significant digits and an SI prefix: a count without a prefix (``4.00it``,
``30000``) is exact, one with a prefix (``12.8kit``, 12,750 to 12,849) is rounded: no step,
and the step read before it no longer the run's (Count.moved_on); no total either. Only a
bar with no description is read (openpi's training loop's): a described one may be any
loop's, an evaluation's among them.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native

_HINT = "Progress on:"
_COUNT = r"-|\d{1,15}(?:\.\d{1,3})?[kMGTPEZY]?[A-Za-z]{0,12}"
_LINE = re.compile(
    rf"{_HINT}(?P<desc>[^/\n]{{0,120}}?) ?(?P<n>{_COUNT})/(?P<total>{_COUNT}) rate:\S+"
    r" remaining:\S+ elapsed:"
)
_NUMBER = re.compile(r"(?P<number>\d{1,15}(?:\.\d{1,3})?)(?P<prefix>[kMGTPEZY]?)")


def exact(count: str) -> int | None:
    """The whole number ``count`` prints (``-`` is 0, ``4.00it`` 4), or None where it is
    rounded (an SI prefix: ``12.8kit``) or no whole number."""
    if count == "-":
        return 0
    m = _NUMBER.match(count)
    if m is None or m["prefix"]:
        return None
    value = float(m["number"])
    return int(value) if value == int(value) else None


def parse_tqdm_loggable(msg: str, now: float) -> LineReport | None:
    m = _LINE.search(msg)
    if m is None or m["desc"].strip():
        return None
    step = exact(m["n"])
    total = exact(m["total"])
    doc: dict[str, object] = {}
    if step is not None:
        doc["step"] = step
    if total:  # "-" (0) is a bar without a total
        doc["max_steps"] = total
    found = native(doc, now, "tqdm-loggable")
    if found is None or step is not None:
        return found
    return found._replace(moved_on=True)


FORMAT = Format("tqdm-loggable", (_HINT,), parse_tqdm_loggable)
