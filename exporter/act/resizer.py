"""A resize, in order: ask the run for a checkpoint, wait until one newer than the request
is seen, then change the job's size. Nothing is changed without that checkpoint: a
membership change restarts every worker from the last one.

The sequence runs apart from the webhook (a wait of minutes must not hold Alertmanager's
request); each step is recorded through the callbacks the controller gives (Events on the
job, ``training_exporter_actions_total{action="scale"}``). Time and sleeping are passed in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

POLL_SECONDS = 5.0


@dataclass
class ResizeSteps:
    """What one resize does, as callables (the controller binds them to the cluster)."""

    ask_checkpoint: Callable[[str], None]  # set the checkpoint annotation to this value
    newest_checkpoint: Callable[[], float | None]  # the job's newest checkpoint time seen
    apply: Callable[[], None]  # the change itself (raises on failure)
    record: Callable[[str, str, bool], None]  # (outcome, message, warning): Event and count


def run_resize(
    steps: ResizeSteps,
    what: str,
    wait: float,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    poll: float = POLL_SECONDS,
) -> str:
    """Ask, wait (at most ``wait`` seconds), change; returns the outcome recorded:
    ``taken``, ``no_checkpoint`` or ``failed``."""
    asked = clock()
    try:
        steps.ask_checkpoint(f"act-{asked:.0f}")
    except Exception as err:
        steps.record("failed", f"could not ask for a checkpoint before {what}: {err}", True)
        return "failed"
    deadline = asked + wait
    seen = None
    while True:
        newest = steps.newest_checkpoint()
        if newest is not None and newest > asked:
            seen = newest
            break
        if clock() >= deadline:
            break
        sleep(min(poll, max(0.0, deadline - clock())))
    if seen is None:
        message = (
            f"no checkpoint newer than the request was seen within {wait:.0f} s: "
            f"not resized ({what} would restart the workers from an old checkpoint)"
        )
        steps.record("no_checkpoint", message, True)
        return "no_checkpoint"
    try:
        steps.apply()
    except Exception as err:
        steps.record("failed", f"checkpoint seen, then could not {what}: {err}", True)
        return "failed"
    steps.record("taken", f"{what} after the checkpoint of {seen - asked:.0f} s after asking", True)
    return "taken"
