"""Who a projected service-account token belongs to, asked of the API server (TokenReview),
without letting a caller turn pushes into API-server load.

Only pods on the host network need this (their IP is the node's). Before, every push with a
new random token cost one TokenReview: 300 pushes, 300 reviews. Now:

* answers are cached per token (by its SHA-256, the token itself is not kept): accepted for
  ``ttl``, rejected for ``ttl`` too, so replaying a bad token costs nothing;
* tokens not in the cache are rate-limited per client address (a token bucket: ``burst``
  at once, then one every ``refill_seconds``): beyond it, 429 without asking the API server;
* a token the API server once accepted is known for ``known_ttl`` (a projected token lives
  an hour): when its cached answer expires it is reviewed again without meeting the
  limiter, so a flood of unknown tokens from the node's address (every host-network
  process shares it) cannot lock a known pod out;
* at most ``max_concurrent`` reviews are in flight; a push that would wait is told 503;
* an API error is not cached as a rejection (a legitimate pod is not locked out for
  minutes by one failed call); it answers 503, retry later.

Besides our own audience (``token_audience``), a push may name the audience Kubeflow Trainer
gives a TrainJob's pods for its status path (``trainer.kubeflow.org/v1alpha1/namespaces/
<ns>/trainjobs/<name>/status``): a pod that sends the token the Trainer gave it is accepted,
and the answer says which audience matched, so the caller allows it for that job only.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from ..plumbing.discovery import ApiFactory

Identity = tuple[str, str, str]  # (namespace, pod name, the audience the token matched)

REJECTED = "token_rejected"
RATE_LIMITED = "review_rate_limited"
UNAVAILABLE = "review_unavailable"

V = TypeVar("V")


class TokenBuckets:
    """One token bucket per key, the least recently used dropped beyond ``max_keys``."""

    def __init__(self, burst: float, refill_seconds: float, max_keys: int = 4096) -> None:
        self.burst = burst
        self.refill_seconds = refill_seconds
        self.max_keys = max_keys
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, key: str, now: float) -> bool:
        """Spend one token of ``key``'s bucket; False when it is empty. Not thread-safe."""
        tokens, at = self._buckets.pop(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - at) / self.refill_seconds)
        ok = tokens >= 1.0
        self._buckets[key] = (tokens - 1.0 if ok else tokens, now)
        while len(self._buckets) > self.max_keys:
            self._buckets.popitem(last=False)
        return ok


class ReviewGate(Generic[V]):
    """What every review asked of the API server shares (TokenReview here, TokenReview plus
    SubjectAccessReview in :mod:`exporter.kubernetes.accessreview`): answers cached by digest
    for ``ttl``, at most ``max_cached`` of them (least recently stored dropped first); asks not
    in the cache rate-limited per client address; at most ``max_concurrent`` in flight."""

    def __init__(
        self,
        ttl: float,
        clock: Callable[[], float],
        burst: float,
        refill_seconds: float,
        max_concurrent: int,
        max_cached: int,
    ) -> None:
        self.ttl = ttl
        self.clock = clock
        self.max_cached = max_cached
        self.reviews = 0  # asks made of the API server
        self.lock = threading.Lock()
        self._cache: OrderedDict[bytes, tuple[float, V]] = OrderedDict()
        self._buckets = TokenBuckets(burst, refill_seconds)
        self._inflight = threading.BoundedSemaphore(max_concurrent)

    def ask(
        self,
        digest: bytes,
        client_ip: str,
        review: Callable[[], V | None],
        unlimited: Callable[[float], bool] = lambda now: False,
    ) -> V | str:
        """The cached answer for ``digest``, else ``review()``'s (cached unless it is None:
        the API server could not be asked), or :data:`RATE_LIMITED` when the client's
        bucket is empty and ``unlimited(now)`` (read under :attr:`lock`) does not exempt it,
        or :data:`UNAVAILABLE` when too many reviews are in flight or it could not answer."""
        now = self.clock()
        with self.lock:
            hit = self._cache.get(digest)
            if hit is not None and hit[0] > now:
                return hit[1]
            if not unlimited(now) and not self._buckets.take(client_ip, now):
                return RATE_LIMITED
        if not self._inflight.acquire(timeout=1.0):
            return UNAVAILABLE
        try:
            self.reviews += 1
            answer = review()
        finally:
            self._inflight.release()
        if answer is None:
            return UNAVAILABLE
        with self.lock:
            self._cache[digest] = (now + self.ttl, answer)
            self._cache.move_to_end(digest)
            while len(self._cache) > self.max_cached:
                self._cache.popitem(last=False)
        return answer


class TokenReview:
    """Callable ``(token, client_ip) -> (namespace, pod) | reason``; see the module doc."""

    POD_NAME = "authentication.kubernetes.io/pod-name"

    def __init__(
        self,
        auth_api: ApiFactory,
        audience: str,
        ttl: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        burst: float = 10.0,
        refill_seconds: float = 6.0,
        max_concurrent: int = 2,
        max_cached: int = 10_000,
        known_ttl: float = 2 * 3600.0,
    ) -> None:
        self.auth_api = auth_api
        self.audience = audience
        self.known_ttl = known_ttl
        self._gate: ReviewGate[Identity | str] = ReviewGate(
            ttl, clock, burst, refill_seconds, max_concurrent, max_cached
        )
        # digest -> until when the token is known good (accepted once): kept apart from the
        # answers, so rejected tokens can never push a good one out.
        self._known: OrderedDict[bytes, float] = OrderedDict()

    @property
    def reviews(self) -> int:
        """TokenReviews asked of the API server."""
        return self._gate.reviews

    def __call__(self, token: str, client_ip: str = "", job_audience: str = "") -> Identity | str:
        """Who ``token`` belongs to, reviewed for our audience and ``job_audience`` (the
        Kubeflow audience of the job the push names, if any), or a drop reason."""
        digest = hashlib.sha256(
            token.encode("utf-8", "surrogateescape") + b"\0" + job_audience.encode()
        ).digest()
        return self._gate.ask(
            digest,
            client_ip,
            lambda: self._remembered(digest, self._review(token, job_audience)),
            lambda now: self._known.get(digest, 0.0) > now,
        )

    def _remembered(self, digest: bytes, result: Identity | str) -> Identity | str | None:
        """``result`` of a fresh review, its token remembered as known (or forgotten, once
        rejected); None when the API server could not answer."""
        if result == UNAVAILABLE:
            return None
        with self._gate.lock:
            if isinstance(result, tuple):
                self._known[digest] = self._gate.clock() + self.known_ttl
                self._known.move_to_end(digest)
                while len(self._known) > self._gate.max_cached:
                    self._known.popitem(last=False)
            else:
                self._known.pop(digest, None)  # revoked: no longer known
        return result

    def _review(self, token: str, job_audience: str) -> Identity | str:
        wanted = [self.audience, *([job_audience] if job_audience else [])]
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token, "audiences": wanted},
        }
        try:
            resp = self.auth_api().create_token_review(
                body, _preload_content=False, _request_timeout=10
            )
            status = json.loads(resp.data).get("status") or {}
        except Exception:  # any API failure: say so, do not cache it as a rejection
            return UNAVAILABLE
        user = status.get("user") or {}
        username = str(user.get("username", ""))
        pods = (user.get("extra") or {}).get(self.POD_NAME) or []
        # The API server answers the audiences of the token among those asked (none: its
        # own default audiences, which is ours when it was asked for ours alone).
        matched = [a for a in wanted if a in (status.get("audiences") or [self.audience])]
        if not status.get("authenticated") or not matched:
            return REJECTED
        parts = username.split(":")
        if len(parts) != 4 or parts[:2] != ["system", "serviceaccount"] or len(pods) != 1:
            return REJECTED
        return parts[2], str(pods[0]), matched[0]
