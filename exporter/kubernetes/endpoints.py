"""The exporters of a cluster, as the Service's EndpointSlices list them: what the cluster
page (exporter/commands/cluster.py) merges. Parsing is pure (:func:`endpoints_of`); listing is one
call of the ``discovery.k8s.io/v1`` API, which needs ``list`` on ``endpointslices`` in the
exporter's namespace and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..plumbing.discovery import DiscoveryError

SERVICE_NAME_LABEL = "kubernetes.io/service-name"  # set by the EndpointSlice controller
MAX_ENDPOINTS = 5_000  # one exporter a node; Kubernetes supports 5,000 nodes a cluster


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One exporter: its node (or address, where the slice names no node) and base URL."""

    name: str
    url: str
    ready: bool = True


def _url(address: str, port: int, address_type: str) -> str:
    host = f"[{address}]" if address_type == "IPv6" or ":" in address else address
    return f"http://{host}:{port}"


def endpoints_of(slices: Iterable[Any], port_name: str) -> list[Endpoint]:
    """The exporters in ``slices`` (EndpointSlice objects as the API sends them), by node
    name, on the port named ``port_name``. An endpoint that is terminating, or that the
    slice says is not ready, is listed as not ready (the page shows it, and does not ask
    it); a slice without that port, or with a malformed entry, contributes what it can."""
    out: dict[str, Endpoint] = {}
    for s in slices:
        if not isinstance(s, dict):
            continue
        port = next(
            (
                p.get("port")
                for p in s.get("ports") or []
                if isinstance(p, dict) and p.get("name") == port_name
            ),
            None,
        )
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            continue
        address_type = str(s.get("addressType") or "IPv4")
        for e in s.get("endpoints") or []:
            if not isinstance(e, dict):
                continue
            addresses = e.get("addresses") or []
            if not addresses or not isinstance(addresses[0], str):
                continue
            url = _url(addresses[0], port, address_type)
            node = e.get("nodeName")
            name = node if isinstance(node, str) and node else url.removeprefix("http://")
            conditions = e.get("conditions") or {}
            # The API: a ready condition left unset means "unknown", to be taken as ready.
            ready = conditions.get("ready") is not False and not conditions.get("terminating")
            if name not in out or (ready and not out[name].ready):
                out[name] = Endpoint(name=name[:253], url=url, ready=ready)
            if len(out) >= MAX_ENDPOINTS:
                return sorted(out.values(), key=lambda x: x.name)
    return sorted(out.values(), key=lambda x: x.name)


class EndpointSliceLister:
    """Lists the exporters of ``service`` in ``namespace`` from its EndpointSlices."""

    def __init__(self, api_client: Any, namespace: str, service: str, port_name: str) -> None:
        from kubernetes import client

        self._api = client.DiscoveryV1Api(api_client)
        self.namespace = namespace
        self.service = service
        self.port_name = port_name

    def __call__(self) -> list[Endpoint]:
        """Every exporter, now. Raises DiscoveryError with the API's reason."""
        from kubernetes.client import ApiException

        try:
            response = self._api.list_namespaced_endpoint_slice(
                self.namespace,
                label_selector=f"{SERVICE_NAME_LABEL}={self.service}",
                _preload_content=False,
                _request_timeout=10,
            )
            doc = json.loads(response.data)  # type: ignore[attr-defined]
        except ApiException as exc:
            raise DiscoveryError(
                f"listing EndpointSlices of {self.namespace}/{self.service}: "
                f"{exc.status} {exc.reason}"
            ) from None
        except Exception as exc:  # connection refused, timeout, a body that is not JSON
            raise DiscoveryError(
                f"listing EndpointSlices of {self.namespace}/{self.service}: {exc}"
            ) from None
        items = doc.get("items") if isinstance(doc, dict) else None
        return endpoints_of(items if isinstance(items, list) else [], self.port_name)
