"""Floor 4, the daemon: one exporter put together (settings, wiring, the state file, the
HTTP routes, the app)."""
