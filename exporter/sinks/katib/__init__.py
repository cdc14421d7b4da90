"""Katib without regex: trial objective metrics from what the exporter already reads.

:mod:`.observations` decides what to send (pure); :mod:`.dbmanager` sends it to Katib's DB
manager over gRPC (the optional ``[katib]`` extra, imported only when reporting is on);
:mod:`.reporter` reads the Trials and runs the loop.
"""

from __future__ import annotations

from ...plumbing.settings import ConfigError

DEFAULT_ADDRESS = "katib-db-manager.kubeflow:6789"  # Katib's own default


def db_manager_address(value: str) -> str:
    """The ``katib_db_manager`` setting: HOST:PORT, true (Katib's default address), or
    empty/false/off (reporting off)."""
    address = value.strip()
    address = {"true": DEFAULT_ADDRESS, "false": "", "off": ""}.get(address.lower(), address)
    if address and (":" not in address or "/" in address):
        raise ConfigError(f"katib_db_manager must be HOST:PORT (or true), not {address!r}")
    return address
