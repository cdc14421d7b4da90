"""One live stack per e2e session: exporter, Prometheus (rules as shipped), Alertmanager,
a webhook, a dcgm-exporter stand-in, and the scenario driver running until every expected
alert has arrived. The alert and dashboard tests both judge this one stack."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from bench.common import serve_bytes
from exporter.core.model import RunKey, RunMeta
from exporter.daemon.app import Exporter
from exporter.daemon.config import Config
from exporter.sources.http import HttpTarget

from ..test_sources import ProgressionServer
from .scenarios import NAMESPACE, RANKED_JOB, RANKS, SCENARIOS, SHORT, Driver
from .stack import Webhook, alertmanager, prometheus, query

DEADLINE_SECONDS = 200


def dcgm_text(node: str, pods: dict[str, tuple[float, float | None]]) -> bytes:
    """dcgm-exporter's exposition for one node: per pod (GPU_UTIL percent, SM_ACTIVE ratio
    or None where the GPU has no profiling metrics), one GPU each, with the labels and help
    texts dcgm-exporter 3.x writes (its Kubernetes pod mapping adds pod/namespace/container).
    """
    lines = {"DCGM_FI_DEV_GPU_UTIL": [], "DCGM_FI_PROF_SM_ACTIVE": []}
    for i, (pod, (util, sm)) in enumerate(sorted(pods.items())):
        labels = (
            f'gpu="{i}",UUID="GPU-3f1c{i:04d}-8a2b-4c3d-9e8f-0a1b2c3d4e5f",'
            f'pci_bus_id="00000000:{0x18 + i:02X}:00.0",device="nvidia{i}",'
            f'modelName="NVIDIA H100 80GB HBM3",Hostname="{node}",'
            f'DCGM_FI_DRIVER_VERSION="550.54.15",container="trainer",'
            f'namespace="{NAMESPACE}",pod="{pod}"'
        )
        lines["DCGM_FI_DEV_GPU_UTIL"].append(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {util:g}\n")
        if sm is not None:
            lines["DCGM_FI_PROF_SM_ACTIVE"].append(f"DCGM_FI_PROF_SM_ACTIVE{{{labels}}} {sm:g}\n")
    helps = {
        "DCGM_FI_DEV_GPU_UTIL": "GPU utilization (in %).",
        "DCGM_FI_PROF_SM_ACTIVE": "The ratio of cycles an SM has at least 1 warp assigned (in %).",
    }
    out = ""
    for name, samples in lines.items():
        if samples:
            out += f"# HELP {name} {helps[name]}\n# TYPE {name} gauge\n" + "".join(samples)
    return out.encode()


# Two dcgm-exporters, in the two ways Prometheus stores what they say: node-a scraped with
# honor_labels (namespace/pod kept), node-b as a Kubernetes target whose own namespace and
# pod labels win, so Prometheus itself renames the GPU's to exported_namespace/exported_pod.
DCGM_NODE_A = dcgm_text("node-a", {"healthy": (91, None)})
DCGM_NODE_B = dcgm_text(
    "node-b",
    {
        "hung": (0, None),
        # A GPU that spins in a collective reads 100 % utilization; SM activity says idle.
        "idle": (100, 0.01),
        **{pod: (88, 0.7) for pod, _, _ in RANKS},
    },
)


class _Published(dict[str, bytes]):
    """Bodies set here are served at once by the progression endpoint ``/NAME/metrics``."""

    def __init__(self, server: ProgressionServer) -> None:
        super().__init__()
        self.server = server

    def __setitem__(self, name: str, body: bytes) -> None:
        super().__setitem__(name, body)
        self.server.routes[f"/{name}/metrics"] = (200, body, 0.0)


@dataclass
class LiveStack:
    prometheus_url: str
    webhook: Webhook
    driver: Driver
    exporter: Exporter


@pytest.fixture(scope="session")
def live_stack() -> Iterator[LiveStack]:
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        webhook = Webhook()
        stack.callback(webhook.close)
        progression = ProgressionServer()
        stack.callback(progression.httpd.shutdown)
        dcgm_a, dcgm_b = serve_bytes(DCGM_NODE_A), serve_bytes(DCGM_NODE_B)
        stack.callback(dcgm_a.shutdown)
        stack.callback(dcgm_b.shutdown)
        status_dir = str(tmp / "status")
        Path(status_dir).mkdir()
        targets = tuple(
            HttpTarget(
                RunKey(NAMESPACE, sc.name, sc.name),
                progression.url(f"/{sc.name}/metrics"),
                RunMeta(source="http", gpus=4.0, thresholds=tuple(sorted(SHORT.items()))),
            )
            for sc in SCENARIOS
            if sc.channel == "http"
        ) + tuple(
            HttpTarget(
                RunKey(NAMESPACE, pod, RANKED_JOB),
                progression.url(f"/{pod}/metrics"),
                RunMeta(source="http", gpus=8.0, rank=rank, node=node, job_kind="JobSet"),
            )
            for pod, rank, node in RANKS
        )
        config = replace(
            Config(),
            listen="127.0.0.1:0",
            mode="standalone",
            namespace=NAMESPACE,
            status_dir=status_dir,
            http_targets=targets,
            poll_interval=0.5,
            # A short rate window so a throughput change shows within seconds, not minutes.
            rate_window=8.0,
        )
        exporter = Exporter(config)
        exporter.start()
        stack.callback(exporter.stop)
        # The driver publishes each HTTP run's latest body straight to the endpoint, so the
        # endpoints stay current for every e2e module of the session, not only during setup.
        bodies = _Published(progression)
        driver = Driver(exporter.url, status_dir, bodies)
        stack.callback(driver.stop)
        am_url = stack.enter_context(alertmanager(tmp, webhook.url))
        prom_url = stack.enter_context(
            prometheus(
                tmp,
                exporter.url.removeprefix("http://"),
                am_url,
                extra_targets={"dcgm-exporter": f"127.0.0.1:{dcgm_a.server_address[1]}"},
                extra_scrape_configs=[
                    {
                        "job_name": "dcgm-exporter-servicemonitor",
                        "static_configs": [
                            {
                                "targets": [f"127.0.0.1:{dcgm_b.server_address[1]}"],
                                "labels": {
                                    "namespace": "gpu-operator",
                                    "pod": "nvidia-dcgm-exporter-7xk2p",
                                },
                            }
                        ],
                    }
                ],
            )
        )
        driver.start()
        expected = {sc.name for sc in SCENARIOS if sc.alert}
        deadline = time.time() + DEADLINE_SECONDS
        settle = 0
        while time.time() < deadline and settle < 10:
            got = {a["labels"].get("job_name") for _, a in webhook.received}
            if expected <= got:
                settle += 1  # keep going a few seconds: anything spurious may arrive too
            time.sleep(0.5)
        assert query(prom_url, "up") != []
        yield LiveStack(prom_url, webhook, driver, exporter)
