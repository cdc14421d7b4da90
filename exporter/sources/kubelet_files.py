"""Kubernetes mode: status files written by training pods into an emptyDir volume, read
through the kubelet's pods directory on the host (mounted read-only into the exporter).

The path is ``ROOT/pods/<pod uid>/volumes/kubernetes.io~empty-dir/<volume>/<file>``, where the
volume and file are named by the pod's annotations. Every directory on the way is opened
relative to the previous one with ``O_NOFOLLOW``: a symlink anywhere (say, the volume
replaced by a link to ``/etc``) is refused, never followed; the file itself must be a regular
file under the size cap (see :func:`exporter.plumbing.hostfs.read_regular_file`).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ..core.model import KUBEFLOW_MAX_BODY_BYTES, ReportError, RunKey, RunMeta
from ..core.wire import parse_bytes
from ..plumbing.discovery import PodInfo
from ..plumbing.hostfs import open_dir_chain, read_regular_file
from ..plumbing.ingest import Ingestor

NAME = "file"
EMPTY_DIR = "kubernetes.io~empty-dir"


class KubeletFileSource:
    """Reads the annotated status file of every training pod on this node."""

    name = NAME

    def __init__(
        self,
        root: str,
        pods: Callable[[], list[PodInfo]],
        meta: Callable[[PodInfo], RunMeta],
        ingestor: Ingestor,
        max_bytes: int = KUBEFLOW_MAX_BODY_BYTES,
    ) -> None:
        self.root = root
        self.pods = pods
        self.meta = meta
        self.ingestor = ingestor
        self.max_bytes = max_bytes
        self._seen: dict[str, tuple[int, int, int]] = {}

    def poll(self) -> None:
        for pod in self.pods():
            if pod.status_file is None or not pod.uid or "/" in pod.uid or pod.uid in (".", ".."):
                continue
            self._read(pod, *pod.status_file)
        self.ingestor.source_up(NAME, True)

    def _read(self, pod: PodInfo, volume: str, filename: str) -> None:
        try:
            dir_fd = open_dir_chain(self.root, ["pods", pod.uid, "volumes", EMPTY_DIR, volume])
        except ReportError as err:
            if err.reason != "unreadable":  # a file not written yet is not an error
                self.ingestor.reject(NAME, err)
            return
        try:
            try:
                st = os.stat(filename, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:
                return
            seen = (st.st_ino, st.st_size, st.st_mtime_ns)
            if self._seen.get(pod.uid) == seen:
                return
            self._seen[pod.uid] = seen
            body = read_regular_file(dir_fd, filename, self.max_bytes)
            parsed = parse_bytes(body, self.ingestor.clock(), self.max_bytes)
        except ReportError as err:
            self.ingestor.reject(NAME, err)
            return
        finally:
            os.close(dir_fd)
        self.ingestor.accept(
            NAME, RunKey(pod.namespace, pod.name, pod.job_name), parsed, self.meta(pod)
        )
