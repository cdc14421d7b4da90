"""How a setting's value is read, for every part's settings: durations, YAML files, and the
one error type that names the setting at fault. The exporter's :mod:`exporter.daemon.config` and
``act``'s :mod:`exporter.act.act_config` both compose their settings from these."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


class ConfigError(ValueError):
    """A setting that cannot be used; the message names it."""


def parse_duration(value: Any, name: str) -> float:
    """Seconds from a number or a string like ``30m``, ``10s``, ``1.5h``."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    if isinstance(value, str):
        m = _DURATION.match(value)
        if m:
            return float(m.group(1)) * _UNITS[m.group(2)]
    raise ConfigError(f"{name}: {value!r} is not a duration (like 30s, 10m, 2h)")


def read_yaml_mapping(path: str) -> Mapping[str, Any]:
    """A YAML file that must hold a mapping of settings (an empty file is an empty one);
    ConfigError names the file and what is wrong."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: expected a mapping of settings")
    return data
