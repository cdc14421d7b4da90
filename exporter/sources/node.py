"""Kubernetes mode: whether this node is cordoned, the first step of a drain; and its GPU
model (the ``nvidia.com/gpu.product`` label), for MFU.

``kubectl drain`` marks the node unschedulable, then evicts its pods. The evictions give each
training pod a deletionTimestamp (and its run a checkpoint directive); the cordon comes
earlier, so the runs on the node are asked to save while there is still time. Read with
GET on the node object (RBAC: ``nodes`` ``get``), at most every MIN_INTERVAL seconds.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from ..kubernetes.client import api_reason, api_status
from ..plumbing.ingest import Ingestor

NAME = "node"
MIN_INTERVAL = 10.0
log = logging.getLogger(__name__)


# GPU Feature Discovery's label of the node's GPU model (NVIDIA GPU Operator), e.g.
# NVIDIA-H100-80GB-HBM3: the peak that MFU divides by (exporter.core.gpus).
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"


def gpu_product(node: dict[str, Any]) -> str | None:
    """The node's GPU model from its labels, or None."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    value = labels.get(GPU_PRODUCT_LABEL) if isinstance(labels, dict) else None
    return value[:64] if isinstance(value, str) and value else None


def cordoned(node: dict[str, Any]) -> bool:
    """Whether the node object says it is unschedulable."""
    return bool((node.get("spec") or {}).get("unschedulable"))


class NodeSource:
    """Polls this node's object; tells the ingestor when its cordon changes."""

    name = NAME

    def __init__(
        self,
        core_api: Callable[[], Any],
        node: str,
        ingestor: Ingestor,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.core_api = core_api
        self.node = node
        self.ingestor = ingestor
        self.monotonic = monotonic
        self._next = 0.0
        self._denied = False

    def poll(self) -> None:
        if self.monotonic() < self._next:
            return
        self._next = self.monotonic() + MIN_INTERVAL
        try:
            response = self.core_api().read_node(
                self.node, _preload_content=False, _request_timeout=10
            )
            obj = json.loads(response.data)
        except Exception as exc:
            status = api_status(exc)
            if status == 404:  # no such node object (a stand-in API): nothing cordoned
                self.ingestor.node_cordoned(self.node, False)
                self.ingestor.source_up(NAME, True)
                return
            if status == 403 and not self._denied:
                self._denied = True  # an older RBAC without nodes/get: the rest still works
                log.warning(
                    "cannot read node %s (%s): cordons are not seen", self.node, api_reason(exc)
                )
            self.ingestor.source_up(NAME, False)
            return
        node = obj if isinstance(obj, dict) else {}
        self.ingestor.node_cordoned(self.node, cordoned(node))
        self.ingestor.node_gpu_model(self.node, gpu_product(node))
        self.ingestor.source_up(NAME, True)
