"""Who may push in Kubernetes mode: a pod on this node, by its IP, for its own run only; on
the host network, by a token that the TokenReview says is the pod's."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import K8S_NODE, FakeClock, get_json, http
from .fakekube import FakeKube
from .kube import BODY, KF, T_START, T_START_TS, TRAINJOB, pod, put_pod, registry_of, wait


def test_push_authorization_by_pod_ip(kube: FakeKube, k8s_exporter: Any) -> None:
    put_pod(kube, pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1"))
    put_pod(kube, pod("ml", "elsewhere", TRAINJOB, ip="127.0.0.1", node="other-node"))
    exp = k8s_exporter(FakeClock(T_START_TS + 3600))
    wait(lambda: exp.ready()[0] or exp.poll_once() is not None)
    ok = http("POST", exp.url + KF.format(ns="ml", name="llm"), BODY)
    other_ns = http("POST", exp.url + KF.format(ns="other", name="llm"), BODY)
    other_job = http("POST", exp.url + KF.format(ns="ml", name="not-mine"), BODY)
    runs = get_json(exp.url + "/api/v1/runs")["runs"]
    text = http("GET", exp.url + "/metrics")[1].decode()
    assert ok[0] == 200, ok[1]
    assert other_ns[0] == 403 and json.loads(other_ns[1])["reason"] == "Forbidden"
    assert other_job[0] == 403
    (run,) = runs
    assert (run["namespace"], run["pod"], run["job_name"], run["step"]) == ("ml", "llm-0", "llm", 5)
    assert (
        run["info"]["job_kind"] == "TrainJob"
        and run["info"]["node"] == K8S_NODE
        and run["info"]["rank"] == "0"
    )
    # GPU-seconds from the pod's start (an hour ago), not from when the exporter first saw it.
    assert run["gpus"] == 8 and run["gpu_seconds"] == pytest.approx(8 * 3600)
    assert 'training_exporter_drops_total{reason="namespace_mismatch",source="push"} 1.0' in text
    assert 'training_exporter_drops_total{reason="job_mismatch",source="push"} 1.0' in text


def test_unknown_ip_and_host_network_are_refused(kube: FakeKube, k8s_exporter: Any) -> None:
    put_pod(kube, pod("ml", "llm-0", TRAINJOB, ip="10.1.2.3"))
    exp = k8s_exporter(FakeClock(T_START_TS))
    wait(lambda: exp.discovery.ready()[0])
    unknown = http("POST", exp.url + KF.format(ns="ml", name="llm"), BODY)
    put_pod(kube, pod("ml", "host-0", TRAINJOB, ip="127.0.0.1", host_network=True))
    wait(lambda: "host-0" in json.dumps(exp.discovery.ready()) or len(registry_of(exp)) == 2)
    host = http("POST", exp.url + KF.format(ns="ml", name="llm"), BODY)
    assert unknown[0] == 403 and "10.1.2.3" not in json.loads(unknown[1])["message"]
    assert host[0] == 403 and "host network" in json.loads(host[1])["message"]


def test_host_network_pods_need_a_token_that_names_them(kube: FakeKube, k8s_exporter: Any) -> None:
    put_pod(kube, pod("ml", "host-0", TRAINJOB, ip="127.0.0.1", host_network=True))
    put_pod(
        kube,
        pod(
            "team-b",
            "other-host-0",
            {"batch.kubernetes.io/job-name": "other"},
            ip="127.0.0.1",
            host_network=True,
        ),
    )
    kube.tokens["good"] = ("ml", "trainer", "host-0", ["training-progress-exporter"])
    kube.tokens["other-pod"] = ("team-b", "trainer", "other-host-0", ["training-progress-exporter"])
    kube.tokens["wrong-audience"] = ("ml", "trainer", "host-0", ["https://kubernetes.default.svc"])
    exp = k8s_exporter(FakeClock(T_START_TS))
    url = exp.url + KF.format(ns="ml", name="llm")
    wait(lambda: len(registry_of(exp)) == 2)
    results = {
        token: http("POST", url, BODY, {"Authorization": f"Bearer {token}"} if token else {})[0]
        for token in ("", "good", "other-pod", "wrong-audience", "forged")
    }
    reviews = [r for r in kube.requests if r.startswith("POST")]
    http("POST", url, BODY, {"Authorization": "Bearer good"})  # cached: no new review
    again = [r for r in kube.requests if r.startswith("POST")]
    assert results == {"": 403, "good": 200, "other-pod": 403, "wrong-audience": 403, "forged": 403}
    assert len(again) == len(reviews)


def test_kubeflow_trainers_own_token_is_accepted_for_its_trainjob_only(
    kube: FakeKube, k8s_exporter: Any
) -> None:
    """Kubeflow Trainer gives a TrainJob's pods a projected token whose audience names the
    TrainJob's status path (kubeflow/trainer pkg/statusserver TokenAudience); a host-network
    pod that sends it is accepted for that TrainJob, and for nothing else."""
    audience = "trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/llm/status"
    put_pod(kube, pod("ml", "host-0", TRAINJOB, ip="127.0.0.1", host_network=True))
    stranger = pod(
        "ml",
        "stranger-0",
        {"batch.kubernetes.io/job-name": "other"},
        ip="127.0.0.1",
        host_network=True,
    )
    put_pod(kube, stranger)
    kube.tokens["kubeflow"] = ("ml", "trainer", "host-0", [audience])
    # A pod of another job whose pod spec asked for a token with the same audience.
    kube.tokens["borrowed"] = ("ml", "trainer", "stranger-0", [audience])
    exp = k8s_exporter(FakeClock(T_START_TS))
    wait(lambda: len(registry_of(exp)) == 2)

    def push(token: str, name: str) -> tuple[int, Any]:
        status, body = http(
            "POST",
            exp.url + KF.format(ns="ml", name=name),
            BODY,
            {"Authorization": f"Bearer {token}"},
        )
        return status, json.loads(body or b"{}")

    assert push("kubeflow", "llm")[0] == 200
    other = push("kubeflow", "other")  # the audience names llm, not other
    assert other[0] == 403
    borrowed = push("borrowed", "llm")
    assert borrowed[0] == 403 and "not of that TrainJob" in borrowed[1]["message"]
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert (run["pod"], run["job_name"]) == ("host-0", "llm")


def test_only_a_live_pod_owns_its_ip(kube: FakeKube, k8s_exporter: Any) -> None:
    """A finished pod keeps its IP in the API; the node may already have
    given it to another pod. Before, the first match won: a stranger pushed as the finished
    pod (200, a run with its 8 GPUs that never expired), and a new training pod on the
    reused IP was locked out (403)."""
    done = pod("ml", "old-0", {"batch.kubernetes.io/job-name": "old"}, ip="127.0.0.1")
    done["status"]["phase"] = "Succeeded"
    done["status"]["containerStatuses"] = [
        {
            "name": "trainer",
            "state": {"terminated": {"startedAt": T_START, "finishedAt": "2026-11-29T11:00:00Z"}},
        }
    ]
    put_pod(kube, done)
    exp = k8s_exporter(FakeClock(T_START_TS + 7200))
    wait(lambda: len(registry_of(exp)) == 1)
    # A stranger on the finished pod's IP: refused, and no run appears.
    status, body = http("POST", exp.url + KF.format(ns="ml", name="old"), BODY)
    assert status == 403 and b"no training pod on this node has IP" in body
    assert get_json(exp.url + "/api/v1/runs")["runs"] == []
    # A new training pod gets the IP: it reports.
    put_pod(kube, pod("ml", "new-0", TRAINJOB, ip="127.0.0.1"))
    wait(lambda: len(registry_of(exp)) == 2)
    assert http("POST", exp.url + KF.format(ns="ml", name="llm"), BODY)[0] == 200
    # Two live pods claiming one IP: nobody can tell who sends.
    put_pod(kube, pod("ml", "twin-0", TRAINJOB, ip="127.0.0.1"))
    wait(lambda: len(registry_of(exp)) == 3)
    status, body = http("POST", exp.url + KF.format(ns="ml", name="llm"), BODY)
    assert status == 403 and b"claimed by 2 pods" in body


@pytest.mark.slow
def test_random_tokens_cannot_amplify_into_token_reviews(kube: FakeKube, k8s_exporter: Any) -> None:
    """300 pushes with random tokens from a host-network IP: at most the
    per-address burst reaches the API server, the rest are 429; a good token that was
    reviewed before the flood still works, and replaying a rejected token costs nothing."""
    put_pod(kube, pod("ml", "host-0", TRAINJOB, ip="127.0.0.1", host_network=True))
    kube.tokens["good"] = ("ml", "trainer", "host-0", ["training-progress-exporter"])
    exp = k8s_exporter(FakeClock(T_START_TS))
    url = exp.url + KF.format(ns="ml", name="llm")

    def reviews() -> int:
        return len([r for r in kube.requests if r.startswith("POST")])

    wait(lambda: len(registry_of(exp)) == 1)
    assert http("POST", url, BODY, {"Authorization": "Bearer good"})[0] == 200
    before = reviews()
    statuses = [
        http("POST", url, BODY, {"Authorization": f"Bearer random-{i}"})[0] for i in range(300)
    ]
    flood = reviews() - before
    replay = http("POST", url, BODY, {"Authorization": "Bearer random-0"})[0]
    good = http("POST", url, BODY, {"Authorization": "Bearer good"})[0]
    after = reviews()
    drops = exp.stats.snapshot().drops
    assert flood <= 10  # the burst; before: 300
    assert statuses.count(403) == flood and statuses.count(429) == 300 - flood
    assert replay == 403 and good == 200 and after == before + flood  # both from the cache
    assert drops[("push", "review_rate_limited")] == 300 - flood
    assert drops[("push", "token_rejected")] == flood + 1
