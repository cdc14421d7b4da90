"""Configuration: defaults, then a YAML file, then ``TPE_*`` environment variables, then flags.

Every setting is documented in docs/configuration.md; ``tests/test_config.py`` checks that
the doc names every field here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..core.annotations import DEFAULT_GPU_RESOURCES
from ..core.estimate import EstimatorConfig
from ..core.thresholds import BY_ALIAS, SPECS, Thresholds
from ..core.tracker import TrackerConfig
from ..kubernetes.kube_settings import KubernetesSettings
from ..logs.formats import PARSER_NAMES
from ..logs.formats.custom import FormatError, compile_formats
from ..logs.lines import Format
from ..plumbing.settings import ConfigError, parse_duration, read_yaml_mapping
from ..sinks.katib import db_manager_address
from ..sinks.writeback import writeback_mode
from ..sources.forward import forward_url
from ..sources.http import HttpTarget, target_from_setting

MODES = ("auto", "standalone", "kubernetes")
DEFAULT_PORT = 9465


@dataclass(frozen=True)
class Config:
    """Everything the exporter can be told. Durations are seconds."""

    # Empty: 127.0.0.1:9465 in standalone mode (its pushes carry no proof of who sends them),
    # 0.0.0.0:9465 in Kubernetes mode (Prometheus and the node's pods must reach it).
    listen: str = ""
    mode: str = "auto"
    namespace: str = "standalone"
    status_dir: str | None = None
    log_paths: tuple[str, ...] = ()
    # Log formats users add (a name and a regex with named groups; only from a file):
    # exporter/logs/formats/custom.py, docs/logs.md#formats-you-add.
    log_formats: tuple[Format, ...] = ()
    http_targets: tuple[HttpTarget, ...] = ()
    http_timeout: float = 2.0
    poll_interval: float = 1.0
    # The per-run threshold defaults: each set by its one name (exporter.core.thresholds.SPECS),
    # or by the config key it had before.
    thresholds: Thresholds = field(default_factory=Thresholds)
    rate_window: float = EstimatorConfig().short_window
    retention: float = 600.0
    push_idle_expiry: float = 86400.0
    max_custom_metrics: int = 32
    # The chance of finishing by a deadline a size must give to be the one the run needs
    # (training_deadline_nodes_needed, exporter.core.scaling).
    deadline_probability: float = 0.8
    # What a resize costs the run: the seconds its restart at a new size takes.
    resize_restart_seconds: float = 300.0
    # A node runs at most a few hundred pods; 2,000 runs (with retained gone ones) at full
    # history and 32 custom metrics: the DaemonSet's limit is the budgets' sum for it
    # (exporter/core/budgets.py).
    max_runs: int = 2_000
    # HTTP server bounds (exporter/plumbing/httpd.py, docs/reliability.md#connections).
    http_max_connections: int = 256
    http_read_timeout: float = 10.0
    # Where the tracker's runs are saved (atomically, every state_interval and at SIGTERM)
    # and restored from at start; empty: nothing survives a restart.
    state_file: str = ""
    state_interval: float = 5.0
    node_name: str = ""
    kubelet_root: str = "/var/lib/kubelet"
    log_root: str = "/var/log/pods"
    token_audience: str = KubernetesSettings.token_audience
    pod_discovery: str = KubernetesSettings.pod_discovery
    kubelet_url: str = ""
    kubelet_ca: str = ""
    # Kubernetes mode: write progress read from other sources into TrainJobs (off, status,
    # annotation; true means status): exporter/sinks/writeback.py.
    trainjob_status_writeback: str = "off"
    # Kubeflow pushes go on to Kubeflow Trainer's own endpoint (https://host:port), with this
    # CA file: exporter/sources/forward.py.
    kubeflow_forward_url: str = ""
    kubeflow_forward_ca: str = ""
    gpu_resources: tuple[str, ...] = DEFAULT_GPU_RESOURCES
    # Kubernetes mode: also pull the metrics port of TrainJobs that OpenShift AI tracks
    # (its NetworkPolicy lets only its controller in; add one for the DaemonSet first).
    opendatahub_metrics_pull: bool = KubernetesSettings.opendatahub_metrics_pull
    # Kubernetes mode: every read but /healthz and /readyz needs a bearer token whose user
    # may `get` its path (nonResourceURLs), as kube-rbac-proxy in front of node exporters.
    read_authorization: bool = KubernetesSettings.read_authorization
    # Fewer series per run for fleets (exporter/views/catalog.py families(lean=True),
    # docs/metrics.md#cardinality-budget): the current state's series only, and a waste or
    # stall cause's counter from its first GPU-second.
    lean_series: bool = False
    # Kubernetes mode: report Katib trials' objective metrics to this DB manager (host:port;
    # true means Katib's default address), empty: off. exporter/sinks/katib/katib_reporter.py.
    katib_db_manager: str = ""
    katib_report_interval: float = 10.0  # at most one ReportObservationLog per trial this often

    def tracker_config(self) -> TrackerConfig:
        return TrackerConfig(
            thresholds=self.thresholds,
            estimator=EstimatorConfig(short_window=self.rate_window),
            retention=self.retention,
            max_custom_metrics=self.max_custom_metrics,
            max_runs=self.max_runs,
            deadline_probability=self.deadline_probability,
            resize_restart_seconds=self.resize_restart_seconds,
        )

    push_token_file: str | None = None  # standalone: pushes must carry this bearer token

    def kubernetes_settings(self) -> KubernetesSettings:
        return KubernetesSettings(
            node_name=self.node_name,
            pod_discovery=self.pod_discovery,
            kubelet_url=self.kubelet_url,
            kubelet_ca=self.kubelet_ca,
            token_audience=self.token_audience,
            gpu_resources=self.gpu_resources,
            opendatahub_metrics_pull=self.opendatahub_metrics_pull,
            read_authorization=self.read_authorization,
        )

    def listen_address(self, mode: str = "standalone") -> tuple[str, int]:
        """Where to serve; an empty ``listen`` depends on the (resolved) mode."""
        if not self.listen:
            return ("0.0.0.0" if mode == "kubernetes" else "127.0.0.1"), DEFAULT_PORT
        host, _, port = self.listen.rpartition(":")
        try:
            return host.strip("[]") or "0.0.0.0", int(port)
        except ValueError:
            raise ConfigError(f"listen: {self.listen!r} is not HOST:PORT") from None


_DURATIONS = {
    "resize_restart_seconds",
    "http_timeout",
    "http_read_timeout",
    "state_interval",
    "poll_interval",
    "rate_window",
    "retention",
    "push_idle_expiry",
    "katib_report_interval",
}
# Integer settings and their bounds. 10,000 runs is the most measured (docs/benchmarks.md):
# with 32 custom metrics each it needs a 512Mi memory limit.
_INTS = {
    "max_custom_metrics": (0, 256),
    "max_runs": (1, 10_000),
    "http_max_connections": (8, 65_536),
}
# Probability settings and their bounds.
_FRACTIONS = {"deadline_probability": (0.5, 0.99)}
_THRESHOLDS = {s.name: s for s in SPECS}
_STRINGS = {
    "listen",
    "push_token_file",
    "state_file",
    "mode",
    "namespace",
    "status_dir",
    "node_name",
    "kubelet_root",
    "log_root",
    "token_audience",
    "pod_discovery",
    "kubelet_url",
    "kubelet_ca",
    "trainjob_status_writeback",
    "kubeflow_forward_url",
    "kubeflow_forward_ca",
    "katib_db_manager",
}
# List settings (a YAML list, or comma-separated in the environment): what their items are.
_LISTS = {"log_paths": "paths or globs", "gpu_resources": "resource names"}
_BOOLS = {"opendatahub_metrics_pull", "read_authorization", "lean_series"}
SETTINGS = sorted(
    _DURATIONS
    | set(_INTS)
    | set(_FRACTIONS)
    | set(_THRESHOLDS)
    | _STRINGS
    | set(_LISTS)
    | _BOOLS
    | {"http_targets", "log_formats"}
)
# Settings only a file can give (a list of mappings, a mapping of patterns).
FILE_ONLY = {"http_targets", "log_formats"}
_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


def _bool(value: Any, error: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE | _FALSE:
        return text in _TRUE
    raise ConfigError(error)


# Old names still accepted (the thresholds' config keys before they had one name each).
ALIASES: dict[str, str] = {s.alias: s.name for s in SPECS if s.alias != s.name}


def _string_list(value: Any, error: str) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) and i for i in items):
        raise ConfigError(error)
    return tuple(i.strip() for i in items)


def _threshold(name: str, kind: str, bounds: tuple[float, float], value: Any, origin: str) -> float:
    lo, hi = bounds
    if kind == "duration":
        number = parse_duration(value, name)
    else:
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = float("nan")
    if not lo <= number <= hi:
        raise ConfigError(f"{origin}: {name} must be from {lo:g} to {hi:g}, not {value!r}")
    return number


def apply(config: Config, values: Mapping[str, Any], origin: str) -> Config:
    """A copy of ``config`` with ``values`` applied; unknown keys are an error."""
    changes: dict[str, Any] = {}
    thresholds: dict[str, float] = {}
    known = {f.name for f in fields(Config)} - {"thresholds"}
    for key, value in values.items():
        if value is None:
            continue
        spec = _THRESHOLDS.get(key) or BY_ALIAS.get(key)
        if spec is not None:
            thresholds[spec.name] = _threshold(key, spec.kind, spec.bounds, value, origin)
            continue
        if key not in known:
            raise ConfigError(f"{origin}: unknown setting {key!r}")
        if key in _DURATIONS:
            changes[key] = parse_duration(value, key)
        elif key in _INTS:
            try:
                number = int(value)
            except (TypeError, ValueError):
                raise ConfigError(f"{origin}: {key} must be an integer") from None
            low, high = _INTS[key]
            if not low <= number <= high:
                raise ConfigError(f"{origin}: {key} must be between {low} and {high}")
            changes[key] = number
        elif key in _FRACTIONS:
            changes[key] = _threshold(key, "number", _FRACTIONS[key], value, origin)
        elif key in _BOOLS:
            changes[key] = _bool(value, f"{origin}: {key} must be true or false, not {value!r}")
        elif key in _LISTS:
            changes[key] = _string_list(value, f"{origin}: {key} must be a list of {_LISTS[key]}")
        elif key == "http_targets":
            if not isinstance(value, list):
                raise ConfigError(f"{origin}: http_targets must be a list")
            ns = changes.get("namespace", config.namespace)
            changes[key] = tuple(target_from_setting(t, ns) for t in value)
        elif key == "log_formats":
            try:
                changes[key] = compile_formats(value, PARSER_NAMES)
            except FormatError as err:
                raise ConfigError(f"{origin}: {err}") from None
        else:
            changes[key] = str(value)
    if thresholds:
        changes["thresholds"] = replace(config.thresholds, **thresholds)
    result = replace(config, **changes)
    if result.mode not in MODES:
        raise ConfigError(f"mode must be one of {', '.join(MODES)}, not {result.mode!r}")
    return replace(
        result,
        trainjob_status_writeback=writeback_mode(result.trainjob_status_writeback),
        katib_db_manager=db_manager_address(result.katib_db_manager),
        kubeflow_forward_url=forward_url(result.kubeflow_forward_url),
    )


def from_file(config: Config, path: str) -> Config:
    """Apply a YAML config file."""
    data = read_yaml_mapping(path)
    return apply(config, {str(k).replace("-", "_"): v for k, v in data.items()}, path)


def from_env(config: Config, environ: Mapping[str, str]) -> Config:
    """Apply ``TPE_<SETTING>`` variables (``http_targets`` and ``log_formats`` only from a
    file)."""
    values = {
        name: environ[f"TPE_{name.upper()}"]
        for name in [*SETTINGS, *ALIASES]
        if name not in FILE_ONLY and f"TPE_{name.upper()}" in environ
    }
    if "NODE_NAME" in environ and "node_name" not in values:
        values["node_name"] = environ["NODE_NAME"]
    return apply(config, values, "environment")


def load(flags: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Config:
    """Defaults, then ``flags['config']`` file, then environment, then the other flags."""
    config = Config()
    path = flags.get("config") or (environ or os.environ).get("TPE_CONFIG")
    if path:
        config = from_file(config, path)
    config = from_env(config, os.environ if environ is None else environ)
    return apply(config, {k: v for k, v in flags.items() if k != "config"}, "flags")
