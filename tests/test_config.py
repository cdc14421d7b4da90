"""Configuration precedence, parsing errors, and docs naming every setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.daemon.config import FILE_ONLY, SETTINGS, Config, load
from exporter.plumbing.discovery import resolve_mode
from exporter.plumbing.settings import ConfigError, parse_duration

DOCS = Path(__file__).parent.parent / "docs" / "configuration.md"


def test_durations() -> None:
    assert parse_duration("30m", "x") == 1800
    assert parse_duration("1.5h", "x") == 5400
    assert parse_duration("250ms", "x") == 0.25
    assert parse_duration(12, "x") == 12
    for bad in ("soon", "-5s", True, None, "5y"):
        with pytest.raises(ConfigError):
            parse_duration(bad, "x")


def test_precedence_file_then_env_then_flags(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "listen: 127.0.0.1:1111\nstall_threshold: 10m\nplateau_window: 2h\nnamespace: from-file\n"
        "http_targets:\n  - {name: a, host: 10.0.0.5}\n"
        "  - {name: b, url: 'http://h:1/p', namespace: x, gpus: 4,\n"
        "     thresholds: {stall_seconds: 60}}\n"
    )
    env = {"TPE_STALL_THRESHOLD": "20m", "TPE_NAMESPACE": "from-env", "NODE_NAME": "node-7"}
    config = load({"config": str(cfg), "namespace": "from-flag"}, env)
    assert config.listen == "127.0.0.1:1111"
    assert config.thresholds.stall_seconds == 1200
    assert config.thresholds.plateau_seconds == 7200
    assert config.namespace == "from-flag"
    assert config.node_name == "node-7"
    a, b = config.http_targets
    assert a.url == "http://10.0.0.5:28080/metrics" and a.key.namespace == "from-file"
    assert b.url == "http://h:1/p" and b.key.namespace == "x" and b.meta.gpus == 4
    assert b.meta.thresholds == (("stall_seconds", 60.0),)


@pytest.mark.parametrize(
    "text",
    [
        "bogus: 1\n",
        "mode: cluster\n",
        "max_runs: many\n",
        "max_runs: 20000\n",  # over the most that was measured (10,000)
        "max_runs: 0\n",
        "max_custom_metrics: 100000\n",
        "http_max_connections: 1\n",
        "http_targets: {a: 1}\n",
        "http_targets:\n  - {name: a, host: h, thresholds: {stall_seconds: 0}}\n",
        "http_targets:\n  - {name: a, url: 'file:///etc/passwd'}\n",
        "- a list\n",
        "listen: [\n",
    ],
)
def test_bad_config_files_raise_config_error(tmp_path: Path, text: str) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigError):
        load({"config": str(cfg)}, {})


def test_listen_address() -> None:
    assert Config(listen="[::1]:9465").listen_address() == ("::1", 9465)
    assert Config(listen=":80").listen_address() == ("0.0.0.0", 80)
    with pytest.raises(ConfigError):
        Config(listen="nope").listen_address()


def test_auto_mode() -> None:
    assert resolve_mode("auto", {}) == "standalone"
    assert resolve_mode("auto", {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}) == "kubernetes"
    assert resolve_mode("standalone", {"KUBERNETES_SERVICE_HOST": "x"}) == "standalone"


def test_docs_name_every_setting_and_env_var() -> None:
    text = DOCS.read_text()
    for name in SETTINGS:
        assert f"`{name}`" in text, name
        if name not in FILE_ONLY:  # a list of mappings, a mapping of patterns: a file's
            assert f"`TPE_{name.upper()}`" in text, name


def test_each_threshold_has_one_name_and_its_old_one() -> None:
    """The one name sets it in a file, the environment and flags; the old key still does."""
    from exporter.core.thresholds import SPECS

    for spec in SPECS:
        value = "45s" if spec.kind == "duration" else "0.5" if spec.bounds[1] < 1 else "4"
        expected = 45.0 if spec.kind == "duration" else float(value)
        by_name = load({spec.name: value}, environ={})
        by_alias = load({}, environ={f"TPE_{spec.alias.upper()}": value})
        by_env = load({}, environ={f"TPE_{spec.name.upper()}": value})
        for config in (by_name, by_alias, by_env):
            assert getattr(config.thresholds, spec.name) == expected, spec.name
            assert getattr(config.tracker_config().thresholds, spec.name) == expected
    with pytest.raises(ConfigError, match="stall_threshold must be from 10"):
        load({"stall_threshold": "1s"}, environ={})
