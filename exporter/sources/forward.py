"""Forwarding Kubeflow pushes upstream (``kubeflow_forward_url``): a job whose
``KUBEFLOW_TRAINER_SERVER_URL`` points at the exporter (its callback takes one URL) still
reaches Kubeflow Trainer's own status endpoint, so pointing it here loses nothing.

The exporter records the push first (authorized and parsed as any other), then sends the
same body to the same path upstream with the pod's own ``Authorization`` header (its
projected token) and, over TLS, the Kubeflow CA (``kubeflow_forward_ca``); the upstream
answer (status, body) is relayed to the job. An upstream that cannot be reached is a 502 with
a Kubernetes Status body; the push is recorded all the same.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass

from ..plumbing.fetch import direct_opener
from ..plumbing.httpmessages import status_body
from ..plumbing.settings import ConfigError

TIMEOUT = 5.0
MAX_ANSWER_BYTES = 64 * 1024


def forward_url(value: str) -> str:
    """The ``kubeflow_forward_url`` setting: empty (off) or an http(s) URL."""
    if value and not value.startswith(("http://", "https://")):
        raise ConfigError(f"kubeflow_forward_url must be an http(s) URL, not {value!r}")
    return value


@dataclass(frozen=True)
class Relayed:
    status: int
    body: bytes


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is not followed: it would carry the pod's token to another host."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


class Forwarder:
    """Sends Kubeflow pushes on to ``base_url`` (``https://host:port``), path unchanged.
    Never follows a redirect (the job is told 502) nor a proxy from the environment: the
    pod's token goes to that URL only."""

    def __init__(self, base_url: str, ca_file: str = "", timeout: float = TIMEOUT) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        context = (
            ssl.create_default_context(cafile=ca_file or None)
            if (base_url.startswith("https://"))
            else None
        )
        self._opener = direct_opener(_NoRedirects(), urllib.request.HTTPSHandler(context=context))

    def forward(self, path: str, body: bytes, authorization: str | None) -> Relayed:
        """The upstream's answer to the same push."""
        headers = {"Content-Type": "application/json"}
        if authorization:
            headers["Authorization"] = authorization
        req = urllib.request.Request(self.base_url + path, body, headers, method="POST")
        try:
            with self._opener.open(req, timeout=self.timeout) as resp:
                return Relayed(resp.status, resp.read(MAX_ANSWER_BYTES))
        except urllib.error.HTTPError as err:
            if 300 <= err.code < 400:
                message = f"the Kubeflow Trainer endpoint redirected ({err.code}); not followed"
                return Relayed(502, status_body(502, "BadGateway", message))
            return Relayed(err.code, err.read(MAX_ANSWER_BYTES))
        except (OSError, ValueError) as err:
            message = f"the Kubeflow Trainer endpoint: {err}"
            return Relayed(502, status_body(502, "BadGateway", message))
