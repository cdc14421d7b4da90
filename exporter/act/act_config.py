"""``act``'s configuration file (YAML), flags override it. docs/act.md documents the keys::

dry_run: true                  # the default; act only writes Events until this is false
namespaces: ["team-*"]         # namespaces whose jobs get the defaults below
defaults:                      # per alert annotation: the action for opted-in namespaces
  on-stalled: restart
  on-finished-but-running: delete
  on-over-budget: notify
  on-deadline: notify
max_actions_per_hour: 20
max_actions_per_hour_per_namespace: 5
cooldown: 15m                  # per job and alert
prometheus_url: http://prometheus:9090   # where act sees a job's checkpoints before a resize
checkpoint_wait: 10m           # how long a resize waits for the checkpoint it asked for
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..plumbing.settings import ConfigError, parse_duration, read_yaml_mapping
from .guard import ActionLimits
from .policy import RULES, Policy


@dataclass(frozen=True)
class ActConfig:
    """The controller's settings; docs/act.md documents each."""

    dry_run: bool = True
    policy: Policy = field(default_factory=Policy)
    limits: ActionLimits = field(default_factory=ActionLimits)
    # Resizes (exporter.act.resize): where the job's checkpoints are seen, and how long to
    # wait for the one asked for before giving the resize up.
    prometheus_url: str = ""
    checkpoint_wait: float = 600.0


KEYS = frozenset(
    {
        "dry_run",
        "namespaces",
        "defaults",
        "max_actions_per_hour",
        "max_actions_per_hour_per_namespace",
        "cooldown",
        "prometheus_url",
        "checkpoint_wait",
    }
)
MAX_ACTIONS = 10_000


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_ACTIONS:
        raise ConfigError(f"{name} must be an integer from 0 to {MAX_ACTIONS}")
    return value


def parse(doc: Mapping[str, Any]) -> ActConfig:
    """The configuration a parsed YAML document describes; ConfigError says what is wrong."""
    unknown = set(doc) - KEYS
    if unknown:
        raise ConfigError(f"unknown act settings: {', '.join(sorted(unknown))}")
    cfg = ActConfig()
    if "dry_run" in doc:
        if not isinstance(doc["dry_run"], bool):
            raise ConfigError("dry_run must be true or false")
        cfg = replace(cfg, dry_run=doc["dry_run"])
    namespaces = doc.get("namespaces", [])
    if not isinstance(namespaces, list) or not all(isinstance(n, str) for n in namespaces):
        raise ConfigError("namespaces must be a list of names or glob patterns")
    defaults = doc.get("defaults", {}) or {}
    if not isinstance(defaults, dict):
        raise ConfigError("defaults must map on-stalled (and the like) to an action")
    rules = {r.annotation: r for r in RULES.values()}
    for key, value in defaults.items():
        if key in rules and rules[key].job_only:
            raise ConfigError(
                f"defaults: {key} has no default: only a job's own annotation sets it"
            )
        if key not in rules:
            raise ConfigError(f"defaults: unknown key {key!r} (one of {', '.join(rules)})")
        if value not in rules[key].actions:
            raise ConfigError(
                f"defaults.{key} must be one of {', '.join(rules[key].actions)}, not {value!r}"
            )
    limits = ActionLimits()
    if "max_actions_per_hour" in doc:
        limits = replace(
            limits, total_per_hour=_count(doc["max_actions_per_hour"], "max_actions_per_hour")
        )
    if "max_actions_per_hour_per_namespace" in doc:
        limits = replace(
            limits,
            per_namespace_per_hour=_count(
                doc["max_actions_per_hour_per_namespace"], "max_actions_per_hour_per_namespace"
            ),
        )
    if "cooldown" in doc:
        limits = replace(limits, cooldown_seconds=parse_duration(doc["cooldown"], "cooldown"))
    prometheus = doc.get("prometheus_url", "")
    if not isinstance(prometheus, str) or (
        prometheus and not prometheus.startswith(("http://", "https://"))
    ):
        raise ConfigError("prometheus_url must be an http(s) URL")
    wait = cfg.checkpoint_wait
    if "checkpoint_wait" in doc:
        wait = parse_duration(doc["checkpoint_wait"], "checkpoint_wait")
        if not 10 <= wait <= 6 * 3600:
            raise ConfigError("checkpoint_wait must be from 10s to 6h")
    return replace(
        cfg,
        policy=Policy(tuple(namespaces), dict(defaults)),
        limits=limits,
        prometheus_url=prometheus,
        checkpoint_wait=wait,
    )


def load(path: str | None) -> ActConfig:
    """The configuration in ``path`` (defaults without one)."""
    return ActConfig() if path is None else parse(read_yaml_mapping(path))
