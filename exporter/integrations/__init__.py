"""Framework callbacks around the stdlib reporter. Each module imports its framework, so
import the one you use (``exporter.integrations.transformers`` or ``.lightning``); importing
``exporter`` or ``exporter.integrations`` imports neither."""
