"""A follower's part in the webhook: hand Alertmanager's notification to the leader
(:mod:`exporter.act.leader`) and pass its answer back, so Alertmanager may call any replica.

The request goes straight to the URL the leader wrote in its Lease (no proxy from the
environment: it carries the webhook's bearer token), is marked as handed on so that it is
never handed on again (two replicas that each think the other leads answer 503 rather than
loop), and is bounded in time and in the size of the answer. Any failure is a 503:
Alertmanager then retries, by which time a leader is known.
"""

from __future__ import annotations

import http.client
import json
import urllib.parse

FORWARDED = "x-training-progress-act-forwarded"
TIMEOUT = 20.0
MAX_ANSWER = 1 << 20


def _unavailable(message: str) -> tuple[int, bytes]:
    return 503, json.dumps({"status": "error", "message": message}).encode()


def hand_on(url: str, path: str, body: bytes, authorization: str) -> tuple[int, bytes]:
    """The leader's status and body for the notification ``body``, or 503 with the reason
    when there is no leader to hand it to or it could not be reached."""
    if not url:
        return _unavailable("no act replica leads now; retry")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return _unavailable(f"the leader's URL {url!r} is not http(s)")
    connection = (
        http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    )
    try:
        conn = connection(parts.hostname, parts.port, timeout=TIMEOUT)
        try:
            conn.request(
                "POST",
                path,
                body,
                {
                    "Content-Type": "application/json",
                    "Authorization": authorization,
                    FORWARDED: "1",
                },
            )
            resp = conn.getresponse()
            answer = resp.read(MAX_ANSWER + 1)
        finally:
            conn.close()
    except (OSError, http.client.HTTPException, ValueError) as err:
        return _unavailable(f"the leader at {url} did not answer: {err}")
    if len(answer) > MAX_ANSWER:
        return _unavailable(f"the leader at {url} answered more than {MAX_ANSWER} bytes")
    return resp.status, answer
