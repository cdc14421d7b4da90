"""What the launcher and the devices say about this process: its global rank and the GPUs
it sees, read from the environment (and from torch or jax only when the training code has
already imported them: importing them here would cost seconds). Standard library only."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

# Rank variables, in the order they are trusted: torchrun/DeepSpeed/Accelerate, Open MPI,
# MPICH/Intel MPI, SLURM. LOCAL_RANK with GROUP_RANK/NODE_RANK is a fallback for launchers
# that set only those.
_RANK_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "JAX_PROCESS_ID")


def global_rank(environ: Mapping[str, str] | None = None) -> int:
    """This process's global rank from the launcher's environment (0 when not distributed)."""
    env = os.environ if environ is None else environ
    for name in _RANK_VARS:
        value = env.get(name)
        if value is not None and value.strip().lstrip("-").isdigit():
            return int(value)
    if "LOCAL_RANK" in env:
        node = env.get("GROUP_RANK", env.get("NODE_RANK", "0"))
        if node.isdigit() and env["LOCAL_RANK"].isdigit():
            return 0 if int(node) == 0 and int(env["LOCAL_RANK"]) == 0 else 1
    jax = sys.modules.get("jax")
    if jax is not None:
        try:
            return int(jax.process_index())
        except Exception:  # jax imported but not initialized: not our business
            return 0
    return 0


def detect_gpus(environ: Mapping[str, str]) -> float | None:
    """The GPUs this process sees: ``CUDA_VISIBLE_DEVICES`` (a list of devices, up to the
    first invalid one as CUDA reads it; empty means none), else torch's device count when
    torch is already imported (never imported here: it costs seconds). None when unknown."""
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        count = 0
        for item in visible.split(","):
            item = item.strip()
            if not item or item.startswith("-"):
                break
            count += 1
        return float(count)
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            return float(torch.cuda.device_count()) if torch.cuda.is_available() else 0.0
        except Exception:  # a broken CUDA install is not our business
            return None
    return None


def detect_gpu_model() -> str | None:
    """The first visible GPU's name (``NVIDIA H100 80GB HBM3``) when torch is already
    imported and sees CUDA; None otherwise (never imports torch)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if torch.cuda.is_available() and torch.cuda.device_count() > 0:
            return str(torch.cuda.get_device_name(0))
    except Exception:  # a broken CUDA install is not our business
        return None
    return None
