"""A stdlib-only progress reporter for training code: two lines in any training loop.

    from training_progress_reporter import ProgressReporter
    reporter = ProgressReporter(total_steps=10_000)
    for step in ...:
        reporter.update(step=step, loss=loss, learning_rate=lr)
    reporter.finish()

It imports only the standard library, so it works where the exporter's dependencies are
absent (``pip install ./reporter``, or the one file ``python reporter/assemble.py`` joins
the package into, copied into an image). It never slows, blocks or breaks
training: ``update()`` only stores the latest values under a lock; a daemon thread sends
them (coalesced, at most every ``interval`` seconds plus the first and final report),
retries with backoff, and swallows every error. Only global rank 0 reports, unless told
otherwise.

The exporter channel's answers may carry **directives**: ``should_checkpoint()`` is True
once after the exporter asked the run to save (its ETA passed its ``deadline``, its pod is
being deleted or its node drained, or someone annotated the job
``training-progress.io/checkpoint``). The Transformers and Lightning callbacks save then.
A ``stacks`` directive (the run stalled, or someone annotated its pod
``training-progress.io/stacks``) makes the background thread post every Python thread's
stack (file, line, function; no values) to the exporter (stacks.py), so the exporter can say
where the run is stuck and why. Every rank takes part: a rank that does not report (all but
0, unless ``all_ranks``) still asks the exporter at each heartbeat whether it wants its
stacks, in one small request. ``stacks=False`` or ``TPE_REPORT_STACKS=0`` turns it off.

While the process lives, the thread also sends a **heartbeat**: the latest values again
when nothing new was sent for ``heartbeat_seconds`` (default 60 s, ``TPE_REPORT_HEARTBEAT``;
0 turns it off). A training loop that hangs (a deadlock, a stuck collective) stops calling
``update()`` but its process, and this thread, live on: the exporter then sees reports with
a frozen step and calls the run *stalled*. A process that died sends nothing, and its run
turns *silent*. Without the heartbeat both would look the same. The heartbeat goes on after
``finish()`` for as long as the process lives: a finished run that keeps its process (and
its GPUs) keeps saying so, and becomes *finished-but-running*; one whose process exited goes
quiet and stays *finished*.

Every report carries ``start_time`` (when this reporter started: a new process under the
same run name is a new attempt) and ``gpus``: the ``gpus`` argument, else the devices this
process sees (``CUDA_VISIBLE_DEVICES``, or ``torch.cuda.device_count()`` when torch is
already imported); unknown (not sent) when neither says.

Channels, each enabled when its configuration is present (several may be active at once):

* **kubeflow**: ``KUBEFLOW_TRAINER_SERVER_URL`` (+ ``_TOKEN`` file, ``_CA_CERT`` file), the
  upstream Kubeflow Trainer status body, as Transformers' ``KubeflowCallback`` sends it;
* **exporter**: ``TPE_REPORT_URL``, the node-local exporter's native push URL: in
  Kubernetes through its node-local Service,
  ``http://training-progress-exporter.training-progress.svc:9465/api/v1/namespaces/NS/runs/NAME/report``
  (docs/reporter.md says why not the node IP); standalone ``http://127.0.0.1:9465/...``;
* **file**: ``TPE_STATUS_FILE``, a native JSON report written atomically (temp, fsync, rename);
* **stdout**: when none of the above is set, one structured line per report, in the Kubeflow
  KEP's marker form ``[trainer.kubeflow.org/v1alpha1/trainjob/trainerStatus] {json}``, which the
  exporter's log source reads from container logs.
"""

from __future__ import annotations

import atexit
import json
import logging
import math
import os
import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any, TextIO

from .channels import (
    CHANNELS,
    ENV_CHANNELS,
    ENV_KUBEFLOW_URL,
    ENV_REPORT_TOKEN_FILE,
    ENV_REPORT_URL,
    ENV_STATUS_FILE,
    STACKS_DIRECTIVE,
    Sender,
    _KubeflowSender,
    _post,
    _print_line,
    _token_header,
    directives_of,
    kubeflow_body,
    stacks_url,
    write_status_file,
)
from .environment import detect_gpu_model, detect_gpus, global_rank
from .stackcapture import capture

ENV_HEARTBEAT = "TPE_REPORT_HEARTBEAT"  # seconds between heartbeats; 0 turns them off
ENV_STACKS = "TPE_REPORT_STACKS"  # "0": never send stacks, whatever the exporter asks
DEFAULT_HEARTBEAT_SECONDS = 60.0


# One warning when a channel starts failing (refused, unreachable, an error answer), one when
# it goes through again: a reporter pointed at a closed port says so, once, not at every try.
log = logging.getLogger("training_progress_reporter")


def _number(value: Any) -> float | None:
    """A float from a Python number or a one-element tensor/array; None if not numeric."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    item = getattr(value, "item", None)
    if callable(item):
        try:
            out = item()
        except Exception:
            return None
        return float(out) if isinstance(out, int | float) and not isinstance(out, bool) else None
    return None


def _json_float(value: float) -> float | str:
    # Standard JSON has no NaN; the exporter reads the strings "nan", "inf", "-inf".
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


class _State:
    """The latest values; written by update() on the training thread, read by the sender."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.metrics: dict[str, float] = {}
        self.version = 0
        self.final = False


class ProgressReporter:
    """Reports training progress in the background; see the module docstring."""

    def __init__(
        self,
        total_steps: int | None = None,
        *,
        total_epochs: float | None = None,
        interval: float = 5.0,
        rank: int | None = None,
        all_ranks: bool = False,
        channels: list[str] | None = None,
        environ: Mapping[str, str] | None = None,
        timeout: float = 5.0,
        framework: str | None = None,
        stdout: TextIO | None = None,
        heartbeat_seconds: float | None = None,
        deadline: float | str | None = None,
        gpus: float | None = None,
        stacks: bool | None = None,
        flops_per_token: float | None = None,
        model_parameters: int | None = None,
        gpu_model: str | None = None,
    ) -> None:
        env = dict(os.environ if environ is None else environ)
        self.rank = global_rank(env) if rank is None else rank
        self.enabled = all_ranks or self.rank == 0
        self.interval = interval
        self.heartbeat_seconds = (
            _heartbeat_from(env) if heartbeat_seconds is None else max(0.0, heartbeat_seconds)
        )
        self._last_sent = 0.0  # time.monotonic() of the last successful send
        self.timeout = timeout
        self._state = _State()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._sent_version = 0
        self._errors = 0
        self._stdout = stdout
        self._checkpoint = threading.Event()  # the exporter asked for a checkpoint
        self._flush = threading.Event()  # finish(): send now, not at the next interval
        self._sent = threading.Event()  # a send succeeded (finish() waits for its own)
        self.channels = self._pick_channels(env, channels)
        self._stacks_wanted = threading.Event()  # the exporter asked for our stacks
        self._stacks_url = (
            stacks_url(env.get(ENV_REPORT_URL, ""))
            if "exporter" in self.channels
            and (env.get(ENV_STACKS) != "0" if stacks is None else stacks)
            else ""
        )
        self._headers = _token_header(env.get(ENV_REPORT_TOKEN_FILE, ""))
        self._senders: list[Sender] = [self._sender(name, env) for name in self.channels]
        self._failing: set[str] = set()  # channels whose last send failed (warned once)
        with self._lock:
            if total_steps is not None:
                self._state.values["max_steps"] = int(total_steps)
            if total_epochs is not None:
                self._state.values["max_epochs"] = float(total_epochs)
            if framework:
                self._state.values["framework"] = framework
            if deadline is not None:  # Unix seconds or RFC 3339: when the run must be done
                self._state.values["deadline"] = deadline
            self._state.values["start_time"] = time.time()
            seen = detect_gpus(env) if gpus is None else _number(gpus)
            if seen is not None:
                self._state.values["gpus"] = seen
            # For MFU: the model's training FLOPs per token (6 x parameters when only those
            # are given: forward and backward of a dense transformer, attention aside), and
            # the GPU model where torch can tell.
            flops = _number(flops_per_token)
            if flops is None and model_parameters:
                flops = 6.0 * float(model_parameters)
            if flops is not None and flops > 0:
                self._state.values["model_flops_per_token"] = flops
            model = gpu_model or detect_gpu_model()
            if model:
                self._state.values["gpu_model"] = model[:64]
            self._state.version += 1
        self._thread: threading.Thread | None = None
        if self.enabled and self._senders:
            self._thread = threading.Thread(target=self._run, name="progress-reporter", daemon=True)
            self._thread.start()
            # Flush at interpreter exit if training ends without finish(); weakly held so
            # the reporter can still be garbage-collected.
            atexit.register(_close_at_exit, weakref.ref(self))
        elif not self.enabled and self._stacks_url:
            # A rank that does not report still tells why it is stuck when asked.
            self._thread = threading.Thread(
                target=self._watch, name="progress-reporter-stacks", daemon=True
            )
            self._thread.start()
            atexit.register(_close_at_exit, weakref.ref(self))

    # -- the training thread's API (no I/O here) ----------------------------------------

    def update(
        self,
        step: int | None = None,
        *,
        loss: Any = None,
        learning_rate: Any = None,
        grad_norm: Any = None,
        eval_loss: Any = None,
        epoch: Any = None,
        gpus: Any = None,
        **metrics: Any,
    ) -> None:
        """Record the latest values. Cheap and non-blocking; never raises."""
        if not self.enabled:
            return
        try:
            with self._lock:
                values = self._state.values
                if step is not None:
                    values["step"] = int(step)
                for key, raw in (
                    ("loss", loss),
                    ("learning_rate", learning_rate),
                    ("grad_norm", grad_norm),
                    ("eval_loss", eval_loss),
                    ("epoch", epoch),
                    ("gpus", gpus),
                ):
                    if raw is not None:
                        values[key] = raw
                if metrics:
                    self._state.metrics.update(metrics)
                self._state.version += 1
        except Exception:
            return

    def checkpointed(self, step: int | None = None, seconds: float | None = None) -> None:
        """Record that the run saved a checkpoint now, at ``step`` (default: the latest step
        given to update()), the save having taken ``seconds`` where the caller timed it. The
        exporter then counts the work at risk from here
        (``training_progress_at_risk_gpu_seconds``) and, before a kill deadline, asks for a
        save early enough for one that long. Cheap and non-blocking; never raises."""
        if not self.enabled:
            return
        try:
            with self._lock:
                values = self._state.values
                saved = int(step) if step is not None else values.get("step")
                if saved is not None:
                    values["last_checkpoint_step"] = saved
                values["last_checkpoint_timestamp"] = time.time()
                if seconds is not None and 0 < float(seconds) <= 86_400:
                    values["last_checkpoint_seconds"] = float(seconds)
                self._state.version += 1
            self._flush.set()  # said at once: what is at risk just dropped
            self._wake.set()
        except Exception:
            return

    def finish(self, timeout: float = 10.0) -> None:
        """Mark the run complete and send it, waiting at most ``timeout`` seconds. The
        heartbeat goes on while the process lives (unless it is off): that a finished
        process still holds its GPUs is worth knowing."""
        if not self.enabled:
            self.close(timeout)  # a finished rank has no stacks worth asking for
            return
        with self._lock:
            self._state.final = True
            self._state.version += 1
            target = self._state.version
        if self._thread is None or self.heartbeat_seconds <= 0:
            self.close(timeout)
            return
        deadline = time.monotonic() + timeout
        self._flush.set()
        self._wake.set()
        while self._sent_version < target and self._thread.is_alive():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._sent.wait(min(0.05, left))
            self._sent.clear()

    def close(self, timeout: float = 5.0) -> None:
        """Send what is pending (bounded by ``timeout``) and stop the background thread."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def should_checkpoint(self) -> bool:
        """True once after the exporter asked this run to save a checkpoint (its ETA passed
        the deadline, its pod is being deleted, or someone annotated the job); call it in
        the training loop and save when it says so. Cheap, never blocks."""
        if self._checkpoint.is_set():
            self._checkpoint.clear()
            return True
        return False

    @property
    def errors(self) -> int:
        """How many sends failed (for tests and debugging; failures are never raised)."""
        return self._errors

    # -- the background thread ------------------------------------------------------------

    def _snapshot(self) -> tuple[int, dict[str, Any], bool]:
        with self._lock:
            s = self._state
            report = dict(s.values)
            metrics = {}
            for key, raw in list(report.items()):
                if key in ("loss", "learning_rate", "grad_norm", "eval_loss", "epoch", "gpus"):
                    number = _number(raw)
                    if number is None:
                        del report[key]
                    else:
                        report[key] = _json_float(number)
            for key, raw in s.metrics.items():
                number = _number(raw)
                if number is not None:
                    metrics[key] = _json_float(number)
            if metrics:
                report["metrics"] = metrics
            if s.final:
                report["final"] = True
            report["timestamp"] = time.time()
            return s.version, report, s.final

    def _heartbeat_due(self, now: float) -> bool:
        return (
            self.heartbeat_seconds > 0
            and self._sent_version > 0
            and now - self._last_sent >= self.heartbeat_seconds
        )

    def _send_all(self, heartbeat: bool = False) -> bool:
        """Send the latest values if they changed (or, for a heartbeat, even if not)."""
        version, report, final = self._snapshot()
        if version == self._sent_version and not heartbeat:
            return True
        ok = True
        for name, send in zip(self.channels, self._senders):  # noqa: B905 (Python 3.9: no strict=)
            try:
                send(report, final)
            except Exception as exc:
                self._errors += 1
                ok = False
                if name not in self._failing:
                    self._failing.add(name)
                    log.warning(
                        "progress reports on the %s channel fail (%s: %s); retrying with "
                        "backoff, training goes on; said once until they go through again",
                        name,
                        type(exc).__name__,
                        exc,
                    )
            else:
                if name in self._failing:
                    self._failing.discard(name)
                    log.warning("progress reports on the %s channel go through again", name)
        if ok:
            self._sent_version = version
            self._last_sent = time.monotonic()
            self._sent.set()
        return ok

    def _run(self) -> None:
        backoff = 0.0
        next_send = 0.0  # the first report goes out at once
        while True:
            stopping = self._stop.is_set()
            now = time.monotonic()
            flush = self._flush.is_set()
            if stopping or now >= next_send or flush:
                self._flush.clear()
                ok = self._send_all(heartbeat=not stopping and self._heartbeat_due(now))
                if not ok and self._state.final and self._sent_version >= self._state.version:
                    # Finished, told, and now nobody answers the heartbeat: the exporter is
                    # gone (or the job is being torn down); nothing left to say.
                    return
                if stopping:
                    if not ok:  # one retry on the way out; close() bounds the wait
                        time.sleep(min(1.0, self.timeout))
                        self._send_all()
                    return
                backoff = 0.0 if ok else min(60.0, max(1.0, backoff * 2))
                next_send = now + max(self.interval, backoff)
            if self._stacks_wanted.is_set():
                self._stacks_wanted.clear()
                self._send_stacks()
            self._wake.wait(max(0.0, next_send - time.monotonic()))
            self._wake.clear()

    def _send_stacks(self) -> bytes:
        """Post this process's stacks to the exporter; its answer (empty on failure)."""
        try:
            body = capture(self.rank, exclude={threading.get_ident()})
            return _post(self._stacks_url, body, self._headers, self.timeout, None)
        except Exception as exc:  # never raised into training
            self._errors += 1
            log.warning("could not send stacks (%s: %s)", type(exc).__name__, exc)
            return b""

    def _watch(self) -> None:
        """A non-reporting rank's thread: at each heartbeat, ask whether the exporter wants
        this rank's stacks, and send them when it does."""
        period = self.heartbeat_seconds or DEFAULT_HEARTBEAT_SECONDS
        failing = False
        while not self._stop.wait(period):
            ask = json.dumps({"rank": self.rank}).encode()
            try:
                answer = _post(self._stacks_url, ask, self._headers, self.timeout, None)
            except Exception as exc:
                if not failing:
                    log.warning(
                        "asking the exporter for stack requests fails (%s: %s)",
                        type(exc).__name__,
                        exc,
                    )
                failing = True
                continue
            failing = False
            if STACKS_DIRECTIVE in directives_of(answer):
                self._send_stacks()

    # -- channels ----------------------------------------------------------------------------

    @staticmethod
    def _pick_channels(env: Mapping[str, str], channels: list[str] | None) -> list[str]:
        if channels is None and env.get(ENV_CHANNELS):
            channels = [c.strip() for c in env[ENV_CHANNELS].split(",") if c.strip()]
        if channels is not None:
            return [c for c in channels if c in CHANNELS]
        picked = []
        if env.get(ENV_KUBEFLOW_URL):
            picked.append("kubeflow")
        if env.get(ENV_REPORT_URL):
            picked.append("exporter")
        if env.get(ENV_STATUS_FILE):
            picked.append("file")
        return picked or ["stdout"]

    def _sender(self, name: str, env: Mapping[str, str]) -> Sender:
        if name == "kubeflow":
            return _KubeflowSender(env, self.timeout).send
        if name == "exporter":
            url = env.get(ENV_REPORT_URL, "")
            headers = _token_header(env.get(ENV_REPORT_TOKEN_FILE, ""))

            def send(report: dict[str, Any], final: bool) -> None:
                answer = _post(url, json.dumps(report).encode(), headers, self.timeout, None)
                said = directives_of(answer)
                if "checkpoint" in said:
                    self._checkpoint.set()
                if STACKS_DIRECTIVE in said and self._stacks_url:
                    self._stacks_wanted.set()

            return send
        if name == "file":
            path = env.get(ENV_STATUS_FILE, "")
            return lambda report, final: write_status_file(path, report)
        out = self._stdout
        return lambda report, final: _print_line(kubeflow_body(report), out)


def _heartbeat_from(env: Mapping[str, str]) -> float:
    raw = env.get(ENV_HEARTBEAT)
    if raw is None:
        return DEFAULT_HEARTBEAT_SECONDS
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_HEARTBEAT_SECONDS
    return value if math.isfinite(value) and value >= 0 else DEFAULT_HEARTBEAT_SECONDS


def _close_at_exit(ref: weakref.ref[ProgressReporter]) -> None:
    reporter = ref()
    if reporter is not None:
        reporter.close(timeout=2.0)
