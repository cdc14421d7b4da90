"""Whether a caller may read a run's source lines: its bearer token's user, asked of the API
server (TokenReview, then SubjectAccessReview for ``get pods`` in the run's namespace), as
kube-rbac-proxy authorizes a read.

A stack's frames carry the source line of each (``API_KEY = 'sk-live-...'`` is a source
line): code that runs in a namespace is readable by whoever may read that namespace's pods
(``kubectl debug``, ``kubectl cp`` need no more), and by nobody else. The answers are cached
per (token, namespace), by the token's SHA-256 (the token itself is not kept), allowed and
denied alike for ``ttl``; tokens not in the cache are rate-limited per client address and
at most ``max_concurrent`` reviews are in flight, as for pushes
(:mod:`exporter.kubernetes.tokenreview`): a flood of random tokens costs the API server a
few reviews. An API error is not cached: that caller is refused this once.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

from ..plumbing.discovery import ApiFactory
from .tokenreview import ReviewGate
from .watch import PodRegistry


class AccessReview:
    """Callable ``(token, namespace, client_ip) -> bool``: may the token's user get pods
    in ``namespace``; see the module doc."""

    def __init__(
        self,
        auth_api: ApiFactory,
        authz_api: ApiFactory,
        ttl: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        burst: float = 10.0,
        refill_seconds: float = 6.0,
        max_concurrent: int = 2,
        max_cached: int = 10_000,
    ) -> None:
        self.auth_api = auth_api
        self.authz_api = authz_api
        self._gate: ReviewGate[bool] = ReviewGate(
            ttl, clock, burst, refill_seconds, max_concurrent, max_cached
        )

    @property
    def reviews(self) -> int:
        """TokenReview and SubjectAccessReview pairs asked of the API server."""
        return self._gate.reviews

    def __call__(self, token: str, namespace: str, client_ip: str = "") -> bool:
        """May the token's user get pods in ``namespace``."""
        attributes = {
            "resourceAttributes": {"namespace": namespace, "verb": "get", "resource": "pods"}
        }
        return self._allowed(token, attributes, client_ip)

    def may_get_path(self, token: str, path: str, client_ip: str = "") -> bool:
        """May the token's user get the non-resource URL ``path`` (``/metrics``): what
        kube-rbac-proxy asks before a read of a node exporter."""
        return self._allowed(
            token, {"nonResourceAttributes": {"path": path, "verb": "get"}}, client_ip
        )

    def _allowed(self, token: str, attributes: dict[str, Any], client_ip: str) -> bool:
        digest = hashlib.sha256(
            token.encode("utf-8", "surrogateescape")
            + b"\0"
            + json.dumps(attributes, sort_keys=True).encode()
        ).digest()
        return self._gate.ask(digest, client_ip, lambda: self._review(token, attributes)) is True

    def _review(self, token: str, attributes: dict[str, Any]) -> bool | None:
        """True or False from the API server; None when it could not be asked."""
        try:
            resp = self.auth_api().create_token_review(
                {
                    "apiVersion": "authentication.k8s.io/v1",
                    "kind": "TokenReview",
                    # No audiences: the API server's own, those of a token kubectl sends.
                    "spec": {"token": token},
                },
                _preload_content=False,
                _request_timeout=10,
            )
            status = json.loads(resp.data).get("status") or {}
            if not status.get("authenticated"):
                return False
            user: dict[str, Any] = status.get("user") or {}
            resp = self.authz_api().create_subject_access_review(
                {
                    "apiVersion": "authorization.k8s.io/v1",
                    "kind": "SubjectAccessReview",
                    "spec": {
                        "user": user.get("username", ""),
                        "groups": user.get("groups") or [],
                        "uid": user.get("uid", ""),
                        "extra": user.get("extra") or {},
                        **attributes,
                    },
                },
                _preload_content=False,
                _request_timeout=10,
            )
            return bool((json.loads(resp.data).get("status") or {}).get("allowed"))
        except Exception:  # any API failure: say so, do not cache it
            return None


class KubernetesCodeReader:
    """Kubernetes mode: the run's own pod (recognized by its IP, as its pushes are; not a
    host-network pod, whose IP is the node's), or a bearer token whose user may get pods
    in the run's namespace (:class:`AccessReview`)."""

    may_block = True  # a token may be reviewed by the API server

    def __init__(self, registry: PodRegistry, review: AccessReview | None) -> None:
        self.registry = registry
        self.review = review

    def may_read(self, namespace: str, pod: str, client_ip: str, authorization: str | None) -> bool:
        pods = self.registry.by_ip(client_ip)
        own = len(pods) == 1 and not pods[0].host_network and not pods[0].finished
        if own and (pods[0].namespace, pods[0].name) == (namespace, pod):
            return True
        if self.review is None or not (authorization or "").startswith("Bearer "):
            return False
        token = (authorization or "")[len("Bearer ") :].strip()
        return bool(token) and self.review(token, namespace, client_ip)


class ReadGuard:
    """``read_authorization``: every read but the probes needs a bearer token whose user may
    get the path asked (a SubjectAccessReview on the non-resource URL, cached and
    rate-limited as the reviews above). Returns the HTTP status to refuse with (401 without
    a token, 403 when the API server says no or cannot say), or None to go on."""

    def __init__(self, review: AccessReview) -> None:
        self.review = review

    def __call__(self, path: str, client_ip: str, authorization: str | None) -> int | None:
        token = (authorization or "")[len("Bearer ") :].strip()
        if not (authorization or "").startswith("Bearer ") or not token:
            return 401
        return None if self.review.may_get_path(token, path, client_ip) else 403
