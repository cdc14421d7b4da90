"""Progress from what training prints: parse (pure, one line in, one report out), accumulate
(a run's lines into its latest report), tail (files, safely), the one CRI joiner, the log
source, and ``inspect``, which reads a file exactly as the source does."""
