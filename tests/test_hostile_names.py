"""Hostile and unlucky input: a name that is not UTF-8, control
characters and quotes in file names, a metric name with a trailing newline, an integer over
Python's conversion limit. Each is refused or cleaned with a reason and counted; none takes
/metrics, the status page or another run down."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from exporter.core.model import METRIC_NAME_RE, run_name

from .conftest import get_json, http

HUGE = "1" * 4301  # one digit over Python's int-string conversion limit


def test_run_names_from_files_follow_the_label_rule() -> None:
    assert run_name("llama_3-ft.v2") == "llama_3-ft.v2"
    assert run_name('bad\udcff"\r\x1b[31m name') == "bad_____31m_name"
    assert run_name("\udcff\udcfe") is None
    assert run_name("x" * 200) == "x" * 63
    assert METRIC_NAME_RE.match("loss") and not METRIC_NAME_RE.match("loss\n")


def test_a_file_name_that_is_not_utf8_blacks_out_nothing(
    exporter_factory: Any, tmp_path: Path
) -> None:
    good = tmp_path / "good.json"
    good.write_text('{"step": 5, "max_steps": 10}')
    with open(os.path.join(os.fsencode(tmp_path), b"bad\xff.json"), "w") as fh:
        fh.write('{"step": 1}')
    (tmp_path / 'q"uote\r\x1b.json').write_text('{"step": 2}')
    with open(os.path.join(os.fsencode(tmp_path), b"\xff\xfe.json"), "w") as fh:
        fh.write('{"step": 3}')
    (tmp_path / f"zz-after-huge-{0}.json").write_text('{"step": 7}')
    (tmp_path / "huge.json").write_text('{"step": ' + HUGE + "}")
    exp = exporter_factory(status_dir=str(tmp_path))
    exp.poll_once()
    status, body = http("GET", exp.url + "/metrics")
    assert status == 200
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    pods = {s.labels["pod"] for s in families["training_step"].samples}
    # Names cleaned by the label rule; a name with nothing usable is refused and counted;
    # the file after the oversized integer is still read.
    assert pods == {"good", "bad_", "q_uote__", "zz-after-huge-0"}
    drops = {
        (s.labels["source"], s.labels["reason"]): s.value
        for s in families["training_exporter_drops"].samples
    }
    assert drops[("file", "invalid_name")] >= 1
    assert drops[("file", "invalid_json")] >= 1  # the 4,301-digit integer
    assert http("GET", exp.url + "/")[0] == 200
    runs = get_json(exp.url + "/api/v1/runs")["runs"]
    assert {r["pod"] for r in runs} == pods


def test_a_4301_digit_integer_pushed_gets_a_422(exporter_factory: Any) -> None:
    exp = exporter_factory()
    status, body = http(
        "POST",
        exp.url + "/api/v1/namespaces/ml/runs/big/report",
        ('{"step": ' + HUGE + "}").encode(),
    )
    assert status == 422 and b"invalid JSON" in body
    kubeflow = ('{"trainerStatus": {"progressPercentage": ' + HUGE + "}}").encode()
    path = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/big/status"
    assert http("POST", exp.url + path, kubeflow)[0] == 422
    # The exporter still answers, and nothing was created.
    assert get_json(exp.url + "/api/v1/runs")["runs"] == []


def test_a_namespace_with_a_trailing_newline_is_refused(exporter_factory: Any) -> None:
    exp = exporter_factory()
    status, _ = http("POST", exp.url + "/api/v1/namespaces/ml%0A/runs/x/report", b'{"step": 1}')
    assert status == 422
    assert get_json(exp.url + "/api/v1/runs")["runs"] == []


def test_a_run_that_cannot_be_rendered_is_left_out_not_the_scrape(exporter_factory: Any) -> None:
    """The last line of defense, for a label no source cleaned."""
    from exporter.core.model import ProgressReport, RunKey

    exp = exporter_factory()
    exp.tracker.apply(RunKey("ml", "ok", "ok"), ProgressReport(step=1), exp.clock())
    exp.tracker.apply(RunKey("ml", "bad\udcff", "bad\udcff"), ProgressReport(step=1), exp.clock())
    status, body = http("GET", exp.url + "/metrics")
    assert status == 200 and b'pod="ok"' in body
    assert b"training_exporter_runs_unrenderable 1.0" in body
    assert http("GET", exp.url + "/")[0] == 200
    assert [r["pod"] for r in get_json(exp.url + "/api/v1/runs")["runs"]] == ["ok"]
    openmetrics = http(
        "GET", exp.url + "/metrics", headers={"Accept": "application/openmetrics-text"}
    )
    assert openmetrics[0] == 200 and b'pod="ok"' in openmetrics[1]


def test_a_fractional_step_is_rejected_not_truncated() -> None:
    from exporter.core.wire import parse_native

    parsed = parse_native({"step": 1.5, "max_steps": 10.0}, 0.0)
    assert parsed.report.step is None and parsed.report.max_steps == 10
    assert "invalid_step" in parsed.problems


def test_a_failing_source_is_logged_once_a_minute(caplog: Any) -> None:
    from exporter.plumbing.schedule import Scheduler

    def boom() -> None:
        raise RuntimeError("a source bug")

    scheduler = Scheduler({"broken": boom}, interval=1.0, done=lambda *_: None)
    with caplog.at_level("ERROR", logger="exporter.plumbing.schedule"):
        for _ in range(5):
            scheduler.run("broken")
    assert len([r for r in caplog.records if "polling broken failed" in r.message]) == 1
    assert "a source bug" in caplog.text  # with its traceback


def test_standalone_listens_on_loopback_unless_told_otherwise() -> None:
    from exporter.daemon.config import Config

    assert Config().listen_address() == ("127.0.0.1", 9465)
    assert Config().listen_address("kubernetes") == ("0.0.0.0", 9465)
    assert Config(listen="0.0.0.0:9000").listen_address() == ("0.0.0.0", 9000)


def test_a_push_token_keeps_strangers_out(exporter_factory: Any, tmp_path: Path) -> None:
    from training_progress_reporter import ProgressReporter

    token = tmp_path / "token"
    token.write_text("s3cret\n")
    exp = exporter_factory(push_token_file=str(token))
    native = exp.url + "/api/v1/namespaces/ml/runs/a/report"
    kubeflow = exp.url + "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/b/status"
    body = b'{"trainerStatus": {"metrics": [{"name": "current_step", "value": "3"}]}}'
    assert http("POST", native, b'{"step": 1}')[0] == 403
    assert http("POST", native, b'{"step": 1}', {"Authorization": "Bearer wrong"})[0] == 403
    assert http("POST", native, b'{"step": 1}', {"Authorization": "Bearer s3cret"})[0] == 200
    assert http("POST", kubeflow, body, {"Authorization": "Bearer s3cret"})[0] == 200
    # Our reporter sends the token from TPE_REPORT_TOKEN_FILE.
    reporter = ProgressReporter(
        channels=["exporter"],
        interval=0.05,
        environ={
            "TPE_REPORT_URL": exp.url + "/api/v1/namespaces/ml/runs/c/report",
            "TPE_REPORT_TOKEN_FILE": str(token),
        },
    )
    reporter.update(step=9)
    reporter.finish(timeout=5)
    assert reporter.errors == 0
    runs = {r["pod"]: r["step"] for r in get_json(exp.url + "/api/v1/runs")["runs"]}
    assert runs == {"a": 1, "b": 3, "c": 9}
    metrics = http("GET", exp.url + "/metrics")[1].decode()
    assert 'training_exporter_drops_total{reason="token_rejected",source="push"} 2.0' in metrics


def test_a_named_but_missing_token_file_stops_the_start(tmp_path: Path) -> None:
    import pytest

    from exporter.core.tracker import Tracker
    from exporter.daemon.config import Config
    from exporter.daemon.wiring import make_discovery
    from exporter.plumbing.discovery import DiscoveryError
    from exporter.plumbing.ingest import Ingestor
    from exporter.plumbing.stats import ExporterStats

    ingestor = Ingestor(Tracker(), ExporterStats(), lambda: 0.0)
    config = Config(mode="standalone", push_token_file=str(tmp_path / "nope"))
    with pytest.raises(DiscoveryError, match="push_token_file"):
        make_discovery(config, ingestor)
