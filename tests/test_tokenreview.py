"""TokenReview bounds: buckets per address, no caching of API failures."""

from __future__ import annotations

import kubernetes

from exporter.kubernetes.tokenreview import (
    RATE_LIMITED,
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
