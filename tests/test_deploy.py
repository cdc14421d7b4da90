"""deploy/: every overlay renders with ``kubectl kustomize``, validates strictly against the
Kubernetes 1.31 schemas (core kinds) and against the Prometheus Operator schemas (fixtures),
and the DaemonSet keeps its hardening."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import need_tool

ROOT = Path(__file__).parent.parent
OVERLAYS = [
    "plain",
    "prometheus-operator",
    "kubelet-discovery",
    "restricted",
    "act",
    "trainjob-writeback",
    "trainjob-writeback-annotation",
    "katib",
    "cluster-page",
]
KUBECTL = shutil.which("kubectl")
CRDS = ROOT / "tests" / "fixtures" / "crds"
OPERATOR_KINDS = {
    "PodMonitor": "podmonitor.schema.json",
    "PrometheusRule": "prometheusrule.schema.json",
}


def render(overlay: str) -> list[dict[str, Any]]:
    if not KUBECTL:
        if os.environ.get("CI"):
            pytest.fail("kubectl is on these machines")
        pytest.skip("kubectl not installed")
    out = subprocess.run(
        [KUBECTL, "kustomize", str(ROOT / "deploy" / "overlays" / overlay)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


@pytest.mark.slow
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_validates(overlay: str, tmp_path: Path) -> None:
    import jsonschema

    docs = render(overlay)
    core = [d for d in docs if d["kind"] not in OPERATOR_KINDS]
    operator = [d for d in docs if d["kind"] in OPERATOR_KINDS]
    path = tmp_path / "core.yaml"
    path.write_text(yaml.safe_dump_all(core))
    validate = need_tool("kubernetes-validate", "the test extra (kubernetes-validate)")
    proc = subprocess.run(
        [validate, "--strict", "-k", "1.31.0", "--quiet", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for doc in operator:
        schema = json.loads((CRDS / OPERATOR_KINDS[doc["kind"]]).read_text())
        jsonschema.validate(doc, schema)
    kinds = sorted(d["kind"] for d in docs)
    base = [
        "ClusterRole",
        "ClusterRoleBinding",
        "DaemonSet",
        "Namespace",
        "Service",
        "ServiceAccount",
    ]
    if overlay == "plain":
        assert kinds == base
    elif overlay in ("trainjob-writeback", "trainjob-writeback-annotation"):
        # Least privilege per mode: the status subresource, or the TrainJob itself (the
        # OpenShift AI annotation is metadata), never both.
        mode, resource = (
            ("status", "trainjobs/status")
            if overlay == "trainjob-writeback"
            else ("annotation", "trainjobs")
        )
        assert kinds == sorted([*base, "ClusterRole", "ClusterRoleBinding"])
        (ds,) = [d for d in docs if d["kind"] == "DaemonSet"]
        env = {
            e["name"]: e.get("value")
            for e in ds["spec"]["template"]["spec"]["containers"][0]["env"]
        }
        assert env["TPE_TRAINJOB_STATUS_WRITEBACK"] == mode
        (role,) = [
            d
            for d in docs
            if d["kind"] == "ClusterRole"
            and d["metadata"]["name"] == f"training-progress-exporter-{overlay}"
        ]
        assert [(r["resources"], r["verbs"]) for r in role["rules"]] == [([resource], ["patch"])]
        patchable = {
            res
            for d in docs
            if d["kind"] == "ClusterRole"
            for r in d["rules"]
            if "patch" in r["verbs"]
            for res in r["resources"]
        }
        assert patchable == {resource}
    elif overlay == "katib":
        assert kinds == sorted([*base, "ClusterRole", "ClusterRoleBinding"])
        (ds,) = [d for d in docs if d["kind"] == "DaemonSet"]
        env = {
            e["name"]: e.get("value")
            for e in ds["spec"]["template"]["spec"]["containers"][0]["env"]
        }
        assert env["TPE_KATIB_DB_MANAGER"] == "katib-db-manager.kubeflow:6789"
        (role,) = [
            d
            for d in docs
            if d["kind"] == "ClusterRole" and d["metadata"]["name"].endswith("katib")
        ]
        assert [(r["apiGroups"], r["resources"], r["verbs"]) for r in role["rules"]] == [
            (["kubeflow.org"], ["trials"], ["get"])
        ]
    elif overlay == "act":
        act = ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "Service"]
        assert kinds == sorted([*base, *act, "ServiceAccount"])
    elif overlay == "cluster-page":
        page = ["Deployment", "Role", "RoleBinding", "Service", "ServiceAccount"]
        assert kinds == sorted([*base, *page])
    elif overlay == "kubelet-discovery":
        (ds,) = [d for d in docs if d["kind"] == "DaemonSet"]
        env = {
            e["name"]: e.get("value")
            for e in ds["spec"]["template"]["spec"]["containers"][0]["env"]
        }
        assert env["TPE_POD_DISCOVERY"] == "kubelet"
        roles = [d for d in docs if d["kind"] == "ClusterRole"]
        assert any(
            r["rules"] == [{"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]}]
            for r in roles
        )
    else:
        assert kinds == sorted(
            [*base, "PodMonitor", "PrometheusRule", "ConfigMap", "ConfigMap", "ConfigMap"]
        )
        (pm,) = [d for d in docs if d["kind"] == "PodMonitor"]
        assert pm["spec"]["podMetricsEndpoints"][0]["honorLabels"] is True


def test_a_typo_fails_the_operator_schema() -> None:
    import jsonschema

    doc = next(d for d in render("prometheus-operator") if d["kind"] == "PodMonitor")
    doc["spec"]["podMetricsEndpoints"][0]["honourLabels"] = True
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, json.loads((CRDS / "podmonitor.schema.json").read_text()))


def test_daemonset_is_hardened() -> None:
    (ds,) = [d for d in render("plain") if d["kind"] == "DaemonSet"]
    pod = ds["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    env = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") for e in c["env"]}
    assert env["NODE_NAME"] == "spec.nodeName" and env["HOST_IP"] == "status.hostIP"
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    # Every mount is read-only but the exporter's own state directory.
    assert [n for n, m in mounts.items() if not m.get("readOnly")] == ["state"]
    assert mounts["state"]["mountPath"] == "/var/lib/training-progress-exporter"
    values = {e["name"]: e.get("value") for e in c["env"]}
    assert values["TPE_STATE_FILE"] == "/var/lib/training-progress-exporter/state.json"
    assert mounts["kubelet-pods"]["mountPropagation"] == "HostToContainer"
    host_paths = sorted(v["hostPath"]["path"] for v in pod["volumes"])
    assert host_paths == [
        "/var/lib/kubelet/pods",
        "/var/lib/training-progress-exporter",
        "/var/log/pods",
    ]
    assert c["resources"]["requests"] and c["resources"]["limits"]
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert {t["key"] for t in pod["tolerations"]} >= {"nvidia.com/gpu", "amd.com/gpu"}


def assert_every_owner_kind_is_readable(role: dict[str, Any]) -> None:
    """Who a pod is comes from its owners, walked up (exporter.workloads.KINDS): a kind the
    role cannot get would leave its pods unidentified, refused."""
    from exporter.workloads import KINDS

    for kind in KINDS.values():
        assert any(
            kind.group in r["apiGroups"] and kind.plural in r["resources"] and "get" in r["verbs"]
            for r in role["rules"]
        ), kind.kind


def test_rbac_is_read_only_plus_tokenreviews() -> None:
    (role,) = [d for d in render("plain") if d["kind"] == "ClusterRole"]
    rules = {
        (tuple(r["apiGroups"]), tuple(r["resources"])): tuple(r["verbs"]) for r in role["rules"]
    }
    assert rules == {
        (("",), ("pods",)): ("get", "list", "watch"),
        (("trainer.kubeflow.org",), ("trainjobs",)): ("get", "list", "watch"),
        (("",), ("nodes",)): ("get",),
        (("batch",), ("jobs",)): ("get",),
        (("jobset.x-k8s.io",), ("jobsets",)): ("get",),
        (
            ("kubeflow.org",),
            (
                "pytorchjobs",
                "tfjobs",
                "mpijobs",
                "xgboostjobs",
                "paddlejobs",
                "jaxjobs",
                "trials",
                "experiments",
            ),
        ): ("get",),
        (("ray.io",), ("rayjobs", "rayclusters")): ("get",),
        (("authentication.k8s.io",), ("tokenreviews",)): ("create",),
    }
    assert_every_owner_kind_is_readable(role)
    (svc,) = [d for d in render("plain") if d["kind"] == "Service"]
    assert svc["spec"]["internalTrafficPolicy"] == "Local"


def test_examples_and_scrape_config_validate(tmp_path: Path) -> None:
    validate = need_tool("kubernetes-validate", "the test extra (kubernetes-validate)")
    for example in sorted((ROOT / "deploy" / "examples").glob("*.yaml")):
        proc = subprocess.run(
            [validate, "--strict", "-k", "1.31.0", "--quiet", str(example)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, f"{example.name}: {proc.stdout}{proc.stderr}"
    scrape = yaml.safe_load(
        (ROOT / "deploy/overlays/plain/prometheus-scrape-config.yaml").read_text()
    )
    (job,) = scrape["scrape_configs"]
    assert job["honor_labels"] is True and job["kubernetes_sd_configs"][0]["role"] == "pod"


def test_k3s_cluster_runs_the_exporter() -> None:
    """Where Docker runs: build the image, deploy the base on k3s, see a training pod's metrics."""
    try:
        import docker

        docker.from_env(timeout=5).ping()
    except Exception as exc:
        pytest.skip(f"needs a Docker engine for testcontainers k3s (none answers here: {exc})")
    from testcontainers.k3s import K3SContainer

    client = docker.from_env()
    client.images.build(
        path=str(ROOT), dockerfile="deploy/Dockerfile", tag="training-progress-exporter:test"
    )
    with K3SContainer() as k3s:
        kubeconfig = Path(os.environ.get("TMPDIR", "/tmp")) / "k3s.yaml"
        kubeconfig.write_text(k3s.config_yaml())
        image = client.images.get("training-progress-exporter:test")
        archive = Path(os.environ.get("TMPDIR", "/tmp")) / "image.tar"
        with open(archive, "wb") as fh:
            for chunk in image.save():
                fh.write(chunk)
        k3s.get_wrapped_container().exec_run(["mkdir", "-p", "/images"])
        subprocess.run(
            ["docker", "cp", str(archive), f"{k3s.get_wrapped_container().id}:/images/image.tar"],
            check=True,
        )
        k3s.get_wrapped_container().exec_run(["ctr", "images", "import", "/images/image.tar"])
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        manifest = subprocess.run(
            [KUBECTL or "kubectl", "kustomize", str(ROOT / "deploy/base")],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        manifest = manifest.replace(
            "ghcr.io/training-progress-exporter/training-progress-exporter:0.1.0",
            "training-progress-exporter:test",
        )
        subprocess.run(
            [KUBECTL or "kubectl", "apply", "-f", "-"],
            input=manifest,
            text=True,
            env=env,
            check=True,
        )
        subprocess.run(
            [
                KUBECTL or "kubectl",
                "-n",
                "training-progress",
                "rollout",
                "status",
                "ds/training-progress-exporter",
                "--timeout=180s",
            ],
            env=env,
            check=True,
        )


def test_prometheus_operator_overlay_is_ready_for_kube_prometheus_stack() -> None:
    """Every namespaced object in the exporter's namespace (one kustomize
    setting), the chart's default selectors matched: `release` on the PodMonitor and the
    PrometheusRule, the sidecar's grafana_dashboard label, and a folder for the dashboards."""
    docs = render("prometheus-operator")
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
    for doc in docs:
        if doc["kind"] not in cluster_scoped:
            assert doc["metadata"].get("namespace") == "training-progress", doc["kind"]
    for kind in ("PodMonitor", "PrometheusRule"):
        (doc,) = [d for d in docs if d["kind"] == kind]
        assert doc["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    dashboards = [d for d in docs if d["kind"] == "ConfigMap"]
    assert len(dashboards) == 3
    for doc in dashboards:
        assert doc["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert doc["metadata"]["annotations"]["grafana_folder"] == "Training"


# Pod Security Standards, as the Kubernetes documentation defines the levels
# (https://kubernetes.io/docs/concepts/security/pod-security-standards/): each control
# returns what a pod spec breaks.
_RESTRICTED_VOLUMES = {
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
    "projected", "secret",
}  # fmt: skip
_BASELINE_CAPS = {
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}  # fmt: skip


def pod_security_violations(pod: dict[str, Any], level: str) -> list[str]:
    """What ``pod`` (a pod spec) breaks of Pod Security ``level`` (baseline or restricted)."""
    out = []
    containers = [*pod.get("containers", []), *pod.get("initContainers", [])]
    psc = pod.get("securityContext", {})
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(key):
            out.append(key)
    for c in containers:
        sc = c.get("securityContext", {})
        if sc.get("privileged"):
            out.append(f"{c['name']}: privileged")
        added = set(sc.get("capabilities", {}).get("add", []))
        if added - _BASELINE_CAPS:
            out.append(f"{c['name']}: capabilities {sorted(added - _BASELINE_CAPS)}")
        if any(p.get("hostPort") for p in c.get("ports", [])):
            out.append(f"{c['name']}: hostPort")
        if sc.get("procMount", "Default") != "Default":
            out.append(f"{c['name']}: procMount")
    if any("hostPath" in v for v in pod.get("volumes", [])):
        out.append("hostPath volumes")
    if level == "baseline":
        return out
    for v in pod.get("volumes", []):
        kinds = set(v) - {"name"}
        if not kinds <= _RESTRICTED_VOLUMES:
            out.append(f"volume {v['name']}: {sorted(kinds)}")
    seccomp = psc.get("seccompProfile", {}).get("type")
    for c in containers:
        sc = c.get("securityContext", {})
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(f"{c['name']}: allowPrivilegeEscalation")
        if not sc.get("runAsNonRoot", psc.get("runAsNonRoot")):
            out.append(f"{c['name']}: runAsNonRoot")
        if sc.get("runAsUser", psc.get("runAsUser")) == 0:
            out.append(f"{c['name']}: runAsUser 0")
        if sc.get("seccompProfile", {}).get("type", seccomp) not in ("RuntimeDefault", "Localhost"):
            out.append(f"{c['name']}: seccompProfile")
        caps = sc.get("capabilities", {})
        if "ALL" not in caps.get("drop", []):
            out.append(f"{c['name']}: capabilities must drop ALL")
        if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
            out.append(f"{c['name']}: capabilities added")
    return out


@pytest.mark.slow
def test_restricted_overlay_passes_pod_security_restricted_and_the_others_do_not() -> None:
    """The default overlays need hostPath (logs, status files, the state
    file), which even "baseline" refuses: the checker must say so, or it checks nothing."""
    (ds,) = [d for d in render("restricted") if d["kind"] == "DaemonSet"]
    pod = ds["spec"]["template"]["spec"]
    assert pod_security_violations(pod, "restricted") == []
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["TPE_LOG_ROOT"] == "" and env["TPE_KUBELET_ROOT"] == ""
    assert env["TPE_STATE_FILE"].startswith("/var/lib/training-progress-exporter/")
    (ns,) = [d for d in render("restricted") if d["kind"] == "Namespace"]
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    (default,) = [d for d in render("prometheus-operator") if d["kind"] == "DaemonSet"]
    broken = pod_security_violations(default["spec"]["template"]["spec"], "baseline")
    assert broken == ["hostPath volumes"]


def test_act_overlay_is_least_privilege_and_starts_in_dry_run(tmp_path: Path) -> None:
    from exporter.act.config import parse as parse_act

    docs = render("act")
    roles = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ClusterRole"}
    rules = {
        (tuple(r["apiGroups"]), tuple(r["resources"])): tuple(r["verbs"])
        for r in roles["training-progress-act"]["rules"]
    }
    assert rules == {
        (("",), ("pods",)): ("get", "list", "delete"),
        (("",), ("events",)): ("create",),
        (("trainer.kubeflow.org",), ("trainjobs",)): ("get", "patch"),
        (("jobset.x-k8s.io",), ("jobsets",)): ("get", "patch"),
        (("batch",), ("jobs",)): ("get", "patch"),
        (
            ("kubeflow.org",),
            ("pytorchjobs", "tfjobs", "mpijobs", "xgboostjobs", "paddlejobs", "jaxjobs"),
        ): ("get", "patch"),
        (("kubeflow.org",), ("trials", "experiments")): ("get",),
        (("ray.io",), ("rayjobs",)): ("get", "patch"),
        (("ray.io",), ("rayclusters",)): ("get",),
    }
    assert_every_owner_kind_is_readable(roles["training-progress-act"])
    # The exporter's DaemonSet keeps its own read-only account; act has another.
    (ds,) = [d for d in docs if d["kind"] == "DaemonSet"]
    (dep,) = [d for d in docs if d["kind"] == "Deployment"]
    assert ds["spec"]["template"]["spec"]["serviceAccountName"] == "training-progress-exporter"
    assert dep["spec"]["template"]["spec"]["serviceAccountName"] == "training-progress-act"
    assert dep["spec"]["replicas"] == 1
    bindings = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ClusterRoleBinding"}
    assert bindings["training-progress-act"]["subjects"][0]["name"] == "training-progress-act"
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    assert c["args"][0] == "act" and c["securityContext"]["readOnlyRootFilesystem"] is True
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap"]
    config = parse_act(yaml.safe_load(cm["data"]["act.yaml"]))
    assert config.dry_run is True and config.policy.namespaces == ()


def test_alertmanager_receiver_example_passes_amtool(tmp_path: Path) -> None:
    amtool = shutil.which("amtool")
    if not amtool:
        if os.environ.get("CI"):
            pytest.fail("amtool comes with prometheus-alertmanager (make test-deps)")
        pytest.skip("amtool not installed")
    text = (ROOT / "deploy" / "alertmanager" / "act-receiver.yaml").read_text()
    token = tmp_path / "token"
    token.write_text("t")
    path = tmp_path / "alertmanager.yml"
    path.write_text(
        text.replace("/etc/alertmanager/secrets/training-progress-act-token/token", str(token))
    )
    check = subprocess.run(
        [amtool, "check-config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert check.returncode == 0, check.stdout + check.stderr
    routes = subprocess.run(
        [
            amtool,
            "config",
            "routes",
            "test",
            f"--config.file={path}",
            "alertname=TrainingJobStalled",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    # act gets the alert, and so do the people on call.
    assert routes.stdout.split() == ["training-progress-act,on-call"], routes.stdout


def test_the_cluster_page_reads_endpointslices_only_and_asks_the_exporters_service() -> None:
    """The component's one permission is reading EndpointSlices in its own namespace; its
    arguments parse, and name the exporter Service and a port that Service has."""
    from exporter.cli import _parser

    docs = render("cluster-page")
    (role,) = [d for d in docs if d["kind"] == "Role"]
    assert role["rules"] == [
        {
            "apiGroups": ["discovery.k8s.io"],
            "resources": ["endpointslices"],
            "verbs": ["get", "list", "watch"],
        }
    ]
    (binding,) = [d for d in docs if d["kind"] == "RoleBinding"]
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": "training-progress-cluster",
            "namespace": "training-progress",
        }
    ]
    cluster_wide = [
        d
        for d in docs
        if d["kind"] == "ClusterRoleBinding"
        for s in d["subjects"]
        if s["name"] == "training-progress-cluster"
    ]
    assert cluster_wide == [], "no cluster-wide grant to the page"
    (dep,) = [d for d in docs if d["kind"] == "Deployment"]
    spec = dep["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "training-progress-cluster"
    (c,) = spec["containers"]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    args = _parser().parse_args(c["args"])
    assert args.command == "cluster"
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    exporter_service = services[args.service]
    assert args.port_name in [p["name"] for p in exporter_service["spec"]["ports"]]
    (page_service,) = [s for n, s in services.items() if n != args.service]
    assert page_service["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]
