"""The state file: a restart, even ``kill -9``, loses at most one interval
and nothing resets to zero; a hostile or broken file never stops the exporter."""

from __future__ import annotations

import base64
import json
import math
import os
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bench.common import free_port
from exporter.core.model import ProgressReport, RunKey
from exporter.core.tracker import Tracker
from exporter.daemon import persist
from exporter.daemon.persist import (
    StateKeeper,
    decode_file,
    encode_file,
    encode_run,
    read_file,
    write_atomically,
)

from .conftest import T0, get_json, http

KEY = RunKey("ml", "llama-7b", "llama-7b")
OTHER = RunKey("ml", "bert", "bert")


def _busy_tracker() -> Tracker:
    """A run with everything a run can carry: plan, GPUs, deadline, budget, a threshold
    override, custom metrics, loss history, start time, GPU-seconds; and a diverged one."""
    tracker = Tracker()
    for i in range(200):
        tracker.apply(
            KEY,
            ProgressReport(
                step=10 * i,
                max_steps=10_000,
                epoch=i / 100,
                max_epochs=5.0,
                loss=3.0 / (1 + i / 20),
                eval_loss=3.1 / (1 + i / 20) if i % 50 == 0 else None,
                learning_rate=1e-4,
                grad_norm=0.7,
                gpus=8,
                deadline_timestamp=T0 + 86_400,
                gpu_hours_budget=100,
                thresholds=(("stall_seconds", 7200.0),),
                metrics=(("tokens_per_second", 1234.5 + i), ("mfu", 0.41)),
            ),
            T0 + 5 * i,
        )
    tracker.apply(OTHER, ProgressReport(step=5, loss=1.0, gpus=1), T0)
    tracker.apply(OTHER, ProgressReport(step=9, loss=float("nan")), T0 + 60)
    # What its stalls cost by cause (counters), as the stall split left them.
    tracker._runs[KEY].stall.split.update(data=120.0, unexplained=30.0)
    tracker._runs[KEY].stall.pending = 15.0
    return tracker


def test_a_saved_and_restored_tracker_renders_the_same() -> None:
    tracker = _busy_tracker()
    now = T0 + 1000
    data = encode_file(tracker.save(now, encode_run), now)
    runs, skipped = decode_file(data)
    assert skipped == 0
    restored = Tracker()
    assert restored.restore(runs) == 2
    before = {s.key: s for s in tracker.snapshot(now + 30, history=True)}
    after = {s.key: s for s in restored.snapshot(now + 30, history=True)}
    assert before.keys() == after.keys()
    for key, b in before.items():
        a = after[key]
        for f in fields(b):
            x, y = getattr(b, f.name), getattr(a, f.name)
            if isinstance(x, float) and math.isnan(x):
                assert isinstance(y, float) and math.isnan(y), f.name
            else:
                assert x == y, (key, f.name, x, y)
    run = after[KEY]
    assert run.thresholds.stall_seconds == 7200.0  # not back to 30 minutes
    assert run.gpu_seconds == pytest.approx(8 * 1030)  # not back to 0
    assert len(run.loss_history) == 120 and run.first_report_timestamp == T0
    assert dict(run.stall_gpu_seconds)["data"] == 120.0


def test_a_restored_run_that_no_source_sees_again_is_gone_after_the_first_look() -> None:
    tracker = _busy_tracker()
    runs, _ = decode_file(encode_file(tracker.save(T0 + 1000, encode_run), T0 + 1000))
    restored = Tracker()
    restored.restore(runs)
    restored.seen([KEY])  # its file, target or pod is still there
    marked = restored.settle_restored(T0 + 1010, keep=lambda meta: False)
    assert marked == [OTHER]
    states = {s.key: s.state for s in restored.snapshot(T0 + 1010)}
    assert states[OTHER] == "gone" and states[KEY] != "gone"


def test_a_broken_run_is_skipped_and_the_others_are_restored() -> None:
    tracker = _busy_tracker()
    lines = encode_file(tracker.save(T0 + 1000, encode_run), T0 + 1000).splitlines()
    first = json.loads(lines[1])
    first["step"] = "ten"
    lines[1] = json.dumps(first).encode()
    lines += [b'{"key": ["a", "b"]}', b'{"key": ["a", "b", "c"], "meta": "x"}', b"[1, 2", b"7"]
    runs, skipped = decode_file(b"\n".join(lines))
    assert skipped == 5 and len(runs) == 1


def test_a_run_line_over_the_limit_skips_that_run_not_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line past MAX_LINE_BYTES (a hostile timeline, say) between two good runs: the two
    are restored, the long one is skipped, and the file is not set aside. Only a header
    that long is no state file."""
    monkeypatch.setattr(persist, "MAX_LINE_BYTES", 64 * 1024)
    tracker = _busy_tracker()
    header, first, second = encode_file(tracker.save(T0 + 1000, encode_run), T0 + 1000).splitlines()
    long_run = json.loads(first)
    long_run["key"] = ["ml", "huge", "huge"]
    long_run["padding"] = "x" * 300_000  # several reads of the limit
    path = tmp_path / "state.json"
    path.write_bytes(b"\n".join([header, first, json.dumps(long_run).encode(), second]) + b"\n")
    restored = Tracker()
    assert StateKeeper(str(path), restored, lambda: T0 + 1000, 5.0).restore() == 2
    assert path.exists() and not (tmp_path / "state.json.corrupt").exists()
    assert {s.key for s in restored.snapshot(T0 + 1000)} == {KEY, OTHER}
    path.write_bytes(b'{"version": 1, "pad": "' + b"x" * 70_000 + b'"}\n' + first + b"\n")
    assert StateKeeper(str(path), Tracker(), lambda: T0, 5.0).restore() == 0
    assert (tmp_path / "state.json.corrupt").exists()


@pytest.mark.parametrize("content", [b"", b"{not json", b'{"version": 99, "runs": []}', b"[1]"])
def test_an_unusable_file_is_set_aside_and_the_exporter_starts_empty(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(content)
    keeper = StateKeeper(str(path), Tracker(), lambda: T0, 5.0)
    assert keeper.restore() == 0
    assert not path.exists() and (tmp_path / "state.json.corrupt").read_bytes() == content


def test_a_second_unusable_file_does_not_overwrite_the_first_one_set_aside(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.json"
    for content in (b"{first", b"{second"):
        path.write_bytes(content)
        assert StateKeeper(str(path), Tracker(), lambda: T0, 5.0).restore() == 0
    assert (tmp_path / "state.json.corrupt").read_bytes() == b"{first"
    assert (tmp_path / "state.json.corrupt.1").read_bytes() == b"{second"


def test_an_unreadable_file_stops_the_start_and_is_left_as_it_is(
    tmp_path: Path, free_port: int
) -> None:
    """EACCES is a setup to fix, not a corrupt file: starting empty would overwrite the runs
    at the next save. As root (these machines), the exporter runs without the capability
    to read past permissions (setpriv), as any other user would."""
    state = tmp_path / "state.json"
    data = encode_file(_busy_tracker().save(T0, encode_run), T0)
    state.write_bytes(data)
    state.chmod(0)
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv, "setpriv (util-linux) is on every Debian machine"
        caps = "-dac_override,-dac_read_search"
        prefix = [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]
    proc = subprocess.run(
        [*prefix, sys.executable, "-m", "exporter", "run", "--mode", "standalone",
         "--listen", f"127.0.0.1:{free_port}", "--state-file", str(state)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "cannot read the state file" in proc.stderr and "Permission denied" in proc.stderr
    state.chmod(0o600)
    assert state.read_bytes() == data and not (tmp_path / "state.json.corrupt").exists()


def _doc(tracker: Tracker, now: float) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in encode_file(tracker.save(now, encode_run), now).splitlines()
    ]


def test_restored_values_meet_the_bounds_live_reports_meet() -> None:
    """A state file is read back as hostile input: what no report could set is no run."""
    header, good, *_ = _doc(_busy_tracker(), T0 + 1000)
    bad = []
    for field, value in (
        ("step", 10**30),
        ("gpu_seconds", -1e18),
        ("epoch", float("inf")),
        ("report_gpus", 1e9),
        ("reported_eta", 1e300),  # beyond what a live report may state (MAX_ETA_SECONDS)
    ):
        bad.append({**good, field: value})
    bad.append({**good, "meta": {**good["meta"], "node": 'gpu\n1"'}})
    bad.append({**good, "key": ["ml", 'x"y', "x"]})
    bad.append({**good, "metrics": {'a"b': 1.0}})
    bad.append({**good, "stall_split": {"lunch": 1.0}})
    bad.append({**good, "stall_split": {"data": -1.0}})
    lines = [json.dumps(d, allow_nan=True).encode() for d in (header, good, *bad)]
    runs, skipped = decode_file(b"\n".join(lines))
    assert skipped == len(bad) and len(runs) == 1


@pytest.mark.slow
def test_the_restore_holds_no_more_runs_than_the_cap_while_it_reads(tmp_path: Path) -> None:
    """3,000 runs in the file, a cap of 50: the 50 most recent are restored, and the
    restore's peak memory follows the cap, not the file."""
    import tracemalloc

    from exporter.core.tracker import TrackerConfig

    source = Tracker(TrackerConfig(max_runs=3000))
    for i in range(3000):
        source.apply(RunKey("ml", f"r{i}", "j"), ProgressReport(step=i, loss=1.0), T0 + i)
    path = tmp_path / "state.json"
    path.write_bytes(encode_file(source.save(T0 + 3000, encode_run), T0 + 3000))

    def peak(cap: int) -> tuple[int, set[str]]:
        tracker = Tracker(TrackerConfig(max_runs=cap))
        tracemalloc.start()
        StateKeeper(str(path), tracker, lambda: T0 + 3000, 5.0).restore()
        _, high = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return high, {k.pod for k in tracker.keys()}  # noqa: SIM118 (a method, not a dict)

    small, kept = peak(50)
    large, _ = peak(3000)
    assert kept == {f"r{i}" for i in range(2950, 3000)}  # the most recent
    assert small < large / 5, (small, large)


def test_failed_saves_are_counted_and_the_last_success_exported(
    exporter_factory: Any, tmp_path: Path
) -> None:
    missing = tmp_path / "not-yet" / "state.json"
    exp = exporter_factory(state_file=str(missing))
    push = exp.url + "/api/v1/namespaces/ml/runs/llm/report"
    assert http("POST", push, b'{"step": 1}')[0] == 200
    assert exp.state is not None and not exp.state.save()
    text = http("GET", exp.url + "/metrics")[1].decode()
    assert "training_exporter_state_save_failures_total 1.0" in text
    assert "training_exporter_state_last_save_timestamp_seconds" not in text
    missing.parent.mkdir()
    assert exp.state.save(force=True)
    text = http("GET", exp.url + "/metrics")[1].decode()
    assert "training_exporter_state_save_failures_total 1.0" in text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    saved = families["training_exporter_state_last_save_timestamp_seconds"].samples[0].value
    assert saved == exp.clock()


def test_a_symlinked_state_file_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "elsewhere.json"
    tracker = _busy_tracker()
    secret.write_bytes(encode_file(tracker.save(T0, encode_run), T0))
    link = tmp_path / "state.json"
    link.symlink_to(secret)
    fresh = Tracker()
    assert StateKeeper(str(link), fresh, lambda: T0, 5.0).restore() == 0
    assert len(fresh) == 0
    assert link.is_symlink()  # left alone, not renamed or written through


def test_writes_are_atomic_and_skip_when_nothing_changed(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    tracker = _busy_tracker()
    keeper = StateKeeper(str(path), tracker, lambda: T0 + 1000, 5.0)
    assert keeper.save() is True
    assert keeper.save() is False  # nothing changed
    tracker.apply(KEY, ProgressReport(step=5000), T0 + 1001)
    assert keeper.save() is True
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]  # no temporary left
    data = read_file(str(path))
    assert data is not None and len(decode_file(data)[0]) == 2
    # A temporary file planted as a symlink is replaced, never written through.
    target = tmp_path / "target"
    target.write_text("keep")
    (tmp_path / ".state.json.tmp").symlink_to(target)
    write_atomically(str(path), [b"{}"])
    assert target.read_text() == "keep" and path.read_bytes() == b"{}"


# -- the real process: kill -9, SIGTERM ------------------------------------------------------


def _start(port: int, state: Path, *extra: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    env["TPE_STATE_INTERVAL"] = "0.5s"
    proc = subprocess.Popen(
        [sys.executable, "-m", "exporter", "run", "--mode", "standalone",
         "--listen", f"127.0.0.1:{port}", "--state-file", str(state), *extra],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).read()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise AssertionError(proc.stderr.read().decode() if proc.stderr else "did not start")


def _push(port: int, body: dict[str, Any], name: str = "llama") -> int:
    url = f"http://127.0.0.1:{port}/api/v1/namespaces/ml/runs/{name}/report"
    return http("POST", url, json.dumps(body).encode(), {"Content-Type": "application/json"})[0]


def _run(port: int, name: str = "llama") -> dict[str, Any]:
    doc = get_json(f"http://127.0.0.1:{port}/api/v1/runs")
    return next(r for r in doc["runs"] if r["job_name"] == name)


@pytest.mark.slow
def test_kill_9_and_restart_lose_nothing_but_the_last_interval(
    tmp_path: Path, free_port: int
) -> None:
    state = tmp_path / "state.json"
    port = free_port
    proc = _start(port, state)
    try:
        first = {"step": 100, "max_steps": 1000, "gpus": 8, "loss": 2.5,
                 "deadline_timestamp": time.time() + 86_400, "gpu_hours_budget": 50,
                 "thresholds": {"stall_seconds": 7200},
                 "metrics": {"tokens_per_second": 999}}  # fmt: skip
        assert _push(port, first) == 200
        for i in range(1, 30):
            assert _push(port, {"step": 100 + 10 * i, "loss": 2.5 - i / 100}) == 200
            time.sleep(0.02)
        before = _run(port)
        time.sleep(1.2)  # at least one save after the last push
        # Pushes go on through the crash and the restart; count those that fail.
        outcomes: list[int] = []
        stop = threading.Event()

        def pusher() -> None:
            step = 1000
            while not stop.is_set():
                try:
                    outcomes.append(_push(port, {"step": step}, name="steady"))
                except OSError:
                    outcomes.append(0)
                step += 1
                time.sleep(0.02)

        thread = threading.Thread(target=pusher)
        thread.start()
        time.sleep(0.3)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        proc = _start(port, state)
        time.sleep(0.3)
        stop.set()
        thread.join(10)
        after = _run(port)
    finally:
        proc.kill()
        proc.wait(10)
    for field in ("step", "max_steps", "gpus", "deadline_timestamp_seconds",
                  "gpu_seconds_budget", "first_report_timestamp_seconds", "thresholds",
                  "metrics", "best_loss"):  # fmt: skip
        assert after[field] == before[field], field
    assert after["thresholds"]["stall_seconds"] == 7200
    assert after["gpu_seconds"] >= before["gpu_seconds"] > 0  # never back to zero
    assert len(after["loss_history"]) == len(before["loss_history"]) == 30
    failed = sum(1 for o in outcomes if o != 200)
    print(f"pushes during kill -9 and restart: {failed} of {len(outcomes)} failed")
    assert failed < len(outcomes)  # the restarted exporter took pushes again


@pytest.mark.slow
def test_sigterm_saves_what_arrived_since_the_last_interval(tmp_path: Path, free_port: int) -> None:
    state = tmp_path / "state.json"
    port = free_port
    proc = _start(port, state, "--config", str(_config(tmp_path, "state_interval: 1h")))
    try:
        assert _push(port, {"step": 7, "max_steps": 70, "gpus": 2}) == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
        proc = _start(port, state)
        run = _run(port)
    finally:
        proc.kill()
        proc.wait(10)
    assert (run["step"], run["max_steps"], run["gpus"]) == (7, 70, 2)


@pytest.fixture(name="free_port")
def free_port_fixture() -> int:
    return free_port()


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text + "\n")
    return path


def test_the_eta_bands_record_survives_a_restart_and_is_checked() -> None:
    """The forecasts the ETA band is made from are saved; a hostile one skips its run."""
    from exporter.daemon.persist import StateError, decode_run

    tracker = _busy_tracker()
    tracker.snapshot(T0 + 1000)
    (doc,) = [
        json.loads(line)
        for line in encode_file(tracker.save(T0 + 1000, encode_run), T0 + 1000).splitlines()[1:2]
    ]
    saved = list(tracker._runs[next(iter(tracker._runs))].forecasts)
    assert len(saved) > 10, "a busy run has a record"
    _, run = decode_run(doc)
    assert list(run.forecasts) == saved
    # The recent pace's own record, which weighs it against the mean pace, is kept too;
    # files written before it have none (the recent pace alone until a record grows).
    paces = list(tracker._runs[next(iter(tracker._runs))].pace_forecasts)
    assert len(paces) == len(saved) and list(run.pace_forecasts) == paces
    _, older = decode_run({k: v for k, v in doc.items() if k != "pace_forecasts"})
    assert list(older.pace_forecasts) == []
    with pytest.raises(StateError, match="pace_forecasts"):
        decode_run({**doc, "pace_forecasts": [[T0, 5, -1.0]]})
    # Files written before the columns: a list of triples, still read.
    _, old = decode_run({**doc, "forecasts": [list(f) for f in saved]})
    assert list(old.forecasts) == saved
    t, s, v = (base64.b64decode(c) for c in doc["forecasts"])
    b64 = [base64.b64encode(c).decode() for c in (t, s, v)]
    negative_step = base64.b64encode(struct.pack("<q", -1)).decode()
    one = [base64.b64encode(struct.pack("<d", x)).decode() for x in (T0, 0.0)]
    for bad in (
        [[T0, -1, 1.0]],
        [[T0, 5, 0.0]],
        [[T0, 5]],
        [[T0, 5, 1.0]] * 300,
        "x",
        ["x", "y", "z"],
        [b64[0], b64[1][:-4], b64[2]],
        [one[0], negative_step, one[0]],
        [one[0], base64.b64encode(struct.pack("<q", 5)).decode(), one[1]],
    ):
        with pytest.raises(StateError, match="forecasts"):
            decode_run({**doc, "forecasts": bad})


def test_the_train_losss_own_best_survives_a_restart() -> None:
    """Divergence holds the train loss to its own best (states.diverged), not to
    best_loss (the eval loss's once any is reported); it is saved, and a file written
    before it restores without (None: no best yet)."""
    from exporter.daemon.persist import decode_run

    tracker = Tracker()
    for i, (loss, evaluation) in enumerate([(1.0, None), (0.5, 0.2), (0.4, None), (0.45, 0.3)]):
        report = ProgressReport(step=10 * (i + 1), max_steps=100, loss=loss, eval_loss=evaluation)
        tracker.apply(KEY, report, T0 + 10 * i)
    live = tracker._runs[KEY]
    assert live.best_loss == 0.2 and live.best_train_loss is not None
    assert live.best_train_loss > live.best_loss  # the train loss's, not the eval's
    (doc,) = [
        json.loads(line)
        for line in encode_file(tracker.save(T0 + 40, encode_run), T0 + 40).splitlines()[1:2]
    ]
    _, run = decode_run(doc)
    assert run.best_train_loss == live.best_train_loss
    _, older = decode_run({k: v for k, v in doc.items() if k != "best_train_loss"})
    assert older.best_train_loss is None


def test_a_field_declared_saved_is_kept_and_checked_with_no_other_edit() -> None:
    """Adding a field to what a restart keeps is one declaration: a subclass of the run's
    state with one more ``saved`` field round-trips it through the state file's codec, and
    a value outside its bound makes that run one that does not decode, as for any field."""
    from dataclasses import dataclass, field

    from exporter.core.model import COUNT
    from exporter.core.run.state import RunState, saved
    from exporter.daemon.persist import StateError, decode_run, saved_fields

    @dataclass
    class Extended(RunState):
        restarts_seen: int | None = field(default=None, metadata=saved(COUNT))

    tracker = _busy_tracker()
    run = tracker._runs[KEY]
    extended = Extended(**{f.name: getattr(run, f.name) for f in fields(RunState)})
    extended.restarts_seen = 3
    assert "restarts_seen" in {f.name for f in saved_fields(Extended)}
    doc = json.loads(json.dumps(encode_run(KEY, extended)))
    key, back = decode_run(doc, cls=Extended)
    assert key == KEY and isinstance(back, Extended) and back.restarts_seen == 3
    assert back.step == run.step and back.metrics == run.metrics
    for hostile in (-1, 10**30, 2.5, "3", True):
        with pytest.raises(StateError, match="restarts_seen"):
            decode_run({**doc, "restarts_seen": hostile}, cls=Extended)
    # A file written before the field existed restores it at its default.
    del doc["restarts_seen"]
    assert decode_run(doc, cls=Extended)[1].restarts_seen is None


def test_a_run_read_only_from_its_log_survives_a_restart() -> None:
    """A run no structured source ever reported (its log alone: the "no code change" case)
    has no time of a structured report; it is restored, not skipped as out of range."""
    tracker = Tracker()
    log_report = ProgressReport(step=7, max_steps=100, loss=0.5, format="log")
    tracker.apply(KEY, log_report, T0)
    (line,) = encode_file([encode_run(KEY, tracker._runs[KEY])], T0 + 1).splitlines()[1:]
    runs, skipped = decode_file(encode_file([encode_run(KEY, tracker._runs[KEY])], T0 + 1))
    assert skipped == 0 and len(runs) == 1 and runs[0][1].step == 7
    assert runs[0][1].last_structured == float("-inf") and b"-Infinity" in line


def test_the_sizes_a_run_ran_at_outlive_a_restart_and_hostile_ones_are_refused() -> None:
    """The scaling a run showed (its (size, steps/s) per attempt, exporter.core.scaling)
    is kept, so a restart does not fall back to the default exponent; sizes out of bounds,
    a pace of 0, NaN or a list longer than kept skip that run alone."""
    tracker = _busy_tracker()
    tracker._runs[KEY].sizes.extend([(2.0, 1.5), (3.0, 2.1)])
    tracker._runs[KEY].attempt_size = 3.0
    runs, skipped = decode_file(encode_file(tracker.save(T0 + 1000, encode_run), T0 + 1000))
    restored = dict(runs)[KEY]
    assert skipped == 0 and list(restored.sizes) == [(2.0, 1.5), (3.0, 2.1)]
    assert restored.attempt_size == 3.0 and restored.sizes.maxlen == 8
    header, first, second = encode_file(tracker.save(T0 + 1000, encode_run), T0 + 1000).splitlines()
    for bad in ([[2, 0]], [[0, 1.0]], [[2, "NaN"]], [[1e12, 1.0]], [[1, 1]] * 9, {"a": 1}, [[1]]):
        doc = json.loads(first)
        doc["sizes"] = bad
        runs, skipped = decode_file(b"\n".join([header, json.dumps(doc).encode(), second]))
        assert skipped == 1 and len(runs) == 1, bad
    old = json.loads(first)
    del old["sizes"]  # a file written before sizes were kept
    runs, skipped = decode_file(b"\n".join([header, json.dumps(old).encode()]))
    assert skipped == 0 and not dict(runs)[KEY].sizes
