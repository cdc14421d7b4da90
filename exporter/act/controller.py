"""Alerts in, actions out: applies the policy to each alert of a notification, through the
guard, on the cluster (or, in dry-run, only says what it would do).

Every alert that ``act`` could act on ends in one outcome, counted as
``training_exporter_actions_total{action, outcome}`` and logged; every one that reached a
decision about an opted-in job (taken, dry run, skipped by the breaker, impossible, failed,
or an invalid annotation) also becomes a Kubernetes Event on the job's object. A job that
did not opt in is not touched at all, not even with an Event.
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Protocol

from ..core.model import valid_kubernetes_names
from ..core.workloads import KINDS, Kind, OwnerMissing, Ref, Refused, chain, identify
from .act_config import ActConfig
from .checkpoint_seen import newest_checkpoint
from .guard import Guard
from .job_owners import Owner, owner_of, reference, running
from .journal import Entry, Journal
from .policy import (
    DELETE,
    NONE,
    NOTIFY,
    RECOMMEND,
    RESTART,
    RULES,
    SCALE,
    SUSPEND,
    decide,
    event_reason,
    short_of_sure,
)
from .resize import CHECKPOINT_ANNOTATION, RECOMMENDED_NODES, Change, NoChange, plan
from .resizer import ResizeSteps, run_resize
from .webhook import Alert

log = logging.getLogger(__name__)
# Alerts of one notification handled at once, and the striped per-job locks.
ALERT_WORKERS = 8
JOB_LOCKS = 64
# Owners read while walking pods' controller chains are kept this long (and at most so
# many): a notification about a job's eight ranks reads its owners once.
OWNER_CACHE_SECONDS = 30.0
OWNER_CACHE_MAX = 4096
RESIZE_WORKERS = 4
MAX_NODES = 4096


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


# Outcomes (the label values of training_exporter_actions_total{outcome}); a bounded set.
TAKEN, DRY_RUN = "taken", "dry_run"
SKIPPED = (
    "resolved",
    "not_actionable",
    "not_opted_in",
    "invalid_policy",
    "duplicate",
    "cooldown",
    "breaker_open",
    "not_found",
    "unsupported_owner",
    "failed",
    # Resizes (exporter.act.resize): the checkpoint is asked for and the resize follows in
    # the background ("started", then "taken" or "no_checkpoint"), or it is not possible.
    "started",
    "no_checkpoint",
    "beyond_bounds",
    "no_change",
)


class ClusterOps(Protocol):
    """What the controller needs from the cluster (:class:`exporter.act.kube.KubernetesOps`)."""

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None: ...
    def pods(self, namespace: str, selector: str) -> list[dict[str, Any]]: ...
    def get(self, kind: Kind, namespace: str, name: str) -> dict[str, Any] | None: ...
    def suspend(self, owner: Owner) -> None: ...
    def delete_pod(self, namespace: str, name: str, uid: str = "") -> None: ...
    def annotate(
        self, kind: Kind | None, namespace: str, name: str, values: dict[str, str]
    ) -> None: ...
    def scale(self, owner: Owner, body: Any) -> None: ...
    def json_patch(self, owner: Owner, ops: list[dict[str, Any]]) -> None: ...
    def event(
        self, involved: dict[str, Any], reason: str, message: str, warning: bool = False
    ) -> None: ...


class ActStats:
    """Thread-safe counts of outcomes per action."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._actions: Counter[tuple[str, str]] = Counter()
        self._notifications: Counter[str] = Counter()

    def action(self, action: str, outcome: str) -> None:
        with self._lock:
            self._actions[(action, outcome)] += 1

    def notification(self, outcome: str) -> None:
        with self._lock:
            self._notifications[outcome] += 1

    def snapshot(self) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
        with self._lock:
            return dict(self._actions), dict(self._notifications)


class NotLeader(Exception):
    """This replica does not lead: the notification goes to the leader (or is retried)."""


@dataclass(frozen=True)
class Outcome:
    """What happened to one alert."""

    alert: str
    namespace: str
    job: str
    action: str
    outcome: str
    message: str


@dataclass
class _Job:
    """The job an alert is about, as found in the cluster."""

    pod: dict[str, Any]
    owner: Owner | None
    obj: dict[str, Any]  # the owner object, or the pod itself for a bare pod
    kind: str
    api_version: str

    @property
    def key(self) -> str:
        meta = self.obj.get("metadata") or {}
        return f"{self.kind}/{meta.get('name', '')}"

    def annotations(self) -> dict[str, str]:
        """The opt-in annotations that count: those of the object acted on. A pod's own
        speak for the pod alone, never for a job that owns it (any pod can annotate
        itself; only the job's owner annotates the job)."""
        return dict((self.obj.get("metadata") or {}).get("annotations") or {})


class Actor:
    """Handles notifications; one per process (the guard's memory is its state)."""

    def __init__(
        self,
        cluster: ClusterOps,
        config: ActConfig,
        clock: Callable[[], float],
        stats: ActStats | None = None,
    ) -> None:
        self.cluster = cluster
        self.config = config
        self.clock = clock
        self.stats = stats or ActStats()
        self.guard = Guard(config.limits)
        # One lock per job (striped: bounded however many jobs), so alerts about different
        # jobs are handled at once and two alerts about one job never act on it together.
        self._job_locks = [threading.Lock() for _ in range(JOB_LOCKS)]
        self._owners: dict[tuple[str, str, str], tuple[float, dict[str, Any] | None]] = {}
        self._cache_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(ALERT_WORKERS, "act-alert")
        # Resizes wait for a checkpoint: apart from the webhook, one at a time per job.
        self._resize_pool = ThreadPoolExecutor(RESIZE_WORKERS, "act-resize")
        self._resizing: set[str] = set()
        self.resizes: list[Future[str]] = []  # the latest ones, for whoever waits on them
        self.sleep: Callable[[float], None] = time.sleep
        # With more than one replica (exporter.act.leader): whether this one leads now, and
        # the journal its actions are written to before they are taken.
        self.leading: Callable[[], bool] = lambda: True
        self.journal: Journal | None = None

    def handle(self, alerts: list[Alert]) -> list[Outcome]:
        """Every alert's outcome, in order; alerts are handled ``ALERT_WORKERS`` at a time.
        Raises ClusterError if the cluster could not be read for an alert (Alertmanager then
        retries the notification; the alerts handled to their end are remembered, the
        others are not). Raises NotLeader, before anything is done, on a replica that does
        not lead."""
        if not self.leading():
            raise NotLeader("this act replica is not the leader")
        futures = [self._pool.submit(self._one, a) for a in alerts]
        outcomes: list[Outcome] = []
        failure: Exception | None = None
        for future in futures:
            try:
                outcomes.append(future.result())
            except Exception as err:
                failure = failure or err
        if failure is not None:
            raise failure
        return outcomes

    def _job_lock(self, namespace: str, key: str) -> threading.Lock:
        return self._job_locks[zlib.crc32(f"{namespace}/{key}".encode()) % len(self._job_locks)]

    def _done(self, alert: Alert, job: str, action: str, outcome: str, message: str) -> Outcome:
        self.stats.action(action, outcome)
        ns = alert.label("namespace")
        level = logging.INFO if outcome in (TAKEN, DRY_RUN) else logging.DEBUG
        if outcome in ("failed", "breaker_open", "invalid_policy", "unsupported_owner"):
            level = logging.WARNING
        log.log(level, "%s %s/%s: %s %s: %s", alert.name, ns, job, action, outcome, message)
        return Outcome(alert.name, ns, job, action, outcome, message)

    def _get(self, kind: Kind, namespace: str, name: str) -> dict[str, Any] | None:
        """A workload object, read at most once per OWNER_CACHE_SECONDS (a job's pods all
        walk up to the same owners)."""
        key = (kind.kind, namespace, name)
        now = self.clock()
        with self._cache_lock:
            hit = self._owners.get(key)
            if hit is not None and hit[0] > now:
                return hit[1]
        obj = self.cluster.get(kind, namespace, name)
        with self._cache_lock:
            self._owners[key] = (now + OWNER_CACHE_SECONDS, obj)
            if len(self._owners) > OWNER_CACHE_MAX:
                self._owners.clear()
        return obj

    def _find(self, alert: Alert) -> _Job | Refused | None:
        """The pod's job, walked up its controller chain (never read from its labels):
        None when the pod is gone, Refused when its labels claim a job that does not own
        it."""
        ns, pod_name = alert.label("namespace"), alert.label("pod")
        # Labels that cannot name a pod never reach the API server.
        valid = valid_kubernetes_names(ns, pod_name)
        pod = self.cluster.pod(ns, pod_name) if valid else None
        if pod is None:
            return None
        meta = pod.get("metadata") or {}
        try:
            refs = chain(meta, self._get)
        except OwnerMissing as err:
            return Refused(err.reason, str(err))
        who = identify(meta, refs)
        if isinstance(who, Refused):
            return who
        owner = owner_of(who.owner, ns) if who.owner is not None else None
        if owner is not None:
            obj = self._get(KINDS[owner.kind], ns, owner.name)
            if obj is None or str((obj.get("metadata") or {}).get("uid") or "") != owner.uid:
                return None  # the job is gone (or was replaced) since
            return _Job(pod, owner, obj, owner.kind, owner.api_version)
        return _Job(pod, None, pod, "Pod", "v1")

    def _owned_by(self, pod: dict[str, Any], owner: Owner) -> bool:
        """Whether ``owner`` is in the pod's controller chain (its UID, not its name)."""
        try:
            refs = chain(pod.get("metadata") or {}, self._get)
        except OwnerMissing:
            return False
        return any(r.uid == owner.uid and r.kind == owner.kind for r in refs)

    def _one(self, alert: Alert) -> Outcome:
        job_name = alert.label("job_name")
        if alert.status != "firing":
            return self._done(alert, job_name, NONE, "resolved", "resolved alerts need nothing")
        if alert.name not in RULES:
            return self._done(alert, job_name, NONE, "not_actionable", "not an alert act handles")
        now = self.clock()
        identity = f"{alert.fingerprint}@{alert.starts_at}"
        if self.guard.handled(identity, now):
            return self._done(alert, job_name, NONE, "duplicate", "this alert was handled")
        # A ClusterError from here on leaves nothing remembered: the re-send tries again.
        job = self._find(alert)
        if job is None:
            self.guard.remember(identity, now)
            return self._done(alert, job_name, NONE, "not_found", "its pod no longer exists")
        if isinstance(job, Refused):
            self.guard.remember(identity, now)
            return self._done(alert, job_name, NONE, job.reason, job.message)
        ns = alert.label("namespace")
        with self._job_lock(ns, job.key):
            if self.guard.handled(identity, now):  # a copy of it, handled meanwhile
                return self._done(alert, job.key, NONE, "duplicate", "this alert was handled")
            outcome = self._decide_and_act(alert, job, now)
            if outcome.outcome != "failed":
                self.guard.remember(identity, now)
            return outcome

    def _decide_and_act(self, alert: Alert, job: _Job, now: float) -> Outcome:
        """The alert's outcome for ``job``, with the job's lock held."""
        ns = alert.label("namespace")
        decision = decide(alert.name, ns, job.annotations(), self.config.policy)
        action = decision.action
        if decision.outcome == "invalid_policy":
            self._event(job, alert.name, NOTIFY, decision.why, warning=True, suffix="Invalid")
            return self._done(alert, job.key, NONE, "invalid_policy", decision.why)
        if decision.outcome != "act":
            return self._done(alert, job.key, NONE, decision.outcome, decision.why)
        if action in (SCALE, RECOMMEND):
            return self._resize(alert, job, action, decision.why, now)
        weaker = short_of_sure(alert.name, action, dict(alert.labels))
        if weaker is not None:
            action, decision = NOTIFY, replace(decision, action=NOTIFY, why=weaker)
        if action == SUSPEND and (job.owner is None or job.owner.suspend_path is None):
            why = f"{job.key} cannot be suspended (use delete or restart)"
            self._event(job, alert.name, action, why, warning=True, suffix="Skipped")
            return self._done(alert, job.key, action, "unsupported_owner", why)
        # What the action would touch, read before anything is recorded: a failed read
        # raises ClusterError with no cooldown and no breaker place taken.
        pods = self._targets(job) if action in (RESTART, DELETE) else []
        what = self._describe(job, action, pods)
        if not self.config.dry_run and not self.leading():
            raise NotLeader(f"leadership lost before acting on {job.key}")
        refused = self.guard.admit(ns, job.key, alert.name, now)
        if refused == "cooldown":
            why = f"acted on {job.key} for {alert.name} less than the cooldown ago"
            return self._done(alert, job.key, action, "cooldown", why)
        if refused == "breaker_open":
            limits = self.config.limits
            why = (
                f"circuit breaker: at most {limits.per_namespace_per_hour} actions an hour in a "
                f"namespace and {limits.total_per_hour} in all"
            )
            self._event(job, alert.name, action, why, warning=True, suffix="Skipped")
            return self._done(alert, job.key, action, "breaker_open", why)
        if self.config.dry_run:
            message = f"dry run: would {what} ({decision.why})"
            self._event(job, alert.name, action, message, suffix="DryRun")
            return self._done(alert, job.key, action, DRY_RUN, message)
        entry = self._entry(alert, job, action, pods, now)
        if self.journal is not None:
            try:
                self.journal.begin(entry)
            except Exception:
                # Not written down, so not taken (a replica fenced off by a new leader
                # ends here): the re-send of the notification goes to the leader.
                self.guard.undo(ns, job.key, alert.name)
                raise
        try:
            self._apply(entry)
        except Exception as err:
            message = f"could not {what}: {err}"
            self._event(job, alert.name, action, message, warning=True, suffix="Failed")
            self.guard.undo(ns, job.key, alert.name)  # the next re-send of the alert tries again
            self._unjournal(entry, done=False)
            return self._done(alert, job.key, action, "failed", message)
        self._unjournal(entry, done=True)
        message = f"{what} ({decision.why})"
        self._event(job, alert.name, action, message, warning=action != NOTIFY)
        return self._done(alert, job.key, action, TAKEN, message)

    def _resize(self, alert: Alert, job: _Job, action: str, why: str, now: float) -> Outcome:
        """A TrainingDeadlineNeedsResize alert about an opted-in job: recommend the size, or
        scale where the API allows it within the job's bounds, after a fresh checkpoint."""
        ns = alert.label("namespace")
        try:
            needed = int(alert.label("nodes_needed"))
        except ValueError:
            needed = 0
        if not 1 <= needed <= MAX_NODES:
            message = f"the alert names no valid nodes_needed ({alert.label('nodes_needed')!r})"
            return self._done(alert, job.key, action, "not_actionable", message)
        change = plan(job.kind, job.obj, needed) if action == SCALE else None
        if isinstance(change, NoChange) and change.reason in ("beyond_bounds", "no_change"):
            self._event(job, alert.name, action, change.message, warning=True, suffix="Skipped")
            return self._done(alert, job.key, action, change.reason, change.message)
        if isinstance(change, Change):
            what = f"resize {job.key} from {change.nodes_from} to {change.nodes_to} nodes"
            if not self.config.prometheus_url:
                message = f"{what} needs prometheus_url to see its checkpoint: not resized"
                self._event(job, alert.name, SCALE, message, warning=True, suffix="Skipped")
                return self._done(alert, job.key, SCALE, "no_checkpoint", message)
        refused = self.guard.admit(ns, job.key, alert.name, now)
        if refused is not None:
            return self._done(alert, job.key, action, refused, f"{refused}: not resized now")
        if not isinstance(change, Change):
            # A recommendation: the size on the job, and an Event.
            reason = change.message if change is not None else f"{needed} nodes recommended"
            if self.config.dry_run:
                message = (
                    f"dry run: would annotate {job.key} {RECOMMENDED_NODES}={needed} ({reason})"
                )
                self._event(job, alert.name, RECOMMEND, message, suffix="DryRun")
                return self._done(alert, job.key, RECOMMEND, DRY_RUN, message)
            try:
                self.cluster.annotate(
                    KINDS.get(job.kind), ns, _name(job.obj), {RECOMMENDED_NODES: str(needed)}
                )
            except Exception as err:
                self.guard.undo(ns, job.key, alert.name)
                message = f"could not annotate {job.key}: {err}"
                self._event(job, alert.name, RECOMMEND, message, warning=True, suffix="Failed")
                return self._done(alert, job.key, RECOMMEND, "failed", message)
            self._event(job, alert.name, RECOMMEND, f"{reason} ({why})")
            return self._done(alert, job.key, RECOMMEND, TAKEN, reason)
        if self.config.dry_run:
            message = f"dry run: would ask for a checkpoint, wait for it, then {what} ({why})"
            self._event(job, alert.name, SCALE, message, suffix="DryRun")
            return self._done(alert, job.key, SCALE, DRY_RUN, message)
        with self._cache_lock:
            if job.key in self._resizing:
                return self._done(alert, job.key, SCALE, "duplicate", "a resize is under way")
            self._resizing.add(job.key)
        steps = self._resize_steps(alert, job, change)
        future = self._resize_pool.submit(self._run_resize, job.key, steps, what)
        self.resizes = [*self.resizes[-15:], future]
        message = f"asked for a checkpoint; then {what} ({why})"
        self._event(job, alert.name, SCALE, message, suffix="Started")
        return self._done(alert, job.key, SCALE, "started", message)

    def _resize_steps(self, alert: Alert, job: _Job, change: Change) -> ResizeSteps:
        ns, job_name, pod = alert.label("namespace"), alert.label("job_name"), _name(job.pod)
        owner = job.owner
        assert owner is not None  # only an owner's kind plans a change

        def record(outcome: str, message: str, warning: bool) -> None:
            suffix = {"taken": "", "no_checkpoint": "NoCheckpoint", "failed": "Failed"}[outcome]
            self._event(job, alert.name, SCALE, message, warning=warning, suffix=suffix)
            self._done(alert, job.key, SCALE, outcome, message)

        def apply() -> None:
            if change.how == "scale":
                self.cluster.scale(owner, change.body)
            else:
                self.cluster.json_patch(owner, change.body)

        return ResizeSteps(
            # The run's rank-0 pod (the alert's): the exporter reads it and tells the run.
            ask_checkpoint=lambda value: self.cluster.annotate(
                None, ns, pod, {CHECKPOINT_ANNOTATION: value}
            ),
            newest_checkpoint=lambda: newest_checkpoint(self.config.prometheus_url, ns, job_name),
            apply=apply,
            record=record,
        )

    def _run_resize(self, key: str, steps: ResizeSteps, what: str) -> str:
        try:
            return run_resize(steps, what, self.config.checkpoint_wait, self.clock, self.sleep)
        finally:
            with self._cache_lock:
                self._resizing.discard(key)

    def _targets(self, job: _Job) -> list[dict[str, Any]]:
        """The job's pods that still hold resources: listed by the label its controller
        sets, and kept only if the job is in their controller chain (any pod can wear the
        label)."""
        if job.owner is None:
            return [job.pod] if running(job.pod) else []
        owner = job.owner
        pods = self.cluster.pods(owner.namespace, owner.selector)
        return [p for p in pods if running(p) and self._owned_by(p, owner)]

    def _describe(self, job: _Job, action: str, pods: list[dict[str, Any]]) -> str:
        if action == SUSPEND:
            return f"suspend {job.key}"
        if action in (RESTART, DELETE):
            names = sorted((p.get("metadata") or {}).get("name", "") for p in pods)
            verb = "delete" if action == DELETE else "restart (delete)"
            return f"{verb} {len(names)} pod(s) of {job.key}: {', '.join(names)}"
        return f"notify about {job.key}"

    def _entry(
        self, alert: Alert, job: _Job, action: str, pods: list[dict[str, Any]], now: float
    ) -> Entry:
        """The action as the journal records it: everything needed to take it again."""
        owner = job.owner
        return Entry(
            identity=f"{alert.fingerprint}@{alert.starts_at}",
            alert=alert.name,
            namespace=alert.label("namespace"),
            job=job.key,
            action=action,
            at=now,
            done=False,
            involved=reference(job.obj, job.kind, job.api_version),
            owner=None
            if owner is None
            else {
                "kind": owner.kind,
                "apiVersion": owner.api_version,
                "name": owner.name,
                "uid": owner.uid,
            },
            pods=tuple(
                (str(m.get("name", "")), str(m.get("uid", "")))
                for m in ((p.get("metadata") or {}) for p in pods)
            ),
        )

    def _apply(self, entry: Entry) -> None:
        """Take the action ``entry`` records; taking it twice changes nothing more (the
        suspend flag is set again; pods are deleted by UID, a new pod of the same name
        is left alone)."""
        if entry.action == SUSPEND:
            assert entry.owner is not None
            owner = owner_of(
                Ref(
                    entry.owner["kind"],
                    entry.owner["apiVersion"],
                    entry.owner["name"],
                    entry.owner["uid"],
                ),
                entry.namespace,
            )
            if owner is None:
                raise ValueError(f"{entry.owner['kind']} cannot be suspended")
            self.cluster.suspend(owner)
        elif entry.action in (RESTART, DELETE):
            for name, uid in entry.pods:
                self.cluster.delete_pod(entry.namespace, name, uid)

    def _unjournal(self, entry: Entry, done: bool) -> None:
        """The action ended: done, or failed (and then not pending any more). A failed write
        leaves it pending; the next leader takes it again, harmlessly."""
        if self.journal is None:
            return
        try:
            if done:
                self.journal.finish(entry.identity)
            else:
                self.journal.drop(entry.identity)
        except Exception as err:
            log.warning("act journal: %s %s: %s", entry.job, entry.identity, err)

    def take_over(self) -> int:
        """Become the leader: read the journal, start the guard from it (alerts handled are
        duplicates, cooldowns and the breaker keep counting), and complete the actions the
        last leader began and did not finish. Returns how many it completed; raises if the
        journal cannot be read or written (then this replica does not lead yet)."""
        if self.journal is None:
            return 0
        entries = self.journal.take_over()
        self.guard = Guard(self.config.limits)  # what it remembered as a follower is stale
        for e in entries:
            self.guard.restore(e.identity, e.namespace, e.job, e.alert, e.at)
        completed = 0
        for e in entries:
            if e.done:
                continue
            try:
                self._apply(e)
            except Exception as err:
                log.warning("act: could not complete %s on %s: %s", e.action, e.job, err)
                self.journal.drop(e.identity)
                self.stats.action(e.action, "failed")
                continue
            self.journal.finish(e.identity)
            completed += 1
            message = f"{e.action} {e.job} for {e.alert}, completed after a change of leader"
            self.stats.action(e.action, TAKEN)
            log.info("act: %s", message)
            try:
                reason = event_reason(e.alert, e.action)
                self.cluster.event(e.involved, reason, message, e.action != NOTIFY)
            except Exception as err:
                log.warning("event on %s: %s", e.job, err)
        return completed

    def _event(
        self,
        job: _Job,
        alert_name: str,
        action: str,
        message: str,
        warning: bool = False,
        suffix: str = "",
    ) -> None:
        reason = event_reason(alert_name, action) + suffix
        try:
            self.cluster.event(
                reference(job.obj, job.kind, job.api_version), reason, message, warning
            )
        except Exception as err:  # an Event is a courtesy: its failure is logged, not fatal
            log.warning("event %s on %s: %s", reason, job.key, err)
