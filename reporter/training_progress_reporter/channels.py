"""Where a report goes: the four channels (Kubeflow Trainer's status endpoint, the
exporter's native push, a status file, a marked stdout line), the bodies they send, and the
directives the exporter answers with. Standard library only; no state: the reporter
(:mod:`.reporter`) holds the values and the thread that sends them."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import ssl
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any, TextIO

ENV_KUBEFLOW_URL = "KUBEFLOW_TRAINER_SERVER_URL"
ENV_KUBEFLOW_TOKEN = "KUBEFLOW_TRAINER_SERVER_TOKEN"
ENV_KUBEFLOW_CA = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
ENV_REPORT_URL = "TPE_REPORT_URL"
ENV_STATUS_FILE = "TPE_STATUS_FILE"
ENV_REPORT_TOKEN_FILE = "TPE_REPORT_TOKEN_FILE"  # the exporter's push token, if it has one
MAX_ANSWER_BYTES = 64 * 1024  # of the exporter's answer read for directives
ENV_CHANNELS = "TPE_REPORT_CHANNELS"  # comma-separated override: kubeflow,exporter,file,stdout
# The Kubeflow KEP's marker before a trainerStatus JSON in a log line: what the stdout
# channel prints and what the exporter's log parser looks for (it imports this constant).
KUBEFLOW_MARKER = "[trainer.kubeflow.org/v1alpha1/trainjob/trainerStatus]"
CHANNELS = ("kubeflow", "exporter", "file", "stdout")
STACKS_DIRECTIVE = "stacks"
Sender = Callable[[dict[str, Any], bool], None]


def stacks_url(report_url: str) -> str:
    """Where stacks go: the native push URL with ``/stacks`` for its ``/report`` ("" when
    the URL is not one)."""
    if report_url.startswith(("http://", "https://")) and report_url.endswith("/report"):
        return report_url[: -len("/report")] + "/stacks"
    return ""


def _token_header(path: str) -> dict[str, str]:
    """``Authorization: Bearer`` with the token in ``path``; none when unset or unreadable."""
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as fh:
            token = fh.read(4096).strip()
    except OSError:
        return {}
    return {"Authorization": f"Bearer {token}"} if token else {}


def kubeflow_body(report: Mapping[str, Any]) -> dict[str, Any]:
    """A native report as the upstream Kubeflow ``trainerStatus`` body (values as strings)."""
    metrics = []
    names = {
        "step": "current_step",
        "max_steps": "total_steps",
        "epoch": "current_epoch",
        "max_epochs": "total_epochs",
        "loss": "loss",
        "eval_loss": "eval_loss",
        "learning_rate": "learning_rate",
        "grad_norm": "grad_norm",
        "last_checkpoint_step": "last_checkpoint_step",
        "last_checkpoint_timestamp": "last_checkpoint_timestamp",
    }
    for key, name in names.items():
        if key in report:
            metrics.append({"name": name, "value": str(report[key])})
    for name, value in dict(report.get("metrics", {})).items():
        if 1 <= len(name) <= 64:
            metrics.append({"name": name, "value": str(value)})
    status: dict[str, Any] = {
        "lastUpdatedTime": datetime.now(timezone.utc).isoformat(),
        "metrics": metrics[:256],
    }
    step, total = report.get("step"), report.get("max_steps")
    if report.get("final"):
        status["progressPercentage"] = 100
    elif isinstance(step, int) and isinstance(total, int) and total > 0:
        status["progressPercentage"] = max(0, min(99, step * 100 // total))
    return {"trainerStatus": status}


class _KubeflowSender:
    """POSTs the upstream body with the bearer token and CA the Kubeflow env vars name."""

    def __init__(self, env: Mapping[str, str], timeout: float) -> None:
        self.url = env.get(ENV_KUBEFLOW_URL, "")
        self.token_path = env.get(ENV_KUBEFLOW_TOKEN)
        self.ca_path = env.get(ENV_KUBEFLOW_CA)
        self.timeout = timeout
        self._context: ssl.SSLContext | None = None

    def send(self, report: dict[str, Any], final: bool) -> None:
        headers = {}
        if self.token_path:
            with open(self.token_path, encoding="utf-8") as fh:  # re-read: tokens rotate
                headers["Authorization"] = "Bearer " + fh.read().strip()
        if self.ca_path and self._context is None:
            self._context = ssl.create_default_context(cafile=self.ca_path)
        _post(
            self.url,
            json.dumps(kubeflow_body(report)).encode(),
            headers,
            self.timeout,
            self._context,
        )


class SendError(OSError):
    """A POST that did not go through, its message naming the URL (a typo in it must be
    seen in the warning, not only "HTTP Error 404")."""


def _post(
    url: str, body: bytes, headers: dict[str, str], timeout: float, context: ssl.SSLContext | None
) -> bytes:
    """The answer's body (at most MAX_ANSWER_BYTES) to POSTing ``body`` to ``url``; a
    :class:`SendError` naming the URL when it does not go through."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"not an http(s) URL: {url!r}")
    req = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as resp:
            return bytes(resp.read(MAX_ANSWER_BYTES))
    except urllib.error.HTTPError as exc:
        raise SendError(f"POST {url} answered {exc.code} {exc.reason}") from None
    except (OSError, http.client.HTTPException) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        raise SendError(f"POST {url}: {reason}") from None


def directives_of(answer: bytes) -> list[str]:
    """The directives in the exporter's answer to a native push (``{"directives": [...]}``);
    none when the answer has none or is not what the exporter sends."""
    try:
        doc = json.loads(answer)
    except ValueError:
        return []
    found = doc.get("directives") if isinstance(doc, dict) else None
    return [d for d in found if isinstance(d, str)] if isinstance(found, list) else []


def write_status_file(path: str, report: Mapping[str, Any]) -> None:
    """Write ``report`` as JSON to ``path`` atomically: temp file, fsync, rename."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(report, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _print_line(body: Mapping[str, Any], out: TextIO | None) -> None:
    stream = out or sys.stdout
    stream.write(f"{KUBEFLOW_MARKER} {json.dumps(body, separators=(',', ':'))}\n")
    stream.flush()
