"""A Transformers ``TrainerCallback`` reporting progress through :class:`ProgressReporter`.

    from training_progress_reporter.transformers import ProgressCallback
    trainer = Trainer(..., callbacks=[ProgressCallback()])

When Transformers' own ``KubeflowCallback`` is active (it enables itself wherever
``KUBEFLOW_TRAINER_SERVER_URL`` is set), this callback does not POST the same status again:
it leaves the Kubeflow channel to it and reports only through the other channels configured
(``TPE_REPORT_URL``, ``TPE_STATUS_FILE``), or stays silent.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from .channels import CHANNELS, ENV_REPORT_URL, ENV_STATUS_FILE
from .reporter import ProgressReporter

_KNOWN = {"loss", "learning_rate", "grad_norm", "eval_loss", "epoch"}


class ProgressCallback(TrainerCallback):  # type: ignore[misc]
    """Reports step, loss, learning rate, grad norm, eval loss and epoch from rank 0."""

    def __init__(self, **reporter_kwargs: Any) -> None:
        self.reporter_kwargs = reporter_kwargs
        self.reporter: ProgressReporter | None = None
        # The step that ended last and when (monotonic): Trainer saves after on_step_end and
        # calls on_save when done, so the time between is the save's (an evaluation due at
        # the same step counts too: an overestimate, which asks for the save earlier).
        self._step_ended: tuple[int, float] | None = None

    def _channels(self, args: TrainingArguments) -> list[str] | None:
        report_to = args.report_to or []
        requested: list[str] | None = self.reporter_kwargs.pop("channels", None)
        if "kubeflow" not in report_to:
            return requested
        import os

        # KubeflowCallback already reports to Kubeflow: only the other channels, if any.
        wanted = requested or [
            c
            for c, var in (("exporter", ENV_REPORT_URL), ("file", ENV_STATUS_FILE))
            if os.environ.get(var)
        ]
        return [c for c in wanted if c in CHANNELS and c != "kubeflow"]

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        channels = self._channels(args)
        if channels == []:
            return
        if not state.is_world_process_zero:
            # Reports come from rank 0; this rank only answers the exporter's stack requests.
            self.reporter = ProgressReporter(
                rank=max(1, int(args.process_index)), channels=channels, **self.reporter_kwargs
            )
            return
        model = kwargs.get("model")
        if model is not None and "flops_per_token" not in self.reporter_kwargs:
            with contextlib.suppress(Exception):  # 6 x parameters (docs/reporter.md)
                self.reporter_kwargs["model_parameters"] = int(
                    sum(p.numel() for p in model.parameters())
                )
        self.reporter = ProgressReporter(
            total_steps=state.max_steps or None,
            total_epochs=float(args.num_train_epochs) if args.num_train_epochs else None,
            framework="transformers",
            rank=0,
            channels=channels,
            **self.reporter_kwargs,
        )
        self.reporter.update(step=state.global_step)

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if self.reporter is None or not logs:
            return
        extra = {k: v for k, v in logs.items() if k not in _KNOWN and isinstance(v, int | float)}
        self.reporter.update(
            step=state.global_step,
            loss=logs.get("loss"),
            learning_rate=logs.get("learning_rate"),
            grad_norm=logs.get("grad_norm"),
            eval_loss=logs.get("eval_loss"),
            epoch=state.epoch,
            **extra,
        )

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if self.reporter is not None:
            self._step_ended = (state.global_step, time.monotonic())
            tokens = getattr(state, "num_input_tokens_seen", 0) or None  # include_num_input_...
            self.reporter.update(step=state.global_step, epoch=state.epoch, tokens=tokens)
            if self.reporter.should_checkpoint():
                # The exporter asked (deadline, eviction, annotation): Trainer saves now.
                control.should_save = True

    def on_save(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        """Trainer saved ``checkpoint-N`` (its save strategy, or a directive)."""
        if self.reporter is not None:
            ended = self._step_ended
            took = (
                time.monotonic() - ended[1]
                if ended is not None and ended[0] == state.global_step
                else None
            )
            self.reporter.checkpointed(step=state.global_step, seconds=took)

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if self.reporter is not None:
            self.reporter.update(step=state.global_step, epoch=state.epoch)
            self.reporter.finish()
