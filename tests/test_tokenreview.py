"""TokenReview bounds: buckets per address, no caching of API failures."""

from __future__ import annotations

import os
from typing import Any

import kubernetes

from exporter.kubernetes.tokenreview import (
    RATE_LIMITED,
    REJECTED,
    UNAVAILABLE,
    TokenBuckets,
    TokenReview,
)


def test_a_bucket_allows_its_burst_then_one_per_refill_per_address() -> None:
    buckets = TokenBuckets(burst=3, refill_seconds=10)
    assert [buckets.take("10.0.0.1", 0.0) for _ in range(4)] == [True, True, True, False]
    assert buckets.take("10.0.0.2", 0.0)  # another address has its own bucket
    assert not buckets.take("10.0.0.1", 9.0)
    assert buckets.take("10.0.0.1", 10.5)
    assert not buckets.take("10.0.0.1", 10.6)


def test_the_least_recently_used_addresses_are_forgotten_beyond_the_bound() -> None:
    buckets = TokenBuckets(burst=1, refill_seconds=1000, max_keys=2)
    assert buckets.take("a", 0.0) and buckets.take("b", 0.0) and buckets.take("c", 0.0)
    assert buckets.take("a", 0.0)  # "a" was dropped, so it starts full again
    assert not buckets.take("c", 0.0)


def test_an_unreachable_api_server_is_unavailable_not_a_cached_rejection() -> None:
    config = kubernetes.client.Configuration()
    config.host = "http://127.0.0.1:9"  # nothing listens: the real client fails to connect
    config.retries = 0
    api = kubernetes.client.AuthenticationV1Api(kubernetes.client.ApiClient(config))
    now = [0.0]
    review = TokenReview(lambda: api, "aud", clock=lambda: now[0], burst=2, refill_seconds=60)
    assert review("tok", "10.0.0.1") == UNAVAILABLE
    assert review("tok", "10.0.0.1") == UNAVAILABLE  # asked again: the failure was not cached
    assert review.reviews == 2
    assert review("tok", "10.0.0.1") == RATE_LIMITED  # but the address's burst is spent
    assert review.reviews == 2


def test_a_flood_of_unknown_tokens_cannot_lock_out_a_known_token_from_its_address(
    kube: Any,
) -> None:
    """Every host-network process shares the node's address: a process flooding random
    tokens spends the address's bucket, and the legitimate pod's token, once its cached
    answer expires, is reviewed again anyway (a known token never meets the limiter); a
    token the API server stops accepting is no longer known."""
    kube.tokens["good"] = ("ml", "trainer", "host-0", ["aud"])
    from kubernetes import client, config

    api = client.AuthenticationV1Api(config.new_client_from_config(os.environ["KUBECONFIG"]))
    now = [0.0]
    review = TokenReview(lambda: api, "aud", clock=lambda: now[0], ttl=60, burst=3)
    assert review("good", "10.0.0.1") == ("ml", "host-0", "aud")
    for minute in range(1, 6):
        now[0] = minute * 61.0  # the cached answer has expired each time
        flood = [review(f"random-{minute}-{i}", "10.0.0.1") for i in range(20)]
        assert flood.count(RATE_LIMITED) >= 17
        assert review("good", "10.0.0.1") == ("ml", "host-0", "aud"), minute
    del kube.tokens["good"]  # revoked (its pod was deleted)
    now[0] += 61
    assert review("good", "10.0.0.1") == REJECTED
    now[0] += 61
    [review(f"random-last-{i}", "10.0.0.1") for i in range(20)]
    assert review("good", "10.0.0.1") == RATE_LIMITED  # no longer known: the flood's bucket
