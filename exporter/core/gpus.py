"""Dense BF16 peak throughput per GPU model: the denominator of MFU.

MFU (model FLOPs utilization) = tokens/s x the model's training FLOPs per token / (GPUs x
one GPU's peak). The peak is the dense (no structured sparsity) BF16 tensor-core figure of
NVIDIA's datasheet for each model; datasheets that give only the sparse figure are halved,
as their footnotes say the dense one is. Exported beside MFU as ``training_gpu_peak_flops``
so anyone can check the division. Pure: a name in, a number out.
"""

from __future__ import annotations

import functools
import re

# (what the model's name contains, lower case, "-" and "_" as spaces; FLOP/s; source). The
# first match wins: a longer name before the one it contains (A100 before A10).
PEAKS: tuple[tuple[str, float, str], ...] = (
    ("b200", 2.25e15, "NVIDIA HGX B200 datasheet: BF16 4.5 PFLOPS sparse per GPU, 2.25 dense"),
    ("h200", 989e12, "NVIDIA H200 datasheet: BF16 1,979 TFLOPS with sparsity"),
    ("h100 pcie", 756e12, "NVIDIA H100 datasheet, PCIe: BF16 1,513 TFLOPS with sparsity"),
    ("h100 nvl", 835e12, "NVIDIA H100 datasheet, NVL: BF16 1,671 TFLOPS with sparsity"),
    ("h100", 989e12, "NVIDIA H100 datasheet, SXM: BF16 1,979 TFLOPS with sparsity"),
    ("a100", 312e12, "NVIDIA A100 datasheet: BF16 312 TFLOPS (624 with sparsity)"),
    ("l40s", 362e12, "NVIDIA L40S datasheet: BF16 362.05 TFLOPS (733 with sparsity)"),
    ("l4", 121e12, "NVIDIA L4 datasheet: BF16 242 TFLOPS with sparsity"),
    ("a10", 125e12, "NVIDIA A10 datasheet: BF16 125 TFLOPS (250 with sparsity)"),
)
_SEP = re.compile(r"[-_\s]+")


@functools.lru_cache(maxsize=64)  # read at every snapshot of every run: a handful of names
def peak_flops(model: str | None) -> float | None:
    """One GPU's dense BF16 peak in FLOP/s for a model name as the node label
    ``nvidia.com/gpu.product`` (``NVIDIA-H100-80GB-HBM3``) or ``torch.cuda.get_device_name``
    (``NVIDIA H100 80GB HBM3``) gives it; None for a model not in :data:`PEAKS`."""
    if not model:
        return None
    name = _SEP.sub(" ", model.lower())
    for needle, flops, _ in PEAKS:
        if re.search(rf"\b{re.escape(needle)}\b", name):
            return flops
    return None


def mfu(
    tokens_per_second: float | None,
    flops_per_token: float | None,
    gpus: float,
    peak: float | None,
) -> float | None:
    """Model FLOPs utilization, 0..1; None when any part is unknown, or when the quotient is
    no ratio: above 1 (no GPU runs past its peak: the FLOPs per token or the GPU count is
    wrong, as a report of 1e-300 GPUs is) or not finite."""
    if tokens_per_second is None or flops_per_token is None or peak is None or gpus <= 0:
        return None
    ratio = tokens_per_second * flops_per_token / (gpus * peak)
    return ratio if 0.0 <= ratio <= 1.0 else None
