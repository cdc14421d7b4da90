"""``act`` with more than one replica: leadership by a ``coordination.k8s.io/v1`` Lease, the
journal that makes a hand-over neither lose nor double an action, and the webhook answered
by any replica (a follower hands the notification to the leader).

The pure rules of the Lease first; then electors and actors through the real ``kubernetes``
client against the fake API server (which refuses a stale ``resourceVersion`` with 409, as
the API server does), on a clock the test moves; last, two real ``act`` processes behind a
real Alertmanager, the leader killed with SIGKILL in the middle of a stream of alerts.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from kubernetes import config as kube_config

from exporter.act.act_config import ActConfig
from exporter.act.controller import Actor
from exporter.act.guard import ActionLimits
from exporter.act.journal import Entry, Journal, decode, encode, trimmed
from exporter.act.kube import Conflict, KubernetesOps
from exporter.act.leader import Elector
from exporter.act.lease import LeaseRecord, Timing, claim
from exporter.act.lease import decode as decode_lease
from exporter.act.lease import encode as encode_lease
from exporter.act.webhook_server import make_server
from exporter.plumbing.httpd import serve_in_thread

from .fakekube import FakeKube, fake_kube
from .test_act import NS, TOKEN, add_trainjob, alert, notification

SYSTEM = "act-system"
LEASE = "training-progress-act"
TIMING = Timing(lease_seconds=3.0, renew_deadline=2.0, retry_period=0.5)
STALLED = {"training-progress.io/on-stalled": "restart"}


# -- the Lease's rules (pure) -------------------------------------------------------------


def test_a_lease_is_taken_when_free_kept_by_its_holder_and_expires_by_what_was_observed() -> None:
    # No lease: create it.
    first = claim(None, 0.0, "a", "http://a", 100.0, 15)
    assert first == LeaseRecord("a", 15, 100.0, 100.0, 0, "http://a")
    # Its holder renews it: acquire time and transitions kept.
    renewed = claim(first, 100.0, "a", "http://a", 105.0, 15)
    assert renewed is not None and (renewed.acquired, renewed.renewed) == (100.0, 105.0)
    # Another candidate waits for the lease duration from when *it* saw the record last
    # change, whatever renewTime says (the holder's clock may be hours off).
    skewed = LeaseRecord("a", 15, 0.0, 0.0, 0, "http://a")
    assert claim(skewed, 200.0, "b", "http://b", 214.9, 15) is None
    taken = claim(skewed, 200.0, "b", "http://b", 215.1, 15)
    assert taken is not None and (taken.holder, taken.transitions) == ("b", 1)
    # A released lease (no holder) is free at once.
    free = LeaseRecord("", 1, 0.0, 0.0, 3, "")
    assert claim(free, 500.0, "b", "http://b", 500.0, 15) == LeaseRecord(
        "b", 15, 500.0, 500.0, 4, "http://b"
    )
    # client-go's order of durations is required.
    with pytest.raises(ValueError, match="retry period < renew deadline < lease duration"):
        Timing(lease_seconds=10, renew_deadline=10, retry_period=2).check()


def test_the_lease_object_reads_back_as_written_and_a_hand_made_one_still_reads() -> None:
    record = LeaseRecord("act-0_ab", 15, 1_800_000_000.25, 1_800_000_010.5, 2, "http://x:9466")
    obj = encode_lease(record, "training-progress-act", SYSTEM, "41")
    assert obj["spec"]["renewTime"] == "2027-01-15T08:00:10.500000Z"
    assert obj["metadata"]["resourceVersion"] == "41"
    assert decode_lease(obj) == record
    odd = decode_lease({"spec": {"leaseDurationSeconds": "x", "renewTime": "yesterday"}})
    assert (odd.holder, odd.lease_seconds, odd.renewed) == ("", 1, 0.0)


def test_the_journal_keeps_pending_actions_and_reads_past_a_broken_entry() -> None:
    entry = Entry(
        "fp@t", "TrainingJobStalled", NS, "TrainJob/llm", "restart", 10.0, False,
        {"kind": "TrainJob", "name": "llm"}, None, (("llm-node-0-0", "uid-1"),),
    )  # fmt: skip
    cm = encode([entry], "j", SYSTEM, None)
    assert decode(cm) == [entry]
    broken = [*json.loads(cm["data"]["actions.json"]), {"identity": 7}, "x"]
    assert decode({"data": {"actions.json": json.dumps(broken)}}) == [entry]
    assert decode({"data": {"actions.json": "{not json"}}) == []
    old_done = Entry("old@t", "A", NS, "Job/x", "suspend", 1.0, True, {})
    old_pending = Entry("p@t", "A", NS, "Job/y", "suspend", 1.0, False, {})
    assert trimmed([old_done, old_pending, entry], now=100_000.0, keep_seconds=86_400) == [
        old_pending,
        entry,
    ]


# -- electors and actors on the fake API server --------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def ops_of(kubeconfig: Path) -> KubernetesOps:
    return KubernetesOps(kube_config.new_client_from_config(config_file=str(kubeconfig)))


def lease_holder(kube: FakeKube) -> str:
    with kube.lock:
        lease = kube.objects.get(("coordination.k8s.io/v1", "leases"), {}).get(
            (SYSTEM, "training-progress-act")
        )
    return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")


def test_one_elector_leads_the_other_takes_over_only_after_the_lease_runs_out(
    tmp_path: Path,
) -> None:
    clock = Clock()
    with fake_kube(tmp_path) as (kube, kubeconfig):
        a, b = (
            Elector(ops_of(kubeconfig), SYSTEM, LEASE, n, f"http://{n}", TIMING, clock)
            for n in ("a", "b")
        )  # fmt: skip
        a.step()
        b.step()
        assert (a.is_leader(), b.is_leader(), lease_holder(kube)) == (True, False, "a")
        assert b.leader_url() == "http://a"
        for _ in range(10):  # a renews every retry period: b never gets it
            clock.now += TIMING.retry_period
            a.step()
            b.step()
        assert (a.is_leader(), b.is_leader()) == (True, False)
        # a is cut off (its node is gone): it stops acting after its renew deadline,
        # before b may take the lease (lease duration after b last saw it change).
        seen = clock.now
        while not b.is_leader():
            clock.now += TIMING.retry_period / 5
            b.step()
            if clock.now - seen > TIMING.renew_deadline:
                assert not a.is_leader()
        assert lease_holder(kube) == "b"
        assert TIMING.lease_seconds <= clock.now - seen <= TIMING.lease_seconds + 0.2
        assert b.leader_url() == ""  # it leads itself
        # Both wrote at once: the API server's 409 lets one through.
        a2 = Elector(ops_of(kubeconfig), SYSTEM, "other", "a", "http://a", TIMING, clock)
        b2 = Elector(ops_of(kubeconfig), SYSTEM, "other", "b", "http://b", TIMING, clock)
        threads = [threading.Thread(target=e.step) for e in (a2, b2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [a2.is_leader(), b2.is_leader()].count(True) == 1


def test_a_leader_that_stops_releases_the_lease_and_the_next_takes_it_at_once(
    tmp_path: Path,
) -> None:
    clock = Clock()
    with fake_kube(tmp_path) as (kube, kubeconfig):
        a = Elector(ops_of(kubeconfig), SYSTEM, LEASE, "a", "http://a", TIMING, clock)
        b = Elector(ops_of(kubeconfig), SYSTEM, LEASE, "b", "http://b", TIMING, clock)
        a.step()
        b.step()
        a.release()
        assert not a.is_leader() and lease_holder(kube) == ""
        b.step()
        assert b.is_leader()  # no lease duration to wait out


def make_actor(kubeconfig: Path, clock: Clock) -> Actor:
    ops = ops_of(kubeconfig)
    config = ActConfig(
        dry_run=False, limits=ActionLimits(per_namespace_per_hour=100, total_per_hour=100)
    )
    actor = Actor(ops, config, clock)
    actor.journal = Journal(ops, SYSTEM, "training-progress-act-journal", 86_400, clock)
    return actor


def pod_uids(kube: FakeKube, job: str) -> dict[str, str]:
    with kube.lock:
        return {
            name: o["metadata"]["uid"]
            for (ns, name), o in kube.objects.get(("v1", "pods"), {}).items()
            if ns == NS and name.startswith(f"{job}-node-")
        }


def deleted(kube: FakeKube) -> list[str]:
    return [w[1].rsplit("/", 1)[-1] for w in kube.writes if w[0] == "DELETE"]


def test_a_new_leader_completes_what_the_last_one_began_once_and_never_twice(
    tmp_path: Path,
) -> None:
    clock = Clock()
    with fake_kube(tmp_path) as (kube, kubeconfig):
        add_trainjob(kube, "llm", STALLED, pods=2)
        add_trainjob(kube, "done", STALLED, pods=1)
        old = make_actor(kubeconfig, clock)
        old.take_over()
        # The old leader handles one alert to its end...
        out = old.handle(parse(alert("TrainingJobStalled", "done-node-0-0", "done")))
        assert [o.outcome for o in out] == ["taken"]
        # ...and dies having written the next action down, before taking it.
        assert old.journal is not None
        uids = pod_uids(kube, "llm")
        pending = Entry(
            "TrainingJobStalled-ml-llm-node-0-0@2026-11-30T10:00:00Z",
            "TrainingJobStalled", NS, "TrainJob/llm", "restart", clock.now, False,
            {"kind": "TrainJob", "apiVersion": "trainer.kubeflow.org/v1alpha1",
             "namespace": NS, "name": "llm", "uid": "uid-llm"},
            None, tuple(sorted(uids.items())),
        )  # fmt: skip
        old.journal.begin(pending)
        # Its controller already recreated one rank under the same name, with a new UID.
        with kube.lock:
            kube.objects[("v1", "pods")][(NS, "llm-node-0-1")]["metadata"]["uid"] = "uid-new"
        before = len(deleted(kube))
        new = make_actor(kubeconfig, clock)
        assert new.take_over() == 1
        # The old rank is deleted; the recreated one (same name, new UID) is not.
        assert deleted(kube)[before:] == ["llm-node-0-0", "llm-node-0-1"]
        assert "llm-node-0-1" in pod_uids(kube, "llm")
        assert all(e.done for e in new.journal.entries)  # type: ignore[union-attr]
        # Re-sends of both alerts are duplicates to the new leader: nothing is deleted again.
        clock.now += 60
        again = new.handle(
            parse(
                alert("TrainingJobStalled", "done-node-0-0", "done"),
                alert("TrainingJobStalled", "llm-node-0-0", "llm"),
            )
        )
        assert [o.outcome for o in again] == ["duplicate", "duplicate"]
        assert len(deleted(kube)) == before + 2
        # The old leader, back from the dead and still believing it leads, is fenced off:
        # its journal write fails (the new leader rewrote it), so it takes no action.
        add_trainjob(kube, "third", STALLED, pods=1)
        with pytest.raises(Conflict):
            old.handle(parse(alert("TrainingJobStalled", "third-node-0-0", "third")))
        assert "third-node-0-0" not in deleted(kube)
        assert [o.outcome for o in new.handle(
            parse(alert("TrainingJobStalled", "third-node-0-0", "third"))
        )] == ["taken"]  # fmt: skip
        # Cooldowns and the breaker start from the journal, not from zero.
        add_trainjob(kube, "third", STALLED, pods=1)  # its controller made the rank again
        clock.now += 1
        newest = make_actor(kubeconfig, clock)
        newest.take_over()
        later = alert(
            "TrainingJobStalled", "third-node-0-0", "third", starts_at="2026-12-01T00:00:00Z"
        )
        assert [o.outcome for o in newest.handle(parse(later))] == ["cooldown"]


def parse(*alerts: dict[str, Any]) -> Any:
    from exporter.act.webhook import parse_notification

    return parse_notification(notification(*alerts))


def post(url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    req = urllib.request.Request(
        url + "/api/v1/alerts",
        body,
        {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}", **(headers or {})},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def test_a_follower_hands_the_notification_to_the_leader_and_never_acts_itself(
    tmp_path: Path,
) -> None:
    clock = Clock()
    with fake_kube(tmp_path) as (kube, kubeconfig):
        add_trainjob(kube, "llm", STALLED, pods=2)
        actors, servers, electors = [], [], []
        for name in ("a", "b"):
            actor = make_actor(kubeconfig, clock)
            found: list[Elector] = []
            server = make_server(
                "127.0.0.1", 0, actor, TOKEN, lambda found=found: found[0].leader_url()
            )
            url = f"http://127.0.0.1:{server.server_address[1]}"
            elector = Elector(
                ops_of(kubeconfig), SYSTEM, LEASE, name, url, TIMING, clock,
                on_started=actor.take_over,
            )  # fmt: skip
            actor.leading = elector.is_leader
            found.append(elector)
            serve_in_thread(server)
            actors.append(actor)
            servers.append((server, url))
            electors.append(elector)
        try:
            for e in electors:
                e.step()
            url_b = servers[1][1]
            assert electors[0].is_leader() and not electors[1].is_leader()
            status, answer = post(
                url_b, notification(alert("TrainingJobStalled", "llm-node-0-0", "llm"))
            )
            assert status == 200 and [o["outcome"] for o in answer["outcomes"]] == ["taken"]
            assert actors[1].stats.snapshot()[1] == {"handed_on": 1}
            assert actors[1].stats.snapshot()[0] == {}  # the follower took no action
            # A notification already handed on is never handed on again (no loop).
            status, answer = post(
                url_b,
                notification(alert("TrainingJobStalled", "llm-node-0-1", "llm")),
                {"X-Training-Progress-Act-Forwarded": "1"},
            )
            assert status == 503 and "not the leader" in answer["message"]
            # With no leader known, a follower answers 503: Alertmanager retries.
            electors[0].release()
            electors[1]._observed = None
            status, _ = post(
                url_b, notification(alert("TrainingJobStalled", "llm-node-0-1", "llm"))
            )
            assert status == 503
            metrics = urllib.request.urlopen(url_b + "/metrics", timeout=5).read().decode()
            assert "training_exporter_act_leader 0.0" in metrics
        finally:
            for server, _ in servers:
                server.shutdown()
                server.server_close()
