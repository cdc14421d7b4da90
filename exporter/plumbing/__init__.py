"""Floor 1, the plumbing: settings, counters, polling, the ingestor (the one door into the
tracker), the HTTP server and client, host files, and discovery's shapes."""
