"""A structured logger's JSON record around a message (exporter.logs.records), and lines
read inside it as they read bare."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from exporter.logs.parse import parse_message
from exporter.logs.records import MAX_RECORD, read_record

from .worldlogs import read

# Each library's record as its JSON formatter writes it (its documented default fields),
# the message put in with json.dumps as the library does.
RECORDS: dict[str, dict[str, Any]] = {
    # python-json-logger's JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s")
    "python-json-logger": {
        "asctime": "2024-05-01 10:00:00,123",
        "levelname": "INFO",
        "name": "__main__",
        "message": None,
    },
    # structlog's JSONRenderer after add_log_level and TimeStamper(fmt="iso")
    "structlog": {"event": None, "level": "info", "timestamp": "2024-05-01T10:00:00.123456Z"},
    # Google Cloud Logging's structured line
    "cloud-logging": {"severity": "INFO", "message": None, "time": "2024-05-01T10:00:00.123Z"},
    # ecs-logging-python
    "ecs": {
        "@timestamp": "2024-05-01T10:00:00.123Z",
        "log.level": "info",
        "message": None,
        "ecs.version": "1.6.0",
        "log": {"logger": "__main__", "origin": {"file": {"line": 42, "name": "train.py"}}},
    },
    # zap / logr / Kubernetes' JSON format: "msg"
    "zap": {"level": "info", "ts": 1714557600.123, "caller": "train.py:42", "msg": None},
    # Ray's JSON logging (RAY_LOGGING_CONFIG_ENCODING=JSON)
    "ray": {
        "asctime": "2024-05-01 10:00:00,123",
        "levelname": "INFO",
        "message": None,
        "filename": "train.py",
        "lineno": 42,
        "job_id": "01000000",
        "worker_id": "8b2f",
        "node_id": "c1d4",
    },
}


def _record(form: str, message: str, ascii_only: bool = False) -> str:
    fields = dict(RECORDS[form])
    key = next(k for k, v in fields.items() if v is None)
    fields[key] = message
    return json.dumps(fields, ensure_ascii=ascii_only)


@pytest.mark.parametrize("form", RECORDS)
def test_a_records_message_is_told_from_its_fields(form: str) -> None:
    assert read_record(_record(form, "Epoch 1/10")).message == "Epoch 1/10"  # type: ignore[union-attr]
    # Line breaks in a message are kept: the caller reads each of its lines.
    assert read_record(_record(form, "a\nb")).message == "a\nb"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "line",
    [
        '{"loss": 1.2, "step": 10}',  # a script's own metrics line
        '{"message": "saved", "loss": 1.2}',  # a message, but no logger's field beside it
        '{"message": 3, "level": "info"}',  # no text under the message key
        '{"msg": "x", "level": "info"',  # cut
        '["msg", "level"]',
        '{"msg": "x", "level": ' + "[" * 5000 + "]" * 5000 + "}",  # nested past recursion
        '{"msg": "' + "x" * MAX_RECORD + '", "level": "info"}',  # larger than a record
        "Epoch 1/10",
    ],
)
def test_what_is_no_loggers_record_has_no_message(line: str) -> None:
    assert read_record(line) is None


def _read(line: str) -> list[tuple[str, int | None, int | None, float | None, bool]]:
    return [
        (r.parser, r.report.step, r.report.max_steps, r.report.loss, r.report.final)
        for r in parse_message(line, 0.0)
    ]


@pytest.mark.parametrize(
    "bare",
    [
        "Epoch 3/10",  # Keras' header: read from the line's start only
        "     2           1.2814            7.82m",  # scikit-learn's table row
        "{'loss': 2.0327, 'grad_norm': 0.537, 'learning_rate': 1.9e-05, 'epoch': 0.02}",
        "iteration       73/     100 | consumed samples: 584 | lm loss: 1.798953E+00 |",
        "[rank0]:[titan] 2024-05-01 10:00:00,123 - root - INFO - step:  1  loss: 12.2365",
        "2024-05-01 10:00:00,123 - INFO - ===> Epoch 222 Complete: Avg. Loss: 0.013878",
        "`Trainer.fit` stopped: `max_epochs=3` reached.",
        # full-width colons, the record's JSON escaped or not (davidsongtao's GPT-2 trainer)
        "当前Batch：1290/6035 | 当前epoch:0/50 | 当前损失值：2.9484 | 当前准确率：46.61%",
    ],
)
def test_a_line_inside_a_loggers_record_reads_as_the_bare_line(bare: str) -> None:
    assert _read(bare), bare  # each is read bare
    for form in RECORDS:
        assert _read(_record(form, bare)) == _read(bare), form
        assert _read(_record(form, bare, ascii_only=True)) == _read(bare), form


def test_a_records_own_values_are_read_where_its_message_says_nothing() -> None:
    """structlog's ``log.info("train", step=10, loss=1.25)``: the values beside the message,
    the named ones only (a logger's ``lineno`` is no metric of the run)."""
    line = json.dumps(
        {"event": "train", "step": 10, "loss": 1.25, "lineno": 42, "level": "info", "ts": 1.0}
    )
    found = parse_message(line, 0.0)
    assert [(r.parser, r.report.step, r.report.loss, r.report.metrics) for r in found] == [
        ("jsonl", 10, 1.25, ())
    ]
    # A record that carries nothing: nothing, not its process, thread or time.
    quiet = _record("python-json-logger", "loading tokenizer")
    assert parse_message(quiet[:-1] + ', "process": 1234, "created": 1714557600.1}', 0.0) == []


def test_a_multi_line_message_reads_each_line(tmp_path: Path) -> None:
    """A logger given Trainer's end, its summary dict and metrics block, in one call
    (tests/fixtures/world/llamafactory-v0-train-metrics.log): its lines, one by one."""
    world = Path(__file__).parent / "fixtures" / "world" / "llamafactory-v0-train-metrics.log"
    block = "".join(world.read_text().splitlines(keepends=True)[:5])
    path = tmp_path / "trainer.log"
    path.write_text(_record("python-json-logger", block.rstrip("\n")) + "\n")
    bare = tmp_path / "bare.log"
    bare.write_text(block)
    assert read(path) == read(bare)
    assert read(path).final and read(path).loss is None  # train_loss is the run's mean


def test_a_keras_run_logged_as_json_reads_as_printed(tmp_path: Path) -> None:
    """A Keras header and its epoch line each sent through a JSON logger: the header's epochs
    and the line's steps, as printed bare."""
    lines = ["Epoch 1/3", "1079/1079 - 11s - loss: 0.1784", "Epoch 2/3"]
    lines.append("1079/1079 - 10s - loss: 0.1024")
    path = tmp_path / "keras.log"
    path.write_text("".join(_record("structlog", line) + "\n" for line in lines))
    report = read(path)
    assert (report.step, report.max_steps, report.loss) == (2158, 3237, 0.1024)


# logfmt as logrus' TextFormatter (no terminal), Go's slog TextHandler and Python's logfmter
# write it: the message quoted where it holds a space, Go's escapes in it.
LOGFMT = [
    ('time="2024-05-01T10:00:00Z" level=info msg="Epoch 3/10"', "Epoch 3/10"),
    ('time=2024-05-01T10:00:00.123Z level=INFO msg="Epoch 3/10" rank=0', "Epoch 3/10"),
    ('at=INFO msg="step 10 loss 1.5"', "step 10 loss 1.5"),
    ("level=info msg=starting", "starting"),
    (
        "time=2024-05-01T10:00:00Z level=INFO msg=\"{'loss': 2.0327, 'epoch': 0.02}\"",
        "{'loss': 2.0327, 'epoch': 0.02}",
    ),
    ('level=info msg="say \\"hi\\"\\tthen\\nbye"', 'say "hi"\tthen\nbye'),
    ('level=info msg="bad \\x41 escape \\"q\\""', 'bad \\x41 escape "q"'),
]


@pytest.mark.parametrize(("line", "message"), LOGFMT, ids=[line for line, _ in LOGFMT])
def test_a_logfmt_records_message_is_its_msg(line: str, message: str) -> None:
    record = read_record(line)
    assert record is not None and record.message == message and not record.is_json


@pytest.mark.parametrize(
    "line",
    [
        "time: 18.93s | valid loss 5.86",  # a key with a colon, no logfmt
        "lr=0.001 msg=x",  # no logger's key first
        "level=info step=10",  # no message
        'time=1 level=info msg="unterminated',
    ],
)
def test_what_is_no_logfmt_record_has_no_message(line: str) -> None:
    assert read_record(line) is None


def test_a_logfmt_line_inside_reads_as_bare_and_its_pairs_where_it_says_nothing() -> None:
    for bare in ("Epoch 3/10", "     2           1.2814            7.82m"):
        quoted = bare.replace("\\", "\\\\").replace('"', '\\"')
        assert _read(f'time=2024-05-01T10:00:00Z level=info msg="{quoted}"') == _read(bare)
    # slog's logger.Info("train", "step", 10, "loss", 1.25): the pairs, not the logger's own.
    found = parse_message(
        "time=2024-05-01T10:00:00Z level=INFO source=train.go:42 msg=train step=10 loss=1.25", 0.0
    )
    assert [(r.report.step, r.report.loss, r.report.metrics) for r in found] == [(10, 1.25, ())]
