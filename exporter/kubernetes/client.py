"""The one place that builds ``kubernetes`` client objects, and the few calls made outside
the exporter's own watch (``kubectl progress`` reading TrainJobs).

The client is imported lazily: standalone mode and the reporter never need it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, cast

from ..plumbing.discovery import ApiFactory, DiscoveryError

TRAINJOB = ("trainer.kubeflow.org", "v1alpha1", "trainjobs")


def api_client(retries: int | None = None) -> Any:
    """A kubernetes ``ApiClient`` of its own (no change to the client's global default): the
    in-cluster service account inside a pod, else ``$KUBECONFIG`` or ``~/.kube/config``.
    ``retries``: how often a failed call is retried inside the client (None: urllib3's
    default, three); a caller whose calls have one deadline each sets 0. Raises
    DiscoveryError."""
    try:
        from kubernetes import client, config
    except ImportError as exc:
        raise DiscoveryError(f"Kubernetes mode needs the kubernetes package: {exc}") from None
    configuration = client.Configuration()
    # The client takes HTTPS_PROXY from the environment: not ours to follow (a variable in
    # the DaemonSet's environment would hand the service account's token to a third host).
    # Set before the config is loaded, so that a kubeconfig's own proxy-url, a proxy
    # someone configured, still applies.
    configuration.proxy = None
    try:
        config.load_incluster_config(client_configuration=configuration)
    except Exception:
        try:
            # Read KUBECONFIG now: the client's own default is fixed when first imported.
            config.load_kube_config(
                config_file=os.environ.get("KUBECONFIG"), client_configuration=configuration
            )
        except Exception as exc:
            raise DiscoveryError(f"no in-cluster config and no usable kubeconfig: {exc}") from None
    if retries is not None:
        configuration.retries = retries
    return client.ApiClient(configuration)


@dataclass(frozen=True)
class Apis:
    """Core, custom-objects, authentication and authorization APIs, built on first use."""

    core: ApiFactory
    custom: ApiFactory
    auth: ApiFactory
    authz: ApiFactory


def get_custom_object(
    api: Any, group: str, version: str, plural: str, namespace: str, name: str
) -> dict[str, Any] | None:
    """One namespaced custom object as the API server sends it, or None if it does not
    exist (404); other failures raise (the client's ApiException, or a connection error)."""
    from kubernetes.client import ApiException

    try:
        response = api.get_namespaced_custom_object(
            group, version, namespace, plural, name, _preload_content=False, _request_timeout=30
        )
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    obj = json.loads(response.data)
    return obj if isinstance(obj, dict) else None


def api_status(exc: BaseException) -> int | None:
    """The HTTP status of a failed API call, or None when it never got an answer (a
    connection error): callers outside this package tell "not found" from "refused"
    without importing the client's exception type."""
    from kubernetes.client import ApiException

    return exc.status if isinstance(exc, ApiException) else None


def api_reason(exc: BaseException) -> str:
    """The API server's reason for a failed call (or the error's own text)."""
    return str(getattr(exc, "reason", None) or exc)


def apis() -> Apis:
    """The four APIs over one ApiClient: the cluster configuration is loaded once."""
    from kubernetes import client

    shared = api_client()
    return Apis(
        core=lambda: client.CoreV1Api(shared),
        custom=lambda: client.CustomObjectsApi(shared),
        auth=lambda: client.AuthenticationV1Api(shared),
        authz=lambda: client.AuthorizationV1Api(shared),
    )


def list_trainjobs(namespace: str | None) -> list[dict[str, Any]]:
    """TrainJob objects of one namespace (or all), as plain dicts."""
    from kubernetes import client

    api = client.CustomObjectsApi(api_client())
    group, version, plural = TRAINJOB
    if namespace is None:
        doc = api.list_cluster_custom_object(group, version, plural)
    else:
        doc = api.list_namespaced_custom_object(group, version, namespace, plural)
    return list(cast(dict[str, Any], doc).get("items", []))


def current_namespace() -> str:
    """The kubeconfig context's namespace, as kubectl would use it."""
    try:
        from kubernetes import config

        _, context = config.list_kube_config_contexts(config_file=os.environ.get("KUBECONFIG"))
        return str(context.get("context", {}).get("namespace") or "default")
    except Exception:
        return "default"
