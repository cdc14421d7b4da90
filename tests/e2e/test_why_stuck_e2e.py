"""The page that says "stalled" says why: a real gloo job, a real Prometheus and Alertmanager.

Three real ``torch.distributed`` processes (gloo, CPU; tests/fixtures/stuck/stuck.py)
report through the real reporter to a real exporter on loopback: rank 1 blocks in
``time.sleep`` before an ``all_reduce`` while ranks 0 and 2 wait in it. The exporter's stall
threshold is 10 s (the shortest it accepts); Prometheus loads the rules as shipped and routes
to a real Alertmanager, whose webhook receives ``TrainingJobStalled``. Its description must
name the blocking rank, its frame, and the collective the others wait in; the time from the
last step to that delivery is measured and printed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import pytest

from exporter.core.thresholds import Thresholds
from exporter.daemon.app import Exporter
from exporter.daemon.config import Config

from ..conftest import get_json
from .stack import Webhook, alertmanager, prometheus

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.waits]

SCRIPT = Path(__file__).parent.parent / "fixtures" / "stuck" / "stuck.py"
STALL = 10.0
FOR = 60.0  # TrainingJobStalled's for:
DEADLINE = 200.0


def test_the_stalled_alert_names_the_blocking_rank_its_frame_and_the_collective() -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        config = replace(
            Config(),
            listen="127.0.0.1:0",
            mode="standalone",
            thresholds=Thresholds(stall_seconds=STALL, report_timeout_seconds=600.0),
        )
        exporter = Exporter(config)
        exporter.start()
        webhook = Webhook()
        proc = None
        try:
            with (
                ExitStack() as stack_files,
                alertmanager(tmp, webhook.url) as am_url,
                prometheus(tmp, exporter.url.removeprefix("http://"), am_url),
            ):
                push = f"{exporter.url}/api/v1/namespaces/ml/runs/ddp/report"
                output = stack_files.enter_context(open(tmp / "stuck.log", "wb"))
                proc = subprocess.Popen(
                    [sys.executable, str(SCRIPT), "collective", push, str(tmp / "rendezvous")],
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
                deadline = time.time() + DEADLINE
                alert = None
                while alert is None:
                    printed = (tmp / "stuck.log").read_text()
                    assert time.time() < deadline, (webhook.received, printed)
                    got = [
                        (at, a)
                        for at, a in list(webhook.received)
                        if a["labels"]["alertname"] == "TrainingJobStalled"
                    ]
                    alert = got[0] if got else None
                    time.sleep(0.5)
                run = next(
                    r for r in get_json(exporter.url + "/api/v1/runs")["runs"] if r["pod"] == "ddp"
                )
        finally:
            if proc is not None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
            webhook.close()
            exporter.stop()
        at, first = alert
        description = first["annotations"]["description"]
        assert first["labels"]["job_name"] == "ddp"
        assert "Rank 1 is stuck (unknown) at stuck.py:" in description, description
        assert " in ddp_rank." in description
        assert "2 rank(s) wait in all_reduce." in description
        assert run["stall_summary"].startswith("rank 1 is at stuck.py:"), run["stall_summary"]
        assert run["stall_summary"].endswith("ranks 0, 2 wait in all_reduce #5")
        elapsed = at - run["last_step_timestamp_seconds"]
        print("\nTrainingJobStalled as Alertmanager delivered it:")
        print(
            json.dumps({"labels": first["labels"], "annotations": first["annotations"]}, indent=1)
        )
        print(f"seconds from the last step to the alert with the frame: {elapsed:.1f}")
        # Threshold + for: + the heartbeat that asks for the stacks, scrapes and Alertmanager.
        assert STALL + FOR <= elapsed <= STALL + FOR + 20.0, elapsed
