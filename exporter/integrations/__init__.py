"""Deprecated aliases of the framework callbacks, which now live in the
training-progress-reporter distribution (``training_progress_reporter.transformers`` and
``.lightning``). Importing ``exporter.integrations`` imports no framework."""
