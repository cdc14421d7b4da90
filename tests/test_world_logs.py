"""Zero code change on the logs the world prints: every excerpt of the world corpus
(tests/fixtures/world/, each copied from a public source and cited in its truth file) read
as a plain file, as containerd writes it, and as CRI-O writes it (a short ``P`` line per
frame), by the same reader as the exporter's log source and ``inspect``. Each must read
exactly what its truth file says: a value where the log prints it, nothing where it does
not (unknown beats wrong), and never a finish the tool did not print."""

from __future__ import annotations

import json
import os
import re
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.worldlogs import (
    CORPUS,
    DOC,
    FORMS,
    README,
    UNREAD,
    excerpts,
    mismatches,
    read,
    readme,
    section,
)

EXCERPTS = excerpts()
UNREAD_EXCERPTS = excerpts(UNREAD)


def test_the_corpus_is_the_world_the_issue_asks_for() -> None:
    """At least 45 excerpts from at least 30 tools, each citing a public source."""
    tools = {e.tool.split(" (")[0] for e in EXCERPTS}
    assert len(EXCERPTS) >= 45 and len(tools) >= 30, (len(EXCERPTS), sorted(tools))
    for e in EXCERPTS:
        assert e.source.startswith("https://"), e.name
        assert {"step", "max_steps", "final"} <= set(e.expect), e.name


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("excerpt", EXCERPTS, ids=[e.name for e in EXCERPTS])
def test_each_excerpt_reads_right_in_each_form(excerpt, form: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / f"{excerpt.name}.log"
    path.write_text(FORMS[form](excerpt.text), encoding="utf-8", newline="")
    wrong = list(mismatches(read(path), excerpt.expect))
    assert not wrong, f"{excerpt.name} ({form}, {excerpt.source}): {wrong}"


# What launchers put before each line of their workers' output: torchrun --tee, mpirun
# --tag-output (the MPI Operator; SageMaker's names rank and host), srun --label, pdsh
# (DeepSpeed's multi-node launcher, by host name and by address), a pod's name (Argo's,
# kubectl's multi-pod views), kubectl logs --prefix and --timestamps (alone and before a
# launcher's), Ray's worker prefix, docker compose's service.
LAUNCHER_PREFIXES = (
    "2024-05-01T10:00:00.123456789Z ",
    "2024-05-01T10:00:00.123456789Z [rank0]:",
    "[rank0]:",
    "[default3]:",
    "[trainer0|0]:",
    "[1,0]<stdout>:",
    "[1,mpirank:0,algo-1]<stdout>:",  # Open MPI under SageMaker, rank and host named
    "0: ",
    "  3: ",
    "worker-0: ",
    "10.0.0.12: ",
    "train-job-x7k2p: ",  # a Job's pod, as kubectl's and Argo's multi-pod views name it
    "my-wf-step-1234567890: ",  # an Argo workflow's pod (`argo logs`)
    "[pod/trainer-0/pytorch] ",
    "(RayTrainWorker pid=1234) ",
    "(TaskRunner pid=2213, ip=10.0.0.4) ",
    "trainer-1  | ",  # docker compose v2
    "\x1b[36mproject_trainer_1  |\x1b[0m ",  # docker compose v1, on a terminal
    "[rank: 0] ",  # Lightning's rank_prefixed_message
)
# The heads loggers put before each line of a script's own output: logging.basicConfig's,
# logging with a format, absl's, loguru's (plain and coloured), Hydra's, fairseq's, Rich's
# handler (with the place it prints at the right), journald's and moreutils ts'.
LOGGER_HEADS = (
    ("INFO:__main__:", ""),
    ("2024-05-01 10:00:00,123 - INFO - ", ""),
    ("I0501 10:00:00.123456 140234 train.py:123] ", ""),
    ("2024-05-01 10:00:00.123 | INFO     | __main__:train:42 - ", ""),
    (
        "\x1b[32m2024-05-01 10:00:00.123\x1b[0m | \x1b[1mINFO    \x1b[0m | \x1b[36m__main__\x1b[0m:"
        "\x1b[36mtrain\x1b[0m:\x1b[36m42\x1b[0m - \x1b[1m",
        "\x1b[0m",
    ),
    ("[2024-05-01 10:00:00,123][__main__][INFO] - ", ""),
    ("2024-05-01 10:00:00 | INFO | fairseq_cli.train | ", ""),
    ("[12/07/24 10:00:00] INFO     ", "                    train.py:42"),
    ("Dec 07 13:22:48 node-1 python3[1234]: ", ""),
    ("Dec 07 13:22:48 ", ""),
    ("INFO     ", ""),  # "%(levelname)-8s %(message)s"
    ("2024-05-01 10:00:00,123 INFO ", ""),  # "%(asctime)s %(levelname)s %(message)s"
    ("2024-05-01 10:00:00,123:INFO:__main__:", ""),  # colons, MindSpore's without the name
    ("| INFO     | __main__:train:82 - ", ""),  # loguru's format without its time
    ("[2024-05-01 10:00:00,123] [INFO] [logging.py:96:log_dist] [Rank 0] ", ""),  # DeepSpeed
)
# What a head makes the reader take otherwise, and why that is right: orbit's "train | step:
# 141" after a level reads as fairseq's "| INFO | train | ..." (its logger's name, then the
# message), and after "%(asctime)s %(levelname)s " its output dict's lines indented by four
# lose four to the level's padding ("INFO" padded to eight and "INFO" then an indent of four
# print the same); DETR's log.txt is a JSON line an epoch the script writes, never through
# Rich.
HEAD_MISREADS = {
    "orbit-yt8m-readme": ("- INFO - ", "| INFO     | ", "[INFO] - ", "| INFO | ", ",123 INFO "),
    "detr-log-txt-epoch-stats": ("] INFO     ",),
    "conditional-swin-detr-log-txt": ("] INFO     ",),
}


# Structured loggers' JSON records around each line a logger could write: python-json-logger,
# structlog, zap's "msg" (Kubernetes' JSON format too), Google Cloud Logging's (non-ASCII
# escaped, as json.dumps writes by default).
JSON_RECORDS: tuple[Callable[[str], str], ...] = (
    lambda line: json.dumps(
        {"asctime": "2024-05-01 10:00:00,123", "levelname": "INFO", "message": line},
        ensure_ascii=False,
    ),
    lambda line: json.dumps(
        {"event": line, "level": "info", "timestamp": "2024-05-01T10:00:00Z"}, ensure_ascii=False
    ),
    lambda line: json.dumps({"level": "info", "ts": 1714557600.1, "msg": line}, ensure_ascii=False),
    lambda line: json.dumps({"severity": "INFO", "message": line, "time": "2024-05-01T10:00:00Z"}),
    # logfmt, as logrus' TextFormatter and Go's slog quote a message
    lambda line: (
        'time="2024-05-01T10:00:00Z" level=info msg="'
        + line.replace("\\", "\\\\").replace('"', '\\"')
        + '"'
    ),
)


def _misread_when(
    change: Callable[[str], str], tmp: Path, share: Callable[[str], bool] = lambda _: True
) -> dict[str, list[str]]:
    """Each excerpt (of those ``share`` takes by name) whose truth is not read once its text is
    changed by ``change``, with what was read wrong."""
    wrong = {}
    for excerpt in EXCERPTS:
        if not share(excerpt.name):
            continue
        path = tmp / f"{excerpt.name}.log"
        path.write_text(change(excerpt.text), encoding="utf-8", newline="")
        found = list(mismatches(read(path), excerpt.expect))
        if found:
            wrong[excerpt.name] = found
    return wrong


def _share(index: int, count: int, offsets: tuple[int, ...]) -> Callable[[str], bool]:
    """Which excerpts the ``index``-th of ``count`` changes reads: each excerpt is read behind
    ``len(offsets)`` of the changes, which ones fixed by a hash of its name (so an excerpt
    added later moves no other), every change reading about ``len(offsets)/count`` of the
    corpus. Reading all of it behind every head and prefix took about 90 CPU-s of CI's 15
    minutes; ``WORLD_LOGS_EVERY_CHANGE=1`` reads it all (the probe that found each rule)."""
    if os.environ.get("WORLD_LOGS_EVERY_CHANGE") == "1":
        return lambda _: True
    return lambda name: (zlib.crc32(name.encode()) - index) % count in offsets


def _each_logged_line(change: Callable[[str], str]) -> Callable[[str], str]:
    """A text with ``change`` made to each line a logger could have written: not a bar's
    frames (a carriage return or a backspace in it) and not a blank line."""

    def logged(text: str) -> str:
        lines = re.findall(r"[^\n]*\n|[^\n]+$", text)
        return "".join(
            line
            if "\r" in line or "\b" in line or not line.strip()
            else change(line.rstrip("\n")) + "\n"
            for line in lines
        )

    return logged


@pytest.mark.parametrize("index", range(len(LAUNCHER_PREFIXES)), ids=LAUNCHER_PREFIXES)
def test_a_launchers_prefix_on_every_line_changes_nothing(index: int, tmp_path: Path) -> None:
    """Every excerpt, each line behind a launcher's prefix, reads as its truth says (each
    excerpt behind three of the prefixes)."""
    prefix = LAUNCHER_PREFIXES[index]

    def behind(text: str) -> str:
        # Each line behind the prefix: a launcher prefixes what ends in a newline, not each
        # bar frame after a carriage return within it.
        return "".join(prefix + line for line in re.findall(r"[^\n]*\n|[^\n]+$", text))

    share = _share(index, len(LAUNCHER_PREFIXES), (0, 5, 10))
    assert _misread_when(behind, tmp_path, share) == {}


@pytest.mark.parametrize("index", range(len(LOGGER_HEADS)), ids=[h for h, _ in LOGGER_HEADS])
def test_a_loggers_head_on_every_line_changes_nothing(index: int, tmp_path: Path) -> None:
    """Every excerpt, each line of its own printed through a logger (a head before it, Rich's
    place after it), reads as its truth says: the shapes read from a line's start (a Keras
    epoch header, a table's header and rows, a tool's end) read after the head. A bar's
    frames and blank lines are no logger's. Each excerpt is read behind three of the heads."""
    head, tail = LOGGER_HEADS[index]
    logged = _each_logged_line(lambda line: head + line + tail)

    plain = re.sub(r"\x1b\[[0-9;]*m", "", head)
    misread = _misread_when(logged, tmp_path, _share(index, len(LOGGER_HEADS), (0, 5, 10)))
    assert {n for n in misread if not any(h in plain for h in HEAD_MISREADS.get(n, ()))} == set()


def test_spaces_after_each_line_change_nothing(tmp_path: Path) -> None:
    """Every excerpt with spaces after each line's last word (a terminal's copy, a script's
    padding; a cut bar frame ``80/97 [08:32<`` among them) reads as its truth says."""
    assert _misread_when(lambda text: re.sub(r"(\r?\n)", r"   \1", text), tmp_path) == {}


def test_windows_line_ends_change_nothing(tmp_path: Path) -> None:
    """Every excerpt with CRLF line ends (a script written on Windows, a tool that prints
    them) reads as its truth says: the carriage return before the newline is no frame."""
    assert _misread_when(lambda text: re.sub(r"(?<!\r)\n", "\r\n", text), tmp_path) == {}


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("excerpt", UNREAD_EXCERPTS, ids=[e.name for e in UNREAD_EXCERPTS])
def test_what_is_not_read_yet_is_unknown_not_wrong(excerpt, form: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The held-out excerpts the reader does not read yet: nothing it reads of them may be
    wrong, but for the fields the truth file names as known, with the reason. An end not
    read is unknown too; a false finish is wrong."""
    path = tmp_path / f"{excerpt.name}.log"
    path.write_text(FORMS[form](excerpt.text), encoding="utf-8", newline="")
    wrong = [
        w
        for w in mismatches(read(path), excerpt.expect)
        if "read None" not in w
        and w != "final: want True, read False"
        and w.split(":")[0] not in excerpt.known
    ]
    assert not wrong, f"{excerpt.name} ({form}, {excerpt.source}): {wrong}"


def test_docs_table_is_generated_from_the_truth_files() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert section(text) == text, "run: python -m tests.worldlogs --write"


def test_corpus_readme_cites_every_excerpt() -> None:
    """Every excerpt, read or not, is cited with its URL in the corpus' README."""
    text = README.read_text(encoding="utf-8")
    assert readme() == text, "run: python -m tests.worldlogs --write"
    for truth in [*CORPUS.glob("*.truth.json"), *UNREAD.glob("*.truth.json")]:
        source = json.loads(truth.read_text(encoding="utf-8"))["source"]
        assert source.startswith("https://") and source in text, truth.name


def test_printed_rates_checkpoints_and_eval_reach_their_series(
    exporter_factory, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """What logs print beside the step reaches the series that already exist: torchtitan's
    MFU as training_model_flops_utilization (it gives no FLOPs per token), nanoGPT's eval loss
    and its checkpoint (the step of the line before), through a real exporter's /metrics."""
    from .conftest import http

    by_name = {e.name: e for e in EXCERPTS}
    for name in ("torchtitan-profiler", "nanogpt-nan"):
        (tmp_path / f"{name}.log").write_text(by_name[name].text)
    exp = exporter_factory(log_paths=(str(tmp_path / "*.log"),), namespace="local")
    exp.poll_once()
    body = http("GET", exp.url + "/metrics")[1].decode()

    def value(metric: str, job: str) -> float:
        for line in body.splitlines():
            if line.startswith(metric + "{") and f'job_name="{job}"' in line:
                return float(line.rsplit(" ", 1)[1])
        raise AssertionError(f"no {metric} for {job}")

    assert value("training_model_flops_utilization", "torchtitan-profiler") == pytest.approx(0.3433)
    assert value("training_step", "torchtitan-profiler") == 250
    assert value("training_eval_loss", "nanogpt-nan") == pytest.approx(4.0427)
    assert value("training_last_checkpoint_step", "nanogpt-nan") == 3000
    assert 'metric="tokens_per_second_per_gpu"' in body


@pytest.mark.parametrize(
    "index",
    range(len(JSON_RECORDS)),
    ids=["python-json-logger", "structlog", "zap", "cloud-logging", "logfmt"],
)
def test_a_json_loggers_record_around_every_line_changes_nothing(
    index: int, tmp_path: Path
) -> None:
    """Every excerpt, each line of its own sent through a JSON logger (its message in a
    record), reads as its truth says (each excerpt inside two of the five records)."""
    logged = _each_logged_line(JSON_RECORDS[index])
    assert _misread_when(logged, tmp_path, _share(index, len(JSON_RECORDS), (0, 2))) == {}


# What a terminal or a browser puts into the same text: colours around each line, around
# each number (Rich, termcolor, colorama), no-break spaces for spaces (a page copied).
PAINTS: tuple[Callable[[str], str], ...] = (
    lambda line: "\x1b[1;32m" + line + "\x1b[0m",
    lambda line: re.sub(r"(\d+(?:\.\d+)?)", "\x1b[36m\\1\x1b[0m", line),
    lambda line: line.replace(" ", "\u00a0"),
)


@pytest.mark.parametrize("index", range(len(PAINTS)), ids=["line", "numbers", "no-break"])
def test_colours_and_no_break_spaces_change_nothing(index: int, tmp_path: Path) -> None:
    """Every excerpt with each line of its own coloured or its spaces no-break ones reads as
    its truth says (each excerpt in two of the three)."""
    painted = _each_logged_line(PAINTS[index])
    assert _misread_when(painted, tmp_path, _share(index, len(PAINTS), (0, 1))) == {}


def test_each_excerpt_is_read_behind_three_heads_three_prefixes_and_in_two_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("WORLD_LOGS_EVERY_CHANGE", raising=False)
    heads = [_share(i, len(LOGGER_HEADS), (0, 5, 10)) for i in range(len(LOGGER_HEADS))]
    prefixes = [
        _share(i, len(LAUNCHER_PREFIXES), (0, 5, 10)) for i in range(len(LAUNCHER_PREFIXES))
    ]
    records = [_share(i, len(JSON_RECORDS), (0, 2)) for i in range(len(JSON_RECORDS))]
    paints = [_share(i, len(PAINTS), (0, 1)) for i in range(len(PAINTS))]
    for excerpt in EXCERPTS:
        assert sum(share(excerpt.name) for share in heads) == 3, excerpt.name
        assert sum(share(excerpt.name) for share in prefixes) == 3, excerpt.name
        assert sum(share(excerpt.name) for share in records) == 2, excerpt.name
        assert sum(share(excerpt.name) for share in paints) == 2, excerpt.name
