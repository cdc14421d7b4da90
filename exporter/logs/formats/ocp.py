"""``ocp``: the Open Catalyst Project's trainers (``ocpmodels``, fairchem before 2.0), as
their ``main.py`` logs through ``setup_logging`` (``%(asctime)s (%(levelname)s): ``)::

    2024-12-12 14:38:29 (INFO): energy_mae: 1.66e+01, forces_mae: 8.61e-04, ...,
        loss: 1.68e+01, lr: 2.00e-05, epoch: 9.09e-01, step: 1.00e+01
    2024-08-08 13:41:34 (INFO): energy_forces_within_threshold: 0.0000, energy_mae:
        24.6883, ..., loss: 25.2326, epoch: 0.5882
    2024-08-08 13:41:39 (INFO): Total time taken: 16.31741714477539

A training line (``{:.2e}``, with ``lr`` and ``step``) is the general reader's. What this
format reads:

- ``BaseTrainer.validate`` logs its split's metrics with four decimals, the epoch last and no
  ``lr`` or ``step``: its ``loss`` is the evaluation's, the eval loss (read otherwise, it
  would be taken for the training loss). Its metrics name an energy or force threshold
  (``energy_forces_within_threshold``; ``energy_force_within_threshold`` before it was
  renamed; ``energy_within_threshold`` for IS2RE), which no other tool's line has.
- ``Runner`` logs ``Total time taken: <seconds>`` once ``task.run()`` has returned (training,
  then the test set's predictions): the run's end. Only behind OCP's own head: other scripts
  print the same words for other things.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native

_NUMBER = r"-?\d{1,12}(?:\.\d{1,12})?(?:e[-+]?\d{1,3})?"
# A validation's metrics: pairs "name: value", a threshold's among them, the epoch last.
_VALIDATION = re.compile(
    r"(?:^|\(INFO\): )(?:[a-z_]{1,64}: " + _NUMBER + r", ){1,40}epoch: " + _NUMBER + r"\s*$"
)
_LOSS = re.compile(r"(?:^|, |: )loss: (" + _NUMBER + r"),")
# Behind OCP's head, its time kept or taken with another logger's head before it.
_END = re.compile(r"(?:^|\d\d:\d\d:\d\d )\(INFO\): Total time taken: \d{1,9}\.\d{1,20}\s*$")


def parse_ocp(msg: str, now: float) -> LineReport | None:
    """An OCP validation's eval loss, or OCP's end; None for anything else."""
    if _END.search(msg) is not None:
        return native({"final": True}, now, "ocp")
    if "_within_threshold: " not in msg or " step: " in msg or " lr: " in msg:
        return None
    if _VALIDATION.search(msg) is None or (loss := _LOSS.search(msg)) is None:
        return None
    return native({"eval_loss": float(loss.group(1))}, now, "ocp")


FORMAT = Format("ocp", ("_within_threshold: ", "Total time taken: "), parse_ocp)
