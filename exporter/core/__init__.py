"""Floor 0, the core: the run model, its states and thresholds, estimation and the tracker.
Pure: no I/O, no threads of its own, ``now`` passed in (tests/test_layout.py)."""
