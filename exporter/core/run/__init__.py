"""One run: a package of small modules, each one idea, over one :class:`~.state.RunState`
and the :class:`~.state.RunConfig` that rules it. Every function takes ``now``; nothing here
reads a clock, does I/O or locks: the tracker (:mod:`exporter.core.tracker`) holds the table of
runs and its lock.

- :mod:`.state`: the run's mutable state, its config and thresholds, a new run;
- :mod:`.snapshot`: :class:`~.snapshot.RunSnapshot`, what views render, and its timeline
  values (views import this alone, without the merge code);
- :mod:`.pace`: step samples, throughput, the ETA, and what the classifier is shown;
- :mod:`.accrual`: GPU-seconds by cause of waste, work at risk, where a stall began;
- :mod:`.tokens`: tokens, their rate, MFU;
- :mod:`.merge`: a report merged in (attempts, loss and plateau, checkpoints, Katib
  observations);
- :mod:`.view`: the snapshot of a run at an instant, and what it is told to do (directives).
"""
