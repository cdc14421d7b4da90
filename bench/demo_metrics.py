"""The demo's ``/metrics`` on a fixed clock, for comparing two builds byte for byte.

Run: ``python -m bench.demo_metrics > a.prom`` on one build and again on another, then
``diff a.prom b.prom``. The demo's nine runs are driven for 200 simulated seconds (400 ticks,
each followed by one poll of the pulled sources) with its seeded randomness and a clock
that only the ticks move, so the exposition depends on the code alone. The exporter's own
process series (CPU, memory, poll durations, HTTP counters) measure the machine and are
left out.
"""

from __future__ import annotations

import re
import sys
import urllib.request

from exporter.commands.demo import Demo

START = 1_800_000_000.0
TICKS = 400
TICK_SECONDS = 0.5
# Series about the process rather than the runs: they differ between two runs of one build.
MACHINE = re.compile(
    r"^(# (HELP|TYPE) )?(process_|python_|training_exporter_(source_poll_duration|scrape"
    r"|build|http|memory|uptime|start))"
)


def exposition() -> str:
    """The demo's ``/metrics`` after ``TICKS`` ticks, without the process's own series."""
    now = [START]
    demo = Demo(listen="127.0.0.1:0", seed=7, clock=lambda: now[0])
    try:
        demo.exporter.start(poll_loop=False)
        for tick in range(TICKS):
            now[0] = START + tick * TICK_SECONDS
            demo.tick(tick * TICK_SECONDS)
            demo.exporter.poll_once()
        with urllib.request.urlopen(demo.exporter.url + "/metrics", timeout=10) as answer:
            body = answer.read().decode()
    finally:
        demo.stop()
    return "".join(line + "\n" for line in body.splitlines() if not MACHINE.match(line))


if __name__ == "__main__":
    sys.stdout.write(exposition())
