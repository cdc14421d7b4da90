"""One reporter URL story on Kubernetes, the same in docs and examples."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).parent.parent
SERVICE_HOST = "training-progress-exporter.training-progress.svc:9465"


def test_docs_and_example_point_at_the_node_local_service_the_base_deploys() -> None:
    service = yaml.safe_load((ROOT / "deploy" / "base" / "service.yaml").read_text())
    kustomization = yaml.safe_load((ROOT / "deploy" / "base" / "kustomization.yaml").read_text())
    assert service["spec"]["internalTrafficPolicy"] == "Local"
    host = f"{service['metadata']['name']}.{kustomization['namespace']}.svc"
    assert f"{host}:{service['spec']['ports'][0]['port']}" == SERVICE_HOST
    daemonset = yaml.safe_load((ROOT / "deploy" / "base" / "daemonset.yaml").read_text())
    ports = daemonset["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert not any("hostPort" in p for p in ports)  # so NODE_IP:9465 must not be suggested
    example = (ROOT / "deploy" / "examples" / "training-pod.yaml").read_text()
    docs = (ROOT / "docs" / "reporter.md").read_text()
    for text in (example, docs):
        urls = re.findall(r"http://[^\s`)]+:9465[^\s`)]*", text)
        cluster = [u for u in urls if "127.0.0.1" not in u and "localhost" not in u]
        assert cluster and all(SERVICE_HOST in u for u in cluster), cluster
    assert "NODE_IP" not in docs
