"""The cause table rule by rule, the summary, the record of a run's stacks, and the stacks
endpoint against bodies and pods that lie."""

from __future__ import annotations

import inspect
import json
import re
import threading
import urllib.parse
from http.client import HTTPConnection
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.core.model import ReportError
from exporter.core.stacks import (
    CAUSES,
    CHECKPOINT,
    COLLECTIVE,
    DATA,
    DEVICE,
    RULES,
    UNEXPLAINED,
    UNKNOWN,
    Diagnosis,
    Frame,
    RankStacks,
    ThreadStack,
    diagnose,
    job_cause,
)
from exporter.core.stall import RETELL_SECONDS, StallRecord
from exporter.core.wire import parse_stacks
from exporter.views.stackviews import summary

from .conftest import FakeClock, get_json, http
from .fakekube import FakeKube
from .kube import T_START_TS, TRAINJOB, pod, put_pod, wait

NATIVE = "/api/v1/namespaces/{ns}/runs/{name}/report"
STACKS = "/api/v1/namespaces/{ns}/runs/{name}/stacks"


def _stack(*frames: Frame, name: str = "MainThread", rank: str = "0") -> RankStacks:
    train = Frame("/app/train.py", 60, "<module>", "main()")
    return RankStacks(rank, 100.0, "reporter", (ThreadStack(name, (train, *frames)),))


def _real(fn: Any, function: str | None = None) -> Frame:
    """A frame in a real library function, where this machine's copy of it lives."""
    target = inspect.unwrap(fn)
    return Frame(inspect.getsourcefile(target) or "", 1, function or target.__name__)


def test_every_rule_on_the_library_it_names() -> None:
    torch = pytest.importorskip("torch")
    import torch.distributed as dist
    import torch.utils.data.dataloader as dataloader

    cases = {
        CHECKPOINT: _real(torch.serialization._save),
        DATA: _real(dataloader._BaseDataLoaderIter.__next__),
        COLLECTIVE: _real(dist.all_reduce),
        # No GPU here: the real function's file and name, as a stack inside it would show.
        DEVICE: _real(torch.cuda.synchronize),
    }
    assert set(cases) | {UNKNOWN} == set(CAUSES) == {r.cause for r in RULES} | {UNKNOWN}
    for cause, frame in cases.items():
        d = diagnose(_stack(Frame("/app/train.py", 41, "step", "x"), frame))
        assert d.cause == cause, (cause, frame)
        assert d.frame == "train.py:41 in step"
    assert diagnose(_stack(_real(dist.barrier))).op == "barrier"
    # torch.cuda's other functions are not a device wait.
    assert diagnose(_stack(_real(torch.cuda.is_available))).cause == UNKNOWN


def test_rules_take_precedence_in_table_order() -> None:
    save = Frame("/x/site-packages/torch/serialization.py", 1, "save")
    gather = Frame("/x/site-packages/torch/distributed/distributed_c10d.py", 2, "all_gather")
    # A save that gathers state through a collective is a checkpoint.
    assert diagnose(_stack(save, gather)).cause == CHECKPOINT
    assert diagnose(_stack(gather)).op == "all_gather"


def test_the_training_thread_is_main_or_the_script_or_the_last() -> None:
    sleep = Frame("/app/train.py", 41, "main", "time.sleep(1)")
    idle = Frame("/usr/lib/python3.11/threading.py", 320, "wait")
    named = RankStacks(
        "0", 1.0, "reporter", (ThreadStack("pin", (idle,)), ThreadStack("MainThread", (sleep,)))
    )
    assert diagnose(named).frame == "train.py:41 in main"
    module = Frame("/app/train.py", 60, "<module>")
    anonymous = RankStacks(
        "0", 1.0, "faulthandler", (ThreadStack("", (module, sleep)), ThreadStack("", (idle,)))
    )
    assert diagnose(anonymous).frame == "train.py:41 in main"


def _d(rank: str, cause: str, op: str = "", seq: int | None = None) -> Diagnosis:
    return Diagnosis(rank, cause, op, seq, "train.py:41 in main", "", "", "reporter", 1.0)


def test_the_summary_names_the_blocker_first_and_groups_the_waiting() -> None:
    ds = [
        _d("2", COLLECTIVE, "all_reduce", 812),
        _d("1", UNKNOWN),
        _d("0", COLLECTIVE, "all_reduce", 812),
    ]
    assert summary(ds) == "rank 1 is at train.py:41 in main; ranks 0, 2 wait in all_reduce #812"
    assert job_cause(ds) == UNKNOWN
    assert job_cause([_d("0", COLLECTIVE, "barrier")]) == COLLECTIVE
    assert job_cause([_d("0", DATA), _d("1", UNKNOWN)]) == DATA
    assert job_cause([]) is None


@pytest.mark.parametrize(
    "doc, reason",
    [
        ({"rank": -1, "threads": []}, "rank"),
        ({"rank": True, "threads": []}, "rank"),
        ({"rank": 0, "threads": {}}, "threads"),
        ({"rank": 0, "threads": [{}] * 33}, "more than 32"),
        (
            {"rank": 0, "threads": [{"frames": [{"file": "a", "line": "1", "function": "f"}]}]},
            "line",
        ),
        ({"rank": 0, "threads": [{"frames": [{"file": 1, "line": 1, "function": "f"}]}]}, "file"),
    ],
)
def test_malformed_stacks_are_refused_with_a_reason(doc: dict[str, Any], reason: str) -> None:
    with pytest.raises(ReportError) as err:
        parse_stacks(doc, 1.0)
    assert err.value.reason == "invalid_stacks" and reason in err.value.message


def test_the_flight_recorder_names_the_collective_and_the_last_one_finished() -> None:
    waiting = Frame("/x/site-packages/torch/distributed/distributed_c10d.py", 2, "all_reduce")
    frames = [{"file": waiting.file, "line": 2, "function": "all_reduce"}]
    body = {"rank": 0, "threads": [{"name": "MainThread", "frames": frames}]}
    d = diagnose(
        parse_stacks({**body, "collective": {"op": "all_reduce", "seq": 5, "completed": 4}}, 1.0)
    )
    assert (d.cause, d.op, d.seq, d.completed) == (COLLECTIVE, "all_reduce", 5, 4)
    sleeping = {
        "rank": 1,
        "threads": [
            {
                "name": "MainThread",
                "frames": [
                    {
                        "file": "/app/train.py",
                        "line": 41,
                        "function": "main",
                        "code": "time.sleep(1)",
                    }
                ],
            }
        ],
    }
    blocker = diagnose(parse_stacks({**sleeping, "collective": {"completed": 4}}, 1.0))
    assert (blocker.cause, blocker.completed) == (UNKNOWN, 4)
    assert summary([blocker, d]) == (
        "rank 1 is at train.py:41 in main (time.sleep(1)), its last collective finished #4; "
        "rank 0 waits in all_reduce #5"
    )
    # An async collective in flight does not make a rank whose stack is elsewhere wait in it.
    other = diagnose(parse_stacks({**sleeping, "collective": {"op": "all_reduce", "seq": 9}}, 1.0))
    assert other.cause == UNKNOWN
    for bad in ({"seq": -1}, {"op": 3}, [], {"completed": True}):
        with pytest.raises(ReportError):
            parse_stacks({**body, "collective": bad}, 1.0)


def test_stacks_are_bounded_and_label_safe() -> None:
    frame = {"file": "\ud800" + "a" * 1000, "line": 1, "function": "f" * 1000, "code": "c"}
    st = parse_stacks({"rank": 3, "threads": [{"name": "t", "frames": [frame] * 500}]}, 5.0)
    (thread,) = st.threads
    assert len(thread.frames) == 64 and len(thread.frames[0].file) == 256
    d = diagnose(st)
    assert len(d.frame) <= 120
    d.frame.encode("utf-8")  # a lone surrogate became a replacement character


def test_control_characters_in_a_stack_reach_no_label() -> None:
    """A stack is the pod's to write: NUL, ESC and CR in a file, function or collective name
    are replaced before they become the frame, call or op label of training_stall_info."""
    hostile = {"file": "/app/t\x00r\x1b[2Jain.py", "line": 7, "function": "step\r\n", "code": ""}
    wait_in = {
        "file": "/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py",
        "line": 1,
        "function": "all_reduce",
    }
    body = {
        "rank": 0,
        "threads": [{"name": "MainThread", "frames": [hostile, wait_in]}],
        "collective": {"op": "all_\x00reduce", "seq": 3},
    }
    d = diagnose(parse_stacks(body, 1.0))
    assert d.cause == COLLECTIVE and d.frame.startswith("t_r_[2Jain.py:7")
    for value in (d.frame, d.call, d.op):
        assert value and not re.search(r"[\x00-\x1f\x7f]", value), value
    bare = diagnose(
        parse_stacks({"rank": 1, "threads": [], **{k: body[k] for k in ["collective"]}}, 1.0)
    )
    assert bare.op == "all__reduce"


def test_a_stalled_rank_is_asked_once_then_again_only_after_a_quiet_minute() -> None:
    rec = StallRecord()
    assert not rec.wants("0", None, 10.0)  # not stalled, nobody asked
    assert rec.wants("0", 5.0, 10.0)
    assert not rec.wants("0", 5.0, 11.0)
    assert rec.wants("0", 5.0, 10.0 + RETELL_SECONDS)
    rec.add(RankStacks("0", 71.0, "reporter", ()))
    assert not rec.wants("0", 5.0, 200.0)  # it answered since the stall began
    rec.requested("1", 300.0)  # a person asks with the annotation
    assert rec.wants("0", None, 300.0)
    rec.requested("1", 400.0)  # the same value is not a new question
    rec.add(RankStacks("0", 301.0, "reporter", ()))
    assert not rec.wants("0", None, 400.0)


def test_the_stall_split_waits_for_a_cause_then_charges_it() -> None:
    rec = StallRecord()
    rec.charge(10.0, since=100.0)
    assert rec.pending == 10.0 and sum(v for _, v in rec.split_view()) == 0
    rec.add(
        RankStacks(
            "0",
            120.0,
            "reporter",
            (
                ThreadStack(
                    "MainThread",
                    (Frame("/x/site-packages/torch/utils/data/dataloader.py", 1, "_next_data"),),
                ),
            ),
        )
    )
    rec.charge(5.0, since=100.0)
    assert dict(rec.split_view())[DATA] == 15.0
    rec.charge(5.0, since=500.0)  # a new stall: the old stacks do not explain it
    rec.charge(0.0, since=None)  # it ended unexplained
    assert dict(rec.split_view())[UNEXPLAINED] == 5.0 and rec.pending == 0


def _native(step: int) -> bytes:
    return json.dumps({"step": step, "max_steps": 100}).encode()


def test_stacks_endpoint_refuses_what_it_cannot_use(exporter_factory: Any) -> None:
    exp = exporter_factory()
    url = exp.url + STACKS.format(ns="default", name="r")
    body = json.dumps({"rank": 0, "threads": []}).encode()
    assert http("POST", url, body)[0] == 404  # no run yet: reports come first
    assert http("POST", exp.url + NATIVE.format(ns="default", name="r"), _native(1))[0] == 200
    assert http("POST", url, b"[1]")[0] == 422
    assert http("POST", url, b"{" * 100)[0] == 422
    assert http("POST", url, b"x" * (65 * 1024))[0] == 413
    status, answer = http("POST", url, body)
    assert status == 200 and json.loads(answer) == {"status": "ok", "directives": []}
    text = http("GET", exp.url + "/metrics")[1].decode()
    assert 'training_exporter_drops_total{reason="invalid_stacks",source="stacks"} 1.0' in text
    assert 'reason="stacks_unknown_run",source="stacks"' in text


def test_a_pod_cannot_post_or_ask_for_another_pods_stacks(
    kube: FakeKube, k8s_exporter: Any
) -> None:
    put_pod(kube, pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1"))
    put_pod(
        kube,
        pod(
            "team-b",
            "other-0",
            {**TRAINJOB, "trainer.kubeflow.org/trainjob-name": "other"},
            ip="127.0.0.2",
        ),
    )
    exp = k8s_exporter(FakeClock(T_START_TS + 3600))
    wait(lambda: exp.ready()[0] or exp.poll_once() is not None)
    body = json.dumps({"rank": 0, "threads": []}).encode()
    mine = http("POST", exp.url + STACKS.format(ns="ml", name="llm"), body)
    theirs = http("POST", exp.url + STACKS.format(ns="team-b", name="other"), body)
    assert theirs[0] == 403, theirs
    assert mine[0] in (200, 404)  # its own run (404 only until its first report)
    assert get_json(exp.url + "/api/v1/runs")["runs"] == []


SECRET = "API_KEY = 'sk-live-0123456789'"
STACK_WITH_CODE = json.dumps(
    {
        "rank": 0,
        "threads": [
            {
                "name": "MainThread",
                "frames": [
                    {"file": "/app/train.py", "line": 7, "function": "main", "code": SECRET}
                ],
            }
        ],
    }
).encode()


def http_from(source: str, method: str, url: str, headers: dict[str, str] | None = None) -> bytes:
    """A request sent from the loopback address ``source`` (127.0.0.3: not a pod's IP);
    the answer's body, which must be 200."""
    parts = urllib.parse.urlsplit(url)
    conn = HTTPConnection(parts.hostname or "", parts.port, timeout=10, source_address=(source, 0))
    try:
        conn.request(method, parts.path, headers=headers or {})
        resp = conn.getresponse()
        body = resp.read()
    finally:
        conn.close()
    assert resp.status == 200, (resp.status, body)
    return body


def test_source_lines_reach_the_runs_pod_and_who_may_get_its_pods_only(
    kube: FakeKube, k8s_exporter: Any
) -> None:
    """F2 (#56): a stack's source lines are the run's code. Its own pod, and a person whose
    token may get pods in its namespace (TokenReview + SubjectAccessReview), see them on the
    stacks endpoint and the run's page; another address, a token for another namespace, or
    no token, see file, line and function only; no list view ever carries them."""
    put_pod(kube, pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1"))
    kube.users.update({"alice-token": ("alice", ["ml-team"]), "bob-token": ("bob", [])})
    kube.grants.update({("ml-team", "ml", "get", "pods"), ("bob", "team-b", "get", "pods")})
    exp = k8s_exporter(FakeClock(T_START_TS + 3600))
    wait(lambda: exp.ready()[0] or exp.poll_once() is not None)
    assert http("POST", exp.url + NATIVE.format(ns="ml", name="llm"), _native(3))[0] == 200
    status, _ = http("POST", exp.url + STACKS.format(ns="ml", name="llm"), STACK_WITH_CODE)
    assert status == 200
    stacks = exp.url + "/api/v1/runs/ml/llm-0/stacks"
    page = exp.url + "/runs/ml/llm-0"
    own = get_json(stacks)  # from 127.0.0.1: the pod itself
    assert own["stacks"][0]["threads"][0]["frames"][0]["code"] == SECRET
    for headers in ({}, {"Authorization": "Bearer bob-token"}, {"Authorization": "Bearer x"}):
        doc = json.loads(http_from("127.0.0.3", "GET", stacks, headers))
        frame = doc["stacks"][0]["threads"][0]["frames"][0]
        assert frame["function"] == "main" and frame["line"] == 7 and frame["code"] == ""
        assert SECRET.encode() not in http_from("127.0.0.3", "GET", page, headers)
    alice = {"Authorization": "Bearer alice-token"}
    assert SECRET in http_from("127.0.0.3", "GET", stacks, alice).decode()
    for view in ("/api/v1/runs", "/", "/metrics"):
        assert SECRET.encode() not in http("GET", exp.url + view)[1]
        assert b"sk-live" not in http_from("127.0.0.3", "GET", exp.url + view, alice)
    # Answers are cached per token and namespace: asking again costs the API server nothing.
    asked = len([r for r in kube.requests if "subjectaccessreviews" in r])
    http_from("127.0.0.3", "GET", stacks, alice)
    assert len([r for r in kube.requests if "subjectaccessreviews" in r]) == asked == 2


def test_standalone_shows_source_lines_to_this_machine_or_the_push_token() -> None:
    """Standalone: a loopback caller reads them; on a shared network (a push token), only a
    caller that sends the token does."""
    from exporter.plumbing.discovery import StandaloneCodeReader

    local = StandaloneCodeReader()
    assert local.may_read("ns", "p", "127.0.0.1", None) and local.may_read("ns", "p", "::1", None)
    assert not local.may_read("ns", "p", "10.0.0.7", None)
    shared = StandaloneCodeReader("s3cret")
    assert shared.may_read("ns", "p", "10.0.0.7", "Bearer s3cret")
    assert not shared.may_read("ns", "p", "127.0.0.1", None)
    assert not shared.may_read("ns", "p", "10.0.0.7", "Bearer nope")


def test_capture_is_bounded_and_leaves_out_the_reporter() -> None:
    from training_progress_reporter.channels import stacks_url
    from training_progress_reporter.stackcapture import capture

    stop = threading.Event()

    def deep(n: int) -> None:
        if n:
            deep(n - 1)
        else:
            stop.wait()

    threads = [threading.Thread(target=deep, args=(200,), daemon=True) for _ in range(40)]
    for t in threads:
        t.start()
    try:
        body = capture(7, exclude={threading.get_ident()}, max_bytes=20_000)
    finally:
        stop.set()
    doc = json.loads(body)
    assert len(body) <= 20_000 and doc["rank"] == 7
    assert 1 <= len(doc["threads"]) <= 16
    assert all(len(t["frames"]) <= 48 for t in doc["threads"])
    assert all(t["name"] != threading.current_thread().name for t in doc["threads"])
    parse_stacks(doc, 1.0)  # what the reporter sends, the exporter takes
    assert stacks_url("http://e:9465/api/v1/namespaces/a/runs/b/report").endswith("/runs/b/stacks")
    assert stacks_url("http://e:9465/other") == ""


def test_stacks_are_never_sent_when_switched_off() -> None:
    from training_progress_reporter import ProgressReporter

    env = {"TPE_REPORT_URL": "http://127.0.0.1:9/api/v1/namespaces/a/runs/b/report"}
    off = ProgressReporter(rank=1, channels=["exporter"], environ={**env, "TPE_REPORT_STACKS": "0"})
    assert off._stacks_url == "" and off._thread is None
    on = ProgressReporter(rank=1, channels=["exporter"], environ=env, heartbeat_seconds=60)
    try:
        assert on._stacks_url.endswith("/stacks") and on._thread is not None
    finally:
        on.close(1)


def _big_stack(rank: int) -> bytes:
    """One rank's stacks of ~50 KB: 64 frames, each with file, function and source line
    at their 256-character bound."""
    frame = {
        "file": "/app/" + "d" * 240 + f"{rank:010d}.py",
        "line": 1,
        "function": "f" * 256,
        "code": "c" * 256,
    }
    return json.dumps(
        {"rank": rank, "threads": [{"name": "MainThread", "frames": [frame] * 64}]}
    ).encode()


@pytest.mark.slow
def test_stacks_of_many_ranks_stay_within_the_budget_and_64_ranks_a_run(
    exporter_factory: Any,
) -> None:
    """F3 (#56): 10 runs x 80 ranks x 50 KB bodies (40 MB of JSON): each run keeps at most
    its 64 newest ranks, all runs' stacks together stay under the stacks budget (the oldest
    evicted and counted), the exporter says what it holds against its budget, and the
    process grows by a bounded amount (before: 14 runs x 256 ranks took 30 -> 313 MiB)."""
    import resource

    from exporter.core.stacks import MAX_RANKS, STACKS_BUDGET_BYTES

    exp = exporter_factory()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for run in range(10):
        name = f"r{run}"
        assert http("POST", exp.url + NATIVE.format(ns="default", name=name), _native(1))[0] == 200
        for rank in range(80):
            url = exp.url + STACKS.format(ns="default", name=name)
            assert http("POST", url, _big_stack(rank))[0] == 200
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    held = exp.tracker.memory_used()["stacks"]
    assert 0.5 * STACKS_BUDGET_BYTES < held <= STACKS_BUDGET_BYTES
    families = {
        f.name: {tuple(sorted(s.labels.items())): s.value for s in f.samples}
        for f in text_string_to_metric_families(http("GET", exp.url + "/metrics")[1].decode())
    }
    assert families["training_exporter_memory_used_bytes"][(("kind", "stacks"),)] == held
    assert families["training_exporter_memory_budget_bytes"][(("kind", "stacks"),)] == float(
        STACKS_BUDGET_BYTES
    )
    evicted = families["training_exporter_drops"][
        (("reason", "stacks_budget"), ("source", "stacks"))
    ]
    assert evicted > 0
    kept = 0
    for run in range(10):
        doc = get_json(exp.url + f"/api/v1/runs/default/r{run}/stacks")
        ranks = {s["rank"] for s in doc["stacks"]}
        assert len(ranks) <= MAX_RANKS
        kept += len(ranks)
    assert kept + evicted <= 10 * 80 and kept < 10 * MAX_RANKS
    # The newest run's newest ranks are kept; the oldest run's oldest went first.
    newest = get_json(exp.url + "/api/v1/runs/default/r9/stacks")["stacks"]
    assert "79" in {s["rank"] for s in newest}
    assert grown_mib < 120, grown_mib


def test_read_authorization_asks_who_may_get_each_path(kube: FakeKube, k8s_exporter: Any) -> None:
    """#56 (optional): with ``read_authorization`` every read but the probes needs a bearer
    token whose user may ``get`` its path (a SubjectAccessReview on the non-resource URL,
    as kube-rbac-proxy asks): none is 401, a user without the grant 403, Prometheus' grant
    of /metrics reads /metrics and nothing else, and a grant of /api/v1/runs* its runs."""
    put_pod(kube, pod("ml", "llm-0", TRAINJOB, ip="127.0.0.1"))
    kube.users.update(
        {"prom-token": ("system:serviceaccount:monitoring:prometheus", []), "eve": ("eve", [])}
    )
    kube.users["ops-token"] = ("ops", ["ops"])
    kube.grants.update(
        {
            ("system:serviceaccount:monitoring:prometheus", "", "get", "url:/metrics"),
            ("ops", "", "get", "url:/api/v1/runs*"),
        }
    )
    exp = k8s_exporter(FakeClock(T_START_TS + 3600), read_authorization=True)
    wait(lambda: exp.ready()[0] or exp.poll_once() is not None)
    assert http("GET", exp.url + "/healthz")[0] == 200
    assert http("GET", exp.url + "/metrics")[0] == 401
    assert http("GET", exp.url + "/metrics", headers={"Authorization": "Bearer eve"})[0] == 403
    prom = {"Authorization": "Bearer prom-token"}
    assert http("GET", exp.url + "/metrics", headers=prom)[0] == 200
    assert http("GET", exp.url + "/api/v1/runs", headers=prom)[0] == 403
    ops = {"Authorization": "Bearer ops-token"}
    assert http("GET", exp.url + "/api/v1/runs", headers=ops)[0] == 200
    assert http("GET", exp.url + "/", headers=ops)[0] == 403
    # Pushes are authorized as before, by the pod's IP: the setting is about reads.
    assert http("POST", exp.url + NATIVE.format(ns="ml", name="llm"), _native(3))[0] == 200


def test_read_authorization_needs_kubernetes_mode(exporter_factory: Any) -> None:
    from exporter.plumbing.discovery import DiscoveryError

    with pytest.raises(DiscoveryError, match="Kubernetes mode only"):
        exporter_factory(read_authorization=True)


def test_a_process_that_names_no_rank_is_the_process_never_rank_question_mark() -> None:
    """A single-process run's faulthandler dump says no rank: "the process is at ...", not
    "rank ? is at ..."; a rank missing among named ones, and a stuck rank with no number,
    are said in words too."""
    from exporter.core.ranks import Laggard
    from exporter.views.stackviews import summary

    alone = Diagnosis("", "unknown", "", None, "train.py:36 in main", "", "", "log", 1.0)
    assert summary([alone]) == "the process is at train.py:36 in main"
    laggard = Laggard(rank="", pod="llm-1", node="node-a", behind_seconds=76)
    assert laggard.describe() == "a rank (pod llm-1 on node-a) stopped 1m16s before the newest rank"
    assert laggard.short() == "llm-1@node-a"
