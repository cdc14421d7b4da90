"""Where ``act`` sees a job's checkpoints: the newest ``training_last_checkpoint_timestamp_seconds``
of the job's runs, asked of Prometheus (the series every exporter exports; act runs
cluster-wide and has no exporter of its own to read).

A resize waits for a checkpoint newer than the one it asked for (exporter.act.resize): the
membership change restarts the workers from their last checkpoint, so a stale one would
throw away all the training since.
"""

from __future__ import annotations

import json
import math
import urllib.parse

from ..plumbing.fetch import FetchError, get

TIMEOUT = 5.0
MAX_BYTES = 1 << 20


def _quoted(value: str) -> str:
    """A PromQL string literal of ``value`` (JSON's escaping is PromQL's for these names)."""
    return json.dumps(value)


def checkpoint_query(namespace: str, job_name: str) -> str:
    """The newest checkpoint time of the job's runs, in PromQL."""
    return (
        "max(training_last_checkpoint_timestamp_seconds{"
        f"namespace={_quoted(namespace)},job_name={_quoted(job_name)}}})"
    )


def newest_checkpoint(prometheus_url: str, namespace: str, job_name: str) -> float | None:
    """The Unix time of the job's newest checkpoint Prometheus has, or None (none seen, or
    Prometheus did not answer: no checkpoint seen is no resize)."""
    query = urllib.parse.urlencode({"query": checkpoint_query(namespace, job_name)})
    try:
        body = get(f"{prometheus_url.rstrip('/')}/api/v1/query?{query}", TIMEOUT, MAX_BYTES)
        doc = json.loads(body)
        result = doc["data"]["result"]
        value = float(result[0]["value"][1]) if result else None
    except (FetchError, ValueError, KeyError, IndexError, TypeError):
        return None
    return value if value is not None and math.isfinite(value) else None
