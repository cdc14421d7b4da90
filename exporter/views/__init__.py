"""Floor 4, the views: what the exporter shows of its runs (``/metrics``, the JSON API, the
status page, its charts and web assets, why a run is stuck)."""
