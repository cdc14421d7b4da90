"""A Lightning ``Callback`` reporting progress through :class:`ProgressReporter`.

    from training_progress_reporter.lightning import ProgressCallback
    trainer = lightning.Trainer(..., callbacks=[ProgressCallback()])

Reads ``trainer.global_step``, ``trainer.estimated_stepping_batches`` and the logged metrics
(``trainer.callback_metrics``: ``train_loss``/``loss``, ``val_loss``, anything numeric).
"""

from __future__ import annotations

import math
import os
from typing import Any

import lightning

from .reporter import ProgressReporter

_LOSS_KEYS = ("train_loss", "loss", "train_loss_step")
_EVAL_KEYS = ("val_loss", "eval_loss", "valid_loss")


def _scalar(value: Any) -> float | None:
    try:
        number = float(value.item() if hasattr(value, "item") else value)
    except (TypeError, ValueError, RuntimeError):
        return None
    return number


class ProgressCallback(lightning.Callback):  # type: ignore[misc]
    """Reports from global rank 0 only (Lightning's ``trainer.is_global_zero``)."""

    def __init__(self, **reporter_kwargs: Any) -> None:
        super().__init__()
        self.reporter_kwargs = reporter_kwargs
        self.reporter: ProgressReporter | None = None

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        if not trainer.is_global_zero:
            # Reports come from rank 0; this rank only answers the exporter's stack requests.
            self.reporter = ProgressReporter(
                rank=max(1, int(trainer.global_rank)), **self.reporter_kwargs
            )
            return
        total = trainer.estimated_stepping_batches
        self.reporter = ProgressReporter(
            total_steps=int(total) if total and math.isfinite(total) else None,
            total_epochs=float(trainer.max_epochs)
            if trainer.max_epochs and trainer.max_epochs > 0
            else None,
            framework="lightning",
            rank=0,
            **self.reporter_kwargs,
        )

    def _report(self, trainer: Any) -> None:
        if self.reporter is None:
            return
        metrics = {k: _scalar(v) for k, v in trainer.callback_metrics.items()}
        loss = next((metrics[k] for k in _LOSS_KEYS if metrics.get(k) is not None), None)
        eval_loss = next((metrics[k] for k in _EVAL_KEYS if metrics.get(k) is not None), None)
        extra = {
            k: v
            for k, v in metrics.items()
            if v is not None and k not in _LOSS_KEYS and k not in _EVAL_KEYS and len(k) <= 64
        }
        self.reporter.update(
            step=trainer.global_step,
            loss=loss,
            eval_loss=eval_loss,
            epoch=trainer.current_epoch,
            **extra,
        )

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        self._report(trainer)
        if self.reporter is not None and self.reporter.should_checkpoint():
            # The exporter asked (deadline, eviction, annotation): save through the trainer.
            path = os.path.join(
                trainer.default_root_dir,
                "checkpoints",
                f"directive-step={trainer.global_step}.ckpt",
            )
            trainer.save_checkpoint(path)

    def on_save_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: Any) -> None:
        """A checkpoint is being saved (ModelCheckpoint, or trainer.save_checkpoint)."""
        if self.reporter is not None:
            self.reporter.checkpointed(step=trainer.global_step)

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        self._report(trainer)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if self.reporter is not None:
            self._report(trainer)
            self.reporter.finish()
