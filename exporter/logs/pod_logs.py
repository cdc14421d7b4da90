"""Kubernetes mode: which log file is each training pod's current container log.

The kubelet writes ``<root>/<namespace>_<pod>_<uid>/<container>/<restart>.log`` (CRI lines);
the log source tails what :func:`pod_log_targets` names.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from ..core.model import ReportError, RunKey, RunMeta
from ..plumbing.discovery import PodInfo
from ..plumbing.hostfs import open_dir_chain
from .source import Targets

_RESTART_LOG = re.compile(r"^(\d+)\.log$")


def pod_log_targets(
    root: str, pods: Callable[[], list[PodInfo]], meta: Callable[[PodInfo], RunMeta]
) -> Targets:
    """Kubernetes mode: each training pod's current container log under ``root``
    (``<namespace>_<pod>_<uid>/<container>/<restart>.log``, the highest restart number; the
    kubelet's rotated ``N.log.<time>`` and gzipped files are not followed, and a rotation is
    drained by the tail itself). Directories on the way must not be symlinks."""

    def targets() -> dict[str, tuple[RunKey, RunMeta]]:
        out: dict[str, tuple[RunKey, RunMeta]] = {}
        for pod in pods():
            if pod.finished or not pod.container or "/" in pod.container or "/" in pod.uid:
                continue
            parts = [f"{pod.namespace}_{pod.name}_{pod.uid}", pod.container]
            try:
                fd = open_dir_chain(root, parts)
            except ReportError:
                continue
            try:
                numbers = [int(m.group(1)) for n in os.listdir(fd) if (m := _RESTART_LOG.match(n))]
            finally:
                os.close(fd)
            if numbers:
                path = os.path.join(root, *parts, f"{max(numbers)}.log")
                out[path] = (RunKey(pod.namespace, pod.name, pod.job_name), meta(pod))
        return out

    return targets
