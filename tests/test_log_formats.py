"""Formats users add (``log_formats``): checked at start with an error that names the format
and the group; tried after the built-in ones on every log, first on a pod annotated
``training-progress.io/log-format``; ``inspect --format`` tries one. The three worked examples
of docs/logs.md are read from the doc itself."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.daemon.config import Config, apply, load
from exporter.logs.inspect import read_log
from exporter.logs.lines import Extra
from exporter.plumbing.settings import ConfigError

from .conftest import FakeClock, get_json
from .fakekube import FakeKube
from .kube import T_START_TS, TRAINJOB, pod, put_pod, registry_of, wait

DOC = Path(__file__).parent.parent / "docs" / "logs.md"


def _doc_examples() -> tuple[dict[str, Any], list[str]]:
    """The yaml block and the sample lines of docs/logs.md's "Formats you add"."""
    section = DOC.read_text(encoding="utf-8").split("## Formats you add", 1)[1]
    config = re.search(r"```yaml\n(.*?)```", section, re.S)
    lines = re.search(r"```text\n(.*?)```", section, re.S)
    assert config is not None and lines is not None
    return yaml.safe_load(config.group(1)), lines.group(1).splitlines()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"x": {"regex": r"it (?P<stp>\d+)"}}, "format 'x': unknown group 'stp'"),
        ({"x": {"regex": r"it (\d+"}}, "format 'x': the regex does not compile"),
        ({"x": {"regex": r"it \d+"}}, "format 'x': names none of the groups"),
        ({"progress": {"regex": r"(?P<step>\d+)"}}, "'progress' is a built-in format's name"),
        ({"tqdm": {"regex": r"(?P<step>\d+)"}}, "'tqdm' is a built-in format's name"),
        ({"x": {"regex": r"(?P<step>\d+)", "hint": "it"}}, "format 'x': unknown key 'hint'"),
        ({"x": {}}, "format 'x': needs a regex"),
        ({"Bad Name": {"regex": r"(?P<step>\d+)"}}, "format 'Bad Name': a name is lower-case"),
        ({f"f{i}": {"regex": r"(?P<step>\d+)"} for i in range(33)}, "at most 32 formats"),
        (["(?P<step>\\d+)"], "log_formats must map format names"),
    ],
)
def test_a_bad_format_stops_the_start_naming_it(spec: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        apply(Config(), {"log_formats": spec}, "cfg.yaml")


def test_the_environment_cannot_set_formats(tmp_path: Path) -> None:
    config = load({}, {"TPE_LOG_FORMATS": "x"})
    assert config.log_formats == ()


def test_the_worked_examples_of_the_docs_read_what_the_docs_say(tmp_path: Path) -> None:
    spec, lines = _doc_examples()
    config = apply(Config(), spec, "docs/logs.md")
    assert [f.name for f in config.log_formats] == ["homegrown", "with-end", "tokens"]
    got = []
    for line in lines:
        log = tmp_path / "one.log"
        log.write_text(line + "\n")
        acc = read_log(str(log), 1e9, Extra(after=config.log_formats))[0]
        report = acc.report()
        got.append((dict(acc.counts), report))
    (c1, r1), (c2, r2), (c3, r3), (c4, r4) = got
    assert c1 == {"homegrown": 1}
    assert (r1.step, r1.max_steps, r1.epoch, r1.loss, r1.eval_loss) == (
        1200,
        5000,
        3,
        0.4123,
        0.521,
    )
    assert c2 == {"with-end": 1}
    assert (r2.step, r2.max_steps, r2.learning_rate, r2.final) == (980, 1000, 2e-05, False)
    assert c3 == {"with-end": 1} and r3.final
    assert c4 == {"tokens": 1}
    assert (r4.step, r4.loss, dict(r4.metrics)) == (120, 1.92, {"tokens_per_second": 45123.4})


def test_built_in_formats_come_first_unless_the_pod_asks(tmp_path: Path) -> None:
    config = apply(Config(), {"log_formats": {"mine": {"regex": r"step (?P<step>\d+)"}}}, "cfg")
    log = tmp_path / "run.log"
    log.write_text("step 7/10 loss 0.5\nmy custom line step 3 here\n")
    after = Extra(after=config.log_formats)
    acc = read_log(str(log), 1e9, after)[0]
    # The first line is the built-in reader's; the second, which it cannot read, is mine.
    assert dict(acc.counts) == {"progress": 1, "mine": 1}
    first = Extra(first=config.log_formats, after=config.log_formats)
    assert dict(read_log(str(log), 1e9, first)[0].counts) == {"mine": 2}


def test_a_captured_value_that_is_no_number_reads_nothing(tmp_path: Path) -> None:
    config = apply(
        Config(), {"log_formats": {"m": {"regex": r"s=(?P<step>\S+) l=(?P<loss>\S+)"}}}, "c"
    )
    log = tmp_path / "run.log"
    log.write_text("s=12 l=0.5\ns=13.5 l=0.4\ns=14 l=oops\n")
    report = read_log(str(log), 1e9, Extra(after=config.log_formats))[0].report()
    assert (report.step, report.loss) == (12, 0.5)


def test_standalone_exporter_reads_with_the_config_files_formats(
    exporter_factory: Any, tmp_path: Path
) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "log_formats:\n  mine:\n"
        "    regex: 'epoch=(?P<epoch>\\d+) batch=(?P<step>\\d+) of (?P<total>\\d+)'\n"
    )
    config = load({"config": str(cfg)}, {})
    log = tmp_path / "job.log"
    log.write_text("epoch=1 batch=40 of 400\n")
    exp = exporter_factory(log_paths=(str(log),), namespace="local", log_formats=config.log_formats)
    exp.poll_once()
    (run,) = get_json(exp.url + "/api/v1/runs")["runs"]
    assert (run["step"], run["max_steps"]) == (40, 400)


def test_a_pods_annotation_puts_its_format_first(
    kube: FakeKube, tmp_path: Path, k8s_exporter: Any
) -> None:
    formats = apply(
        Config(), {"log_formats": {"mine": {"regex": r"step (?P<step>\d+) of (?P<total>\d+)"}}}, "c"
    ).log_formats
    logs = tmp_path / "pods"
    annotated = {"training-progress.io/log-format": "mine"}
    wrong = {"training-progress.io/log-format": "nosuch"}
    put_pod(kube, pod("ml", "mine-0", TRAINJOB, ip="10.0.0.1", annotations=annotated))
    put_pod(kube, pod("ml", "plain-0", {"batch.kubernetes.io/job-name": "p"}, ip="10.0.0.2"))
    put_pod(
        kube,
        pod(
            "ml", "typo-0", {"batch.kubernetes.io/job-name": "t"}, ip="10.0.0.3", annotations=wrong
        ),
    )
    # The built-in reader reads "step 5 of 50 loss 0.3" too; the annotated pod's own format
    # reads it first, so its counts say "mine".
    for name in ("mine-0", "plain-0", "typo-0"):
        container = logs / f"ml_{name}_uid-{name}" / "trainer"
        container.mkdir(parents=True)
        (container / "0.log").write_text(
            "2026-11-29T18:20:54.123456789Z stdout F step 5 of 50 loss 0.3\n"
        )
    exp = k8s_exporter(FakeClock(T_START_TS), log_root=str(logs), log_formats=formats)
    wait(lambda: len(registry_of(exp)) == 3)
    exp.poll_once()
    exp.poll_once()
    runs = {r["pod"]: r for r in get_json(exp.url + "/api/v1/runs")["runs"]}
    assert {p: (r["step"], r["max_steps"]) for p, r in runs.items()} == {
        "mine-0": (5, 50),
        "plain-0": (5, 50),
        "typo-0": (5, 50),
    }
    matches = exp.stats.snapshot()
    assert matches.drops[("log", "unknown_log_format")] == 1  # told once, not every poll
    assert matches.log_matches.get("mine") == 1 and matches.log_matches.get("progress") == 2


def test_inspect_tries_one_format(tmp_path: Path) -> None:
    spec, lines = _doc_examples()
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(spec))
    log = tmp_path / "run.log"
    # The examples of three tools, in one log: the end last (a step below the last one after
    # an end would be a new attempt, no longer finished).
    ends = [line for line in lines if line.startswith("DONE")]
    log.write_text("\n".join([*(line for line in lines if line not in ends), *ends]) + "\n")
    cmd = [sys.executable, "-m", "exporter", "inspect", "--config", str(cfg)]
    done = subprocess.run([*cmd, "--format", "tokens", str(log)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["matched"] == {"homegrown": 1, "tokens": 1, "with-end": 2}
    assert doc["report"]["final"] is True
    bad = subprocess.run([*cmd, "--format", "nope", str(log)], capture_output=True, text=True)
    assert bad.returncode == 2 and "no log format 'nope'" in bad.stderr
