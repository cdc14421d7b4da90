"""Kubernetes mode, for very large clusters: the node's pods from the local kubelet's
``/pods`` endpoint instead of an API server watch.

Polling the kubelet puts no load on the API server at all (see docs/scaling.md for when to
pick it). The kubelet authorizes ``/pods`` as ``nodes/proxy``, a broad permission, so this is
opt-in (``discovery: kubelet``) and the RBAC for it lives in its own overlay patch.
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
import urllib.request

from ..plumbing.fetch import direct_opener
from .owners import PodReader
from .watch import PodRegistry

log = logging.getLogger(__name__)
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
MAX_BODY = 64 * 1024 * 1024  # a node's PodList; bounded all the same


class KubeletPoller:
    """Replaces the registry's pods with the kubelet's every ``interval`` seconds."""

    def __init__(
        self,
        url: str,
        registry: PodRegistry,
        reader: PodReader,
        interval: float = 10.0,
        token_path: str = SERVICE_ACCOUNT_TOKEN,
        ca_path: str = "",
        timeout: float = 10.0,
    ) -> None:
        self.url = url.rstrip("/") + "/pods"
        self.registry = registry
        self.interval = interval
        self.token_path = token_path
        self.ca_path = ca_path
        self.reader = reader
        self.timeout = timeout
        self.synced = threading.Event()
        self.healthy = False
        self.last_error = ""
        self._stop = threading.Event()

    def _context(self) -> ssl.SSLContext | None:
        if not self.url.startswith("https://"):
            return None
        if self.ca_path:
            return ssl.create_default_context(cafile=self.ca_path)
        # Kubelet serving certificates are often self-signed: without a CA, the connection is
        # encrypted but the kubelet is not verified (documented in docs/scaling.md).
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context

    def poll(self) -> None:
        headers = {"Accept": "application/json"}
        try:
            with open(self.token_path, encoding="utf-8") as fh:
                headers["Authorization"] = "Bearer " + fh.read().strip()
        except OSError:
            pass  # an unauthenticated kubelet (read-only port, tests)
        req = urllib.request.Request(self.url, headers=headers)
        opener = direct_opener(urllib.request.HTTPSHandler(context=self._context()))
        with opener.open(req, timeout=self.timeout) as resp:
            body = resp.read(MAX_BODY + 1)
        if len(body) > MAX_BODY:
            raise ValueError("kubelet /pods answer exceeds 64 MiB")
        doc = json.loads(body)
        pods = [self.reader.read(p) for p in doc.get("items") or []]
        self.registry.replace_all([p for p in pods if p is not None], set(self.reader.pending))
        self.synced.set()

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
                self.healthy = True
            except Exception as exc:  # unreachable, 401/403, bad JSON: keep the last state
                self.healthy = False
                self.last_error = f"kubelet: {exc.__class__.__name__}: {exc}"[:200]
                log.warning("pod discovery: %s; serving the last known pods", self.last_error)
            self._stop.wait(self.interval)

    def start(self) -> None:
        threading.Thread(target=self.run, name="kubelet-poller", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def ready(self) -> tuple[bool, str]:
        if not self.synced.is_set():
            return False, "starting: kubelet pods not read yet"
        if not self.healthy:
            return (
                True,
                f"degraded: {self.last_error}; serving the last known {len(self.registry)} pods",
            )
        return True, f"ok: {len(self.registry)} training pods from the kubelet"
