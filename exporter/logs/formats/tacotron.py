"""``tacotron``: NVIDIA's Tacotron 2 ``train.py`` (and the forks that keep its loop: Mellotron,
the many voice-cloning repositories built on it), whose lines put the iteration between the
loss's name and its value::

    Train loss 64999 0.314525 Grad Norm 0.615372 4.37s/it
    Validation loss 64000:  0.323265

(``print("Train loss {} {:.6f} Grad Norm {:.6f} {:.2f}s/it".format(iteration, reduced_loss,
grad_norm, duration))``, the iteration as counted from 0, read as printed like the other
counters; ``print("Validation loss {}: {:9f}  ".format(iteration, val_loss))`` on rank 0.)
Its save line, ``Saving model and optimizer state at iteration N to PATH``, is read by
:mod:`.checkpoints`.
"""

from __future__ import annotations

import re

from ..lines import Format, LineReport, native
from .pairs import PRINTF_NUMBER

_TRAIN = re.compile(
    rf"^\s*Train loss (?P<i>\d{{1,15}}) (?P<loss>{PRINTF_NUMBER}) Grad Norm "
    rf"(?P<grad>{PRINTF_NUMBER}) {PRINTF_NUMBER}s/it\s*$"
)
_VALIDATION = re.compile(rf"^\s*Validation loss \d{{1,15}}:\s+(?P<loss>{PRINTF_NUMBER})\s*$")


def parse_tacotron(msg: str, now: float) -> LineReport | None:
    if (train := _TRAIN.match(msg)) is not None:
        doc: dict[str, object] = {
            "step": int(train["i"]),
            "loss": float(train["loss"]),
            "grad_norm": float(train["grad"]),
        }
        return native(doc, now, "tacotron")
    if (validation := _VALIDATION.match(msg)) is not None:
        return native({"eval_loss": float(validation["loss"])}, now, "tacotron")
    return None


FORMAT = Format("tacotron", ("Train loss ", "Validation loss "), parse_tacotron)
