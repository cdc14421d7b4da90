"""Floor 5, the commands: the command line (run, act, demo, inspect, top, cluster) and the
``kubectl progress`` plugin."""
