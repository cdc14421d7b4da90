"""Who writes a field of a Kubernetes object: ``metadata.managedFields`` read as the API
server keeps it (server-side apply), and the field manager the exporter writes as.

Write-back (exporter/sinks/writeback.py) leaves alone a TrainJob whose progress another
manager owns; the TrainJob source (exporter/sources/trainjob.py) does not read back as a
report what the exporter wrote itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .annotations import ODH_TRAINER_STATUS

FIELD_MANAGER = "training-progress-exporter"

# Where a TrainJob's progress lives, as a path of field names (fieldsV1 keys without "f:").
TRAINER_STATUS_PATH = ("status", "trainerStatus")
ODH_ANNOTATION_PATH = ("metadata", "annotations", ODH_TRAINER_STATUS)


def owners(obj: Mapping[str, Any], path: tuple[str, ...]) -> set[str]:
    """The field managers that own ``path`` or a field under it; empty when nobody does,
    or the object does not tell (no ``managedFields``)."""
    found: set[str] = set()
    meta = obj.get("metadata")
    entries = meta.get("managedFields") if isinstance(meta, Mapping) else None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping):
            continue
        node: Any = entry.get("fieldsV1")
        for name in path:
            node = node.get(f"f:{name}") if isinstance(node, Mapping) else None
        if node is not None:
            found.add(str(entry.get("manager") or "?"))
    return found


def written_by_us(obj: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    """Whether the exporter's own field manager, and nobody else, owns ``path``."""
    return owners(obj, path) == {FIELD_MANAGER}
