"""The status page's static files (exporter/views/web): uPlot, vendored with its license, and the
script that draws a run's charts. Served from the package at ``/static/<name>``: clusters
are often offline, so nothing is fetched from a CDN.

uPlot 1.6.32 (MIT, https://github.com/leeoniya/uPlot), ``dist/uPlot.iife.min.js`` and
``dist/uPlot.min.css`` as ``npm pack uplot@1.6.32`` gives them; its license is served too.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from types import MappingProxyType

# Every file that may be served, with its content type: nothing else under web/ is.
SERVED: Mapping[str, str] = MappingProxyType(
    {
        "uPlot.iife.min.js": "text/javascript; charset=utf-8",
        "uPlot.min.css": "text/css; charset=utf-8",
        "uPlot.LICENSE": "text/plain; charset=utf-8",
        "charts.js": "text/javascript; charset=utf-8",
    }
)


def load_assets() -> Mapping[str, tuple[bytes, str]]:
    """Every served file's bytes and content type, read once from the package."""
    web = resources.files("exporter.views").joinpath("web")
    return MappingProxyType(
        {name: (web.joinpath(name).read_bytes(), kind) for name, kind in SERVED.items()}
    )
