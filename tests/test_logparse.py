"""Log-line parsers: fixtures in each library's format, bad input, and lines captured from
real tqdm and Transformers runs by the test itself."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from exporter.core.model import ProgressReport
from exporter.logs.bars import epoch_of, eval_bar
from exporter.logs.cri import parse_cri
from exporter.logs.formats import FORMATS, HINTS
from exporter.logs.formats.pairs import find_pairs, number, to_fields
from exporter.logs.formats.vocabulary import field_of
from exporter.logs.lines import MAX_MESSAGE, Extra
from exporter.logs.parse import (
    _BARE_FRAME,
    ANY_HINT,
    SCAN_PARTS,
    SCANNED_HINTS,
    TEMPLATES_KEPT,
    QuickScan,
    _trie,
    parse_line,
    parse_message,
    plain,
    scan_part,
)

NOW = 1_800_000_000.0
# The parts as one pattern on a line's bytes: what the quick scan's template lookup must agree
# with (exporter.logs.parse.QuickScan).
HINT_BYTES = re.compile(_trie([h.encode() for h in SCAN_PARTS]))

FIXTURES = [
    (
        '[trainer.kubeflow.org/v1alpha1/trainjob/trainerStatus] {"trainerStatus": {"progressPercentage": 40, '
        '"metrics": [{"name": "current_step", "value": "20"}, {"name": "total_steps", "value": "50"}]}}',
        "kubeflow-marker",
        {"step": 20, "max_steps": 50, "progress": 0.4},
    ),
    (
        "{'loss': '6.903', 'grad_norm': '1.095', 'learning_rate': '4.6e-05', 'epoch': '0.1'}",
        "transformers",
        {"loss": 6.903, "grad_norm": 1.095, "learning_rate": 4.6e-05, "epoch": 0.1},
    ),
    ("{'loss': 0.5123, 'learning_rate': 5e-05, 'epoch': 0.5}", "transformers", {"loss": 0.5123}),
    (
        "{'eval_loss': '2.31', 'eval_runtime': '1.2', 'epoch': '1'}",
        "transformers",
        {"eval_loss": 2.31},
    ),
    (
        "{'train_runtime': '12.6', 'train_loss': '6.9', 'epoch': '1'}",
        "transformers",
        {"final": True},
    ),
    (" 16%|█▌        | 8/50 [00:02<00:10,  3.98it/s]", "tqdm", {}),
    (
        # Lightning by its logger version (v_num), which only it prints; the epoch is read
        # from the description by the accumulator, which knows Lightning counts from 0.
        "Epoch 3:  45%|████▌     | 45/100 [00:10<00:12,  4.50it/s, v_num=0, train_loss=0.321]",
        "lightning",
        {"loss": 0.321},
    ),
    (
        # "Epoch 1: " alone is any script's description, not Lightning.
        "Epoch 1:  45%|████▌     | 45/100 [00:10<00:12,  4.50it/s, loss=0.321]",
        "tqdm",
        {"loss": 0.321},
    ),
    ("step 10/100 loss 0.53", "progress", {"step": 10, "max_steps": 100, "loss": 0.53}),
    # An epoch of a total and a step of a total: the step counts within the epoch (the
    # PyTorch tutorials' "Epoch [2/8], Step [10/100]", YOLOX, llama-recipes).
    (
        "Epoch 2/8 | Step: 10 of 100, train_loss=0.5",
        "progress",
        {"step": 110, "max_steps": 800, "max_epochs": 8},
    ),
    ("GPU available: False, used: False", "lightning", {"framework": "lightning"}),
    (
        "`Trainer.fit` stopped: `max_epochs=3` reached.",
        "lightning",
        {"final": True, "max_epochs": 3.0},
    ),
    ("Epoch 1/10", "keras", {"max_epochs": 10.0}),
    (
        "450/1000 [============>.................] - ETA: 36s - loss: 0.1234",
        "keras",
        {"loss": 0.1234},
    ),
    (
        "[Rank 0] step=100, skipped=0, lr=[0.0001], mom=[(0.9, 0.999)]",
        "deepspeed",
        {"step": 100, "learning_rate": 0.0001},
    ),
    (
        "steps: 100 loss: 2.3456 iter time (s): 0.123 samples/sec: 64.0",
        "deepspeed",
        {"step": 100, "loss": 2.3456},
    ),
    ("epoch=1 loss=0.123 accuracy=0.9", "katib", {"epoch": 1.0, "loss": 0.123}),
    ('{"step": 10, "loss": 0.5, "tokens_per_second": 1000}', "jsonl", {"step": 10, "loss": 0.5}),
    (
        '{"global_step": 7, "train_loss": 1.5, "total_steps": 70}',
        "jsonl",
        {"step": 7, "loss": 1.5, "max_steps": 70},
    ),
    # torchtune's stdout metric logger (the shape its recipes print every log_every_n_steps),
    # read by the general progress-line reader.
    (
        "Step 1 | loss:2.3100 lr:0.0002 tokens_per_second_per_gpu:1234.5",
        "progress",
        {"step": 1, "loss": 2.31, "learning_rate": 0.0002},
    ),
    # Checkpoint lines as real runs print them (tests/fixtures/logs/checkpoints/).
    (
        "[transformers] Saving model checkpoint to /out/checkpoint-500",
        "checkpoints",
        {"checkpoint_step": 500, "checkpoint_timestamp": NOW},
    ),
    (
        "Epoch 0, global step 8: 'train_loss' reached 0.21965 (best 0.21965), saving model to "
        "'/ck/epoch=0-step=8.ckpt' as top 2",
        "checkpoints",
        {"checkpoint_step": 8},
    ),
    (
        "[2023-07-24 13:21:33,440] [INFO] [torch_checkpoint_engine.py:33:commit] [Torch] "
        "Checkpoint global_step10 is ready now!",
        "checkpoints",
        {"checkpoint_step": 10},
    ),
]


@pytest.mark.parametrize(
    ("msg", "parser", "fields"), FIXTURES, ids=[f[1] + str(i) for i, f in enumerate(FIXTURES)]
)
def test_formats(msg: str, parser: str, fields: dict[str, object]) -> None:
    found = parse_line(msg, NOW)
    assert found is not None and found.parser == parser
    for key, value in fields.items():
        assert getattr(found.report, key) == pytest.approx(value), key


def _captured_segments() -> list[str]:
    """Every segment of every message in the real captures (tests/fixtures/logs)."""
    from pathlib import Path

    out: list[str] = []
    for path in sorted(Path(__file__).parent.glob("fixtures/logs/*.combined.log")):
        for line in path.read_text(errors="replace").splitlines():
            out += [s for s in plain(line).split("\r") if s.strip()]
    return out


def _world_segments() -> list[str]:
    """Every segment of every line of the world corpus (tests/fixtures/world/)."""
    out: list[str] = []
    for path in sorted((Path(__file__).parent / "fixtures" / "world").glob("*.log")):
        for line in path.read_text(encoding="utf-8").splitlines():
            out += [plain(s) for s in line.split("\r") if s.strip()]
    return out


def test_every_format_reads_only_lines_its_hints_let_through() -> None:
    """The quick scan and the parsers cannot drift apart: each format is offered a line only
    when one of its own hints is in it, so a parser that reads a line without any of them
    would silently lose it in the exporter. Checked on the fixtures, every segment of the
    real captures, and lines that are near misses."""
    candidates = [f[0] for f in FIXTURES] + _captured_segments() + _world_segments()
    candidates += ["Step 10 loss 0.5", "STEP 3 of 9", "epoch 2 step 10 | loss: 0.53"]
    # Ludwig's box table (its excerpt is in the unread set: its step is not read)
    candidates += ["│ rating   │   loss │   accuracy │", "│ train    │ 1.1529 │     0.3988 │"]
    # ChainerMN's ProgressBar (its excerpt is in the unread set: its one row lost a cell)
    candidates += ["      6000 iter, 20 epoch / 20 epochs", "       100 iter, 0 epoch / 20 epochs"]
    assert len(candidates) > 500
    read = {f.name: 0 for f in FORMATS}
    for msg in candidates:
        for f in FORMATS:
            if f.parse(msg, NOW) is not None:
                read[f.name] += 1
                assert any(h in msg for h in f.hints), (f.name, msg)
    # Each format read something: the check above is not vacuous for any of them.
    assert all(read.values()), read


_BAR_CELLS = st.text(
    alphabet=" #0123456789\u2588\u2589\u258a\u258b\u258c\u258d\u258e\u258f", max_size=30
)
_FRAME_TAIL = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=60)


def _slow_way(msg: str) -> list[Any]:
    """parse_message without its bare-frame shortcut: an Extra equal to the default but not
    it takes the whole way (the shortcut is only for the default, identity-checked)."""
    return parse_message(msg, NOW, Extra())


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 100), _BAR_CELLS, st.integers(0, 10**7), st.integers(0, 10**7), _FRAME_TAIL)
@example(7, "\u2588", 70, 1000, "00:07<01:30,  9.90it/s, loss=0.52")
@example(7, "\u2588", 70, 1000, "00:07<01:30,  9.90it/s, loss=np.float64(0.52)")
@example(50, "#####", 5, 10, "00:01<00:01, 5.00it/s]extra words [x")
def test_a_bare_frames_shortcut_reads_what_the_whole_way_reads(
    pct: int, cells: str, n: int, total: int, tail: str
) -> None:
    """The shortcut parse_message takes for a bare tqdm frame (:data:`_BARE_FRAME`) gives
    exactly what the whole way gives, for frames of any shape and tail it may match, and on
    every frame of the world corpus and the captures."""
    msg = f"{pct:3d}%|{cells}| {n}/{total} [{tail}]"
    assert parse_message(msg, NOW) == _slow_way(msg)


def test_the_bare_frame_shortcut_agrees_on_every_real_frame() -> None:
    """Every segment of the world corpus and the captures the shortcut takes is read as the
    whole way reads it (and there are such frames, so the check is not vacuous)."""
    frames = [m for m in _captured_segments() + _world_segments() if _BARE_FRAME.fullmatch(m)]
    assert len(frames) > 100
    for msg in frames:
        assert parse_message(msg, NOW) == _slow_way(msg), msg


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("step=/{}'%|it [Epoch:0123456789.,• loss━")), max_size=80)
)
def test_no_format_reads_hintless_text(msg: str) -> None:
    for f in FORMATS:
        if f.parse(msg, NOW) is not None:
            assert any(h in msg for h in f.hints), (f.name, msg)


def test_the_hints_are_the_formats_own() -> None:
    assert set(HINTS) == {h for f in FORMATS for h in f.hints}
    assert len({f.name for f in FORMATS}) == len(FORMATS)


def test_bars_and_frames() -> None:
    line = "\r  0%|          | 0/50 [00:00<?, ?it/s]\r 16%|█▌        | 8/50 [00:02<00:10,  3.98it/s, loss=0.5]"
    found = parse_line(line, NOW)
    assert found is not None and found.bar is not None
    assert (found.bar.n, found.bar.total, found.bar.rate, found.bar.remaining_seconds) == (
        8,
        50,
        3.98,
        10.0,
    )
    assert found.report.loss == 0.5  # the last frame wins
    slow = parse_line(" 10%|█         | 5/50 [00:20<03:00,  4.00s/it]", NOW)
    assert slow is not None and slow.bar is not None and slow.bar.rate == 0.25
    open_ended = parse_line("120it [00:30,  3.99it/s]", NOW)
    assert open_ended is not None and open_ended.bar is not None and open_ended.bar.total is None
    download = parse_line("Downloading: 100%|██████████| 1.2k/1.2k [00:00<00:00, 1.1MB/s]", NOW)
    assert download is None or (
        download.bar is not None and download.bar.prefix.startswith("Downloading")
    )


@pytest.mark.parametrize(
    "msg",
    [
        "INFO some unrelated log line with 50% done",
        "Step 5 of the pipeline",
        "loss is going down",
        "{'user': 'alice', 'action': 'login'}",
        '{"level": "info", "msg": "ready"}',
        "a=b c=d",
        "{'loss': __import__('os').system('true')}",
        "x" * (MAX_MESSAGE + 1),
        "",
        "steps: 100 loss: not-a-number",
        "\x00\xff garbage \ufffd",
    ],
)
def test_unrelated_and_hostile_lines_do_not_match(msg: str) -> None:
    assert parse_line(msg, NOW) is None


def test_absurd_values_are_dropped_not_trusted() -> None:
    found = parse_line('{"step": 1e18, "loss": "nan", "max_steps": -5}', NOW)
    assert found is not None and found.report.step is None and found.report.max_steps is None
    assert found.report.loss is not None and math.isnan(found.report.loss)


def test_cri_lines() -> None:
    full = parse_cri("2026-11-29T18:20:54.484551234Z stdout F {'loss': '1.0'}\n")
    assert full is not None and (full.stream, full.partial, full.message) == (
        "stdout",
        False,
        "{'loss': '1.0'}",
    )
    part = parse_cri("2026-11-29T18:20:54.484551234Z stderr P  16%|█▌")
    assert part is not None and part.partial and part.message == " 16%|█▌"
    assert parse_cri("not a cri line") is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_parses_or_not_without_raising(msg: str) -> None:
    found = parse_line(msg, NOW)
    if found is not None:
        assert found.parser
        assert found.report.step is None or 0 <= found.report.step <= 10**15


@pytest.mark.skipif(importlib.util.find_spec("tqdm") is None, reason="tqdm comes with the ml extra")
def test_lines_captured_from_real_tqdm() -> None:
    code = textwrap.dedent("""
        import sys, time
        from tqdm import tqdm
        for _ in tqdm(range(50), file=sys.stderr, mininterval=0, postfix={"loss": 0.25}):
            time.sleep(0.001)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    lines = [line for line in proc.stderr.split("\n") if line]
    last = parse_line(lines[-1], NOW)
    assert last is not None and last.bar is not None
    assert (last.bar.n, last.bar.total, last.report.loss) == (50, 50, 0.25)


@pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None, reason="the ml extra is not installed"
)
@pytest.mark.slow
def test_lines_captured_from_a_real_transformers_run(tmp_path: object) -> None:
    code = textwrap.dedent(f"""
        import os, json
        os.environ["HF_HUB_OFFLINE"] = "1"
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
        torch.manual_seed(0)
        model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=100, n_positions=16))
        data = [{{"input_ids": torch.randint(0, 100, (16,)), "labels": torch.randint(0, 100, (16,))}}
                for _ in range(80)]
        args = TrainingArguments(output_dir={str(tmp_path)!r}, max_steps=20, per_device_train_batch_size=4,
                                 logging_steps=5, report_to="none", save_strategy="no", use_cpu=True)
        trainer = Trainer(model=model, args=args, train_dataset=data)
        trainer.train()
        print("LOG_HISTORY " + json.dumps(trainer.state.log_history))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    history = next(
        json.loads(line[12:])
        for line in proc.stdout.splitlines()
        if line.startswith("LOG_HISTORY ")
    )
    found = [
        parse_line(frame, NOW)
        for line in (proc.stdout + proc.stderr).split("\n")
        for frame in [line]
        if frame
    ]
    dicts = [f for f in found if f is not None and f.parser == "transformers"]
    bars = [
        f for f in found if f is not None and f.parser == "tqdm" and f.bar and f.bar.total == 20
    ]
    logged = [e["loss"] for e in history if "loss" in e]
    assert [d.report.loss for d in dicts if d.report.loss is not None] == pytest.approx(
        logged, rel=1e-3
    )
    assert dicts[-1].report.final
    assert bars and max(b.bar.n for b in bars if b.bar) == 20


_JUNK = ("", "\x1b[A", "\b", "━", "•", "{'", "loss=nan", "99999999999999999999", "Epoch 3")


def _frame(prefix: str, n: int, total: int, minutes: int, seconds: int, junk: str) -> str:
    return f"{prefix}{n * 100 // max(total, 1):3d}%|#| {n}/{total} [{minutes:02d}:{seconds:02d}<00:10, 1.00it/s]{junk}"


_FRAMES = st.lists(
    st.builds(
        _frame,
        st.sampled_from(["train: ", "train: ", "", "eval: "]),  # mostly one bar
        st.integers(0, 1000) | st.just(10**12),
        st.sampled_from([1000, 1000, 10**12]),
        st.integers(0, 3) | st.just(10**6),
        st.integers(0, 59),
        st.sampled_from(_JUNK),
    ),
    max_size=60,
)


def _keras_frame(n: int, total: int, per_step: int, unit: str, junk: str) -> str:
    """A Keras 3 frame (keras/src/utils/progbar.py, 3.15): count, bar, ETA, time per step."""
    return f"\x1b[1m{n:3d}/{total}\x1b[0m \x1b[32m━━━━\x1b[0m \x1b[1m2s\x1b[0m {per_step}{unit}/step - loss: 0.5{junk}\b\b"


# Keras 3 frames whose counts go back or jump, whose time per step swings from a microsecond
# to whole seconds or is absurd, with junk between.
_KERAS_FRAMES = st.lists(
    st.builds(
        _keras_frame,
        st.integers(0, 1000) | st.just(10**12),
        st.sampled_from([1000, 1000, 10**12]),
        st.integers(0, 999) | st.just(10**15),
        st.sampled_from(["ms", "ms", "us", "s"]),
        st.sampled_from(_JUNK),
    ),
    max_size=60,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_FRAMES | _KERAS_FRAMES, st.sampled_from(["", "\r", "\r\r", "\n"]))
# Found by this test in CI: one count drawn again with a later clock says the step was still
# there then, a sample at the newest frame's own step (not past it).
@example(
    [_frame("train: ", 10**12, 1000, 10**6, 0, ""), _frame("train: ", 10**12, 1000, 10**6, 1, "")],
    "\n",
)
@example([_frame("train: ", 5, 1000, 0, 0, ""), _frame("train: ", 5, 1000, 0, 1, "")], "\n")
def test_bar_like_text_never_raises_and_frames_never_date_samples_after_now(
    frames: list[str], sep: str
) -> None:
    """Hostile progress-bar frames, tqdm's and Keras 3's (counts going back, clocks that jump
    or run backwards, huge numbers, junk between) go through the message parser, the
    unterminated-line reader and the accumulator without raising; the rate samples they
    yield are never later than the moment read, nor at a step past the newest frame's."""
    from exporter.logs.accumulate import LogAccumulator
    from exporter.logs.parse import newest_bar, parse_message

    text = "\r" + (sep or "\r").join(frames)
    acc = LogAccumulator()
    for found in parse_message(text, NOW):
        acc.feed(found, NOW)
    newest = newest_bar(text, NOW)
    if newest is not None:
        acc.feed(newest, NOW)
    report = acc.report()
    assert all(t <= NOW for t, _ in report.step_samples)
    if report.step is not None:
        assert all(step <= report.step for _, step in report.step_samples)


def test_a_line_still_being_written_says_which_epoch_it_began_in_as_a_whole_line_does() -> None:
    """Lightning redraws one line through every epoch. A poll that first reads it in its
    second epoch (the exporter read the file in big blocks) reads the same step as the line
    read whole: the line began in epoch 0, so the run was not joined at epoch 1 (a CI run
    ended with step unknown where ``inspect`` read 60)."""
    from exporter.logs.accumulate import LogAccumulator
    from exporter.logs.parse import newest_bar, parse_message

    frames = [f"Epoch 0: {5 * n}%|#| {n}/20 [00:0{n // 10}<00:00, 9.00it/s]" for n in range(21)]
    frames += [f"Epoch 1: {5 * n}%|#| {n}/20 [00:0{n // 10}<00:00, 9.00it/s]" for n in range(5)]
    text = "\r" + "\r".join(frames)
    newest = newest_bar(text, NOW)
    assert newest is not None and newest.first_prefix == "Epoch 0"
    whole, partial = LogAccumulator(), LogAccumulator()
    whole.lightning = partial.lightning = True  # as its banner makes it
    for found in parse_message(text, NOW):
        whole.feed(found, NOW)
    partial.feed(newest, NOW)
    assert partial.report().step == whole.report().step == 24


def test_a_poll_inside_a_character_keeps_its_bytes_for_the_next() -> None:
    """The tail hands out a line still being written up to its last whole character, so
    that what the next poll reads starts with what this one read."""
    from exporter.logs.tail import _whole_characters

    bar = " 58%|█████▊    | 174/300".encode()
    for cut in range(len(bar) + 1):
        kept = _whole_characters(bar[:cut])
        assert bar.startswith(kept) and cut - len(kept) < 3
        assert kept.decode("utf-8") == bar[:cut].decode("utf-8", "ignore")
    assert _whole_characters("💡".encode()[:3]) == b""
    assert _whole_characters(b"ok\xff") == b"ok\xff"  # not UTF-8: left to the decoder


def test_trainer_log_dicts_give_the_step_once_a_bar_chunk_showed_the_steps_per_epoch() -> None:
    """Trainer's dicts (stdout, at once) between its bar's chunks (stderr, 16 KiB at a
    time): a chunk whose frames span a dict's time teaches the steps per epoch (the bar's
    step then over the dict's epoch); each later dict gives the step at its own time. A
    dict with no bar, an absurd or backward epoch, an evaluation dict, or an epoch past
    the bar's total moves nothing."""
    from exporter.logs.accumulate import LogAccumulator
    from exporter.logs.parse import parse_message

    acc = LogAccumulator()

    def feed(text: str, now: float, at: float | None = None) -> None:
        for found in parse_message(text, now):
            acc.feed(found, now, at)

    def logged(epoch: str, key: str = "loss") -> str:
        return f"{{'{key}': '6.86', 'grad_norm': '0.6491', 'epoch': '{epoch}'}}"

    feed(logged("0.05"), 20.0, 20.0)
    assert acc.report().step is None, "a dict alone says no step: the steps per epoch are unknown"
    feed("\r  0%|          | 0/600 [00:00<?, ?it/s]", 50.0)
    feed(logged("0.18"), 90.0, 90.0)
    # The bar at 2 steps/s: 120 at its second 10, 200 at its second 50 (read at 100).
    frames = "".join(
        f"\r{(2 * e + 100) // 6:3d}%|####      | {2 * e + 100}/600 [00:{e:02d}<03:07,  2.00it/s]"
        for e in range(10, 51)
    )
    feed(frames, 100.0)
    assert acc.steps_per_epoch == pytest.approx(1000, rel=0.02)
    assert acc.report().step == 200
    feed(logged("0.21"), 105.5, 105.0)
    report = acc.report()
    assert report.step == 210 and report.step_samples[-1] == (105.0, 210)
    for hostile in (logged("1e12"), logged("-3"), logged("0.15"), logged("0.25", "eval_loss")):
        feed(hostile, 106.0, 106.0)
        assert acc.report().step == 210, hostile
    feed(logged("0.9"), 107.0, 107.0)  # 900 steps: past the bar's 600
    assert acc.report().step == 210
    # Trainer redraws its bar after an evaluation, the count unchanged and the clock later:
    # the step was still there then, and the next advance carries that moment.
    feed("\r 35%|###       | 210/600 [01:05<03:07,  2.00it/s]", 112.0)
    feed("\r 35%|###       | 210/600 [01:11<03:07,  1.90it/s]", 118.0)
    assert acc.report().step_samples[-1] == (118.0, 210)
    feed("\r 38%|###       | 230/600 [01:21<03:07,  2.00it/s]", 128.0)
    assert acc.report().step == 230
    assert (118.0, 210) not in acc.report().step_samples, "an advance ends the stillness"
    # A bar with no total (tqdm over an iterable of unknown length): nothing to check an
    # epoch's step against, so the dicts give none.
    acc = LogAccumulator()
    feed(logged("0.18"), 90.0, 90.0)
    feed("".join(f"\r{2 * e + 100}it [00:{e:02d}, 2.00it/s]" for e in range(10, 51)), 100.0)
    feed(logged("0.21"), 105.0, 105.0)
    assert acc.report().step == 200


_WORDS = st.sampled_from(
    [
        "step", "Step", "iter", "iteration", "epoch", "Epoch", "loss", "lm loss", "val loss",
        "global_step", "num_updates", "lr", "tps", "mfu", "[batch=", "Train:", "Test:",
        "Epoch(train)", "|", " - ", ",", ":", "=", "/", "[", "]", "(", ")", "%", "nan", "inf",
        "1e308", "-3", "0", "7", "2,000", "99999999999999999999", "valid on", "Validation",
    ]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(_WORDS, max_size=24).map(" ".join))
@example("step 0 / 0")  # found by this test in CI: a total of 0 is no run's length
@example("step 5 / 0 loss 1.0")
def test_the_general_reader_never_raises_and_stays_in_bounds(msg: str) -> None:
    """Hostile progress-like lines: the general reader returns nothing or a report whose
    values are within the model's bounds (a step of 10^20 is dropped, not exported)."""
    found = parse_line(msg, NOW)
    if found is None:
        return
    r = found.report
    assert r.step is None or 0 <= r.step <= 10**15, msg
    assert r.max_steps is None or 0 < r.max_steps <= 10**15, msg
    assert r.epoch is None or math.isfinite(r.epoch), msg
    assert not r.final or found.parser not in ("progress", "jsonl", "composer"), msg


@pytest.mark.parametrize(
    "prefix, other_work",
    [
        ("Processed prompts", True),  # vLLM's generation in RL trainers (OpenRLHF, verl)
        ("Capturing CUDA graph shapes", True),
        ("Loading checkpoint shards", True),
        ("Map", True),  # datasets
        ("Running tokenizer on dataset", True),
        ("Validation DataLoader 0", True),
        ("Episode [1/30]", False),  # OpenRLHF's training loop
        ("Epoch 3", False),
        ("Training", False),
        ("Mapping epoch", False),  # a word that starts like one is not it
    ],
)
def test_a_bar_of_other_work_is_never_the_training_bar(prefix: str, other_work: bool) -> None:
    assert eval_bar(prefix) is other_work
    if prefix.startswith("Episode"):
        assert epoch_of(prefix) == (1, 30)


def _read_lines(lines: list[str]) -> ProgressReport:
    from exporter.logs.accumulate import LogAccumulator
    from exporter.logs.parse import parse_message

    acc = LogAccumulator()
    for line in lines:
        for found in parse_message(line, NOW):
            acc.feed(found, NOW)
    return acc.report()


_PROGRAMS = Path(__file__).parent / "fixtures" / "logs" / "programs"


def _run_program(tmp_path: Path, name: str, *args: str, **env: str) -> tuple[str, dict[str, Any]]:
    """Run ``tests/fixtures/logs/programs/<name>.py`` for real, its stdout and stderr one
    stream as a container's log has them: its output, and the truth it wrote."""
    truth_path = tmp_path / "truth.json"
    done = subprocess.run(
        [sys.executable, str(_PROGRAMS / f"{name}.py"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "TRUTH_PATH": str(truth_path), **env},
        timeout=120,
    )
    assert done.returncode == 0, done.stdout.decode()[-2000:]
    return done.stdout.decode(), json.loads(truth_path.read_text())


_YOLO_FRAME = "{row}       640: {pct}%|##| {n}/10 [00:04<00:00,  2.2it/s]"


@pytest.mark.parametrize(
    "header, rows, step, total",
    [
        # YOLOv5 (train.py: f"{epoch}/{epochs - 1}"): "1/2" is the second of three epochs.
        (
            "      Epoch    GPU_mem   box_loss   obj_loss   cls_loss  Instances       Size",
            ("0/2", "1/2"),
            14,
            30,
        ),
        (
            "     Epoch   gpu_mem       box       obj       cls     total   targets  img_size",
            ("0/2", "1/2"),
            14,
            30,
        ),
        # Ultralytics 8+ (trainer.py: f"{epoch + 1}/{self.epochs}"): "2/3" is the second.
        (
            "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size",
            ("1/3", "2/3"),
            14,
            30,
        ),
        (
            "      Epoch    GPU_mem   box_loss  pose_loss  kobj_loss   cls_loss   dfl_loss  "
            "Instances       Size",
            ("1/3", "2/3"),
            14,
            30,
        ),
    ],
)
def test_a_yolo_table_counts_its_epochs_as_its_header_says(
    header: str, rows: tuple[str, str], step: int, total: int
) -> None:
    """YOLOv5 prints the 0-based epoch of the last, Ultralytics 8 and later the 1-based
    epoch of all; only YOLOv5's header has an objectness column."""
    lines = []
    for row, n in zip(rows, (10, 4), strict=True):
        lines.append(header)
        cells = f"    {row}      6.73G      1.081     0.4706      1.084         10"
        lines.append(_YOLO_FRAME.format(row=cells, pct=n * 10, n=n))
    report = _read_lines(lines)
    assert (report.step, report.max_steps) == (step, total)


def test_mmcv_epochs_place_the_checkpoint_and_the_runs_length() -> None:
    """mmcv's runner says its epochs once ("max: 3 epochs") and its lines the epoch's size
    ([2][30/35]): the run is 105 iterations, and "Saving checkpoint at 2 epochs" is at 70.
    A save that names an epoch past the one under way moves nothing."""
    lines = [
        "2021-07-14 13:52:19,825 - mmcls - INFO - workflow: [('train', 1)], max: 3 epochs",
        "2021-07-14 13:52:51,080 - mmcls - INFO - Epoch [2][30/35]\tlr: 1.000e-02, loss: 0.5266",
        "2021-07-14 13:52:52,888 - mmcls - INFO - Saving checkpoint at 2 epochs",
    ]
    report = _read_lines(lines)
    assert (report.step, report.max_steps, report.checkpoint_step) == (70, 105, 70)
    far = _read_lines(
        [*lines[:2], "2021-07-14 13:52:52,888 - mmcls - INFO - Saving checkpoint at 9 epochs"]
    )
    assert far.step == 65


def _pl_frame(prefix: str, n: int, total: int, postfix: str = "") -> str:
    return f"{prefix}: {100 * n // total}%|##| {n}/{total} [00:01<00:01, 9.00it/s{postfix}]"


def test_lightning_before_2_counts_validation_in_its_main_bar() -> None:
    """Lightning before 2.0 draws each epoch's main bar over its training and validation
    batches (10 + 3 here) and moves it during validation: the step is the training
    batches, mid-validation and in the next epoch. Lightning 2's main bar, which stands
    still during validation, reads as its count."""
    main = "Epoch {e}"
    post = ", loss=0.5, v_num=7"
    lines = [_pl_frame(main.format(e=0), n, 13, post) for n in range(1, 11)]
    for v in range(1, 3):
        lines.append(_pl_frame("Validation DataLoader 0", v, 3))
        lines.append(_pl_frame(main.format(e=0), 10 + v, 13, post))
    assert _read_lines(lines).step == 10
    lines.append(_pl_frame("Validation DataLoader 0", 3, 3))
    lines.append(_pl_frame(main.format(e=0), 13, 13, post))
    lines += [_pl_frame(main.format(e=1), n, 13, post) for n in range(1, 5)]
    assert _read_lines(lines).step == 14
    # Lightning 2: the main bar is the training batches; validation does not move it.
    two = [_pl_frame(main.format(e=0), n, 10, post) for n in range(1, 11)]
    two += [_pl_frame("Validation DataLoader 0", v, 3) for v in range(1, 4)]
    two += [_pl_frame(main.format(e=1), n, 10, post) for n in range(1, 5)]
    assert _read_lines(two).step == 14


def test_every_parser_name_is_in_the_metric_docs() -> None:
    """training_exporter_log_matches_total{parser}: every name a line's parser may carry is
    documented in docs/metrics.md (kube-state-metrics' rule: the docs are checked against
    the code)."""
    from exporter.logs.formats import PARSER_NAMES

    docs = Path(__file__).parent.parent / "docs" / "metrics.md"
    row = next(
        line
        for line in docs.read_text(encoding="utf-8").splitlines()
        if line.startswith("| `training_exporter_log_matches_total`")
    )
    missing = sorted(n for n in PARSER_NAMES if f"`{n}`" not in row)
    assert not missing, missing


def test_a_frame_cut_inside_its_clock_gives_its_count_and_nothing_else() -> None:
    """A CRI "P" chunk, a line still being written or a terminal's paste cut at its width
    ends inside a frame. Once the frame's clock bracket has opened its count and total are
    whole (" 82%|...| 80/97 [08:32<", round 217's Trainer under srun; cut after its rate,
    round 229's RWKV): they are read, and no rate or clock; a frame cut before its bracket
    (inside its count) reads nothing."""
    from exporter.logs.formats.tqdm import read_bar

    chunk = (
        "\rtrain:  67%|##| 536/800 [02:07<01:04,  4.08it/s]\rtrain:  67%|##| 537/800 [02:07<01:06, "
    )
    found = read_bar(chunk)  # cut after its clock, inside the rate: its count alone
    assert found is not None and (found[0].n, found[0].rate, found[0].elapsed_seconds) == (
        537,
        None,
        None,
    )
    found = read_bar("\rtrain:  67%|##| 537/800 [02:07<01:0")
    assert found is not None
    bar, postfix = found
    assert (bar.n, bar.total, bar.rate, bar.elapsed_seconds, postfix) == (537, 800, None, None, {})
    assert read_bar("\rtrain:  67%|##| 53") is None
    # In a chunk of frames (a CRI "P" chunk, a live line) the cut one still waits: the whole
    # frames before it carry the clock and rate the ETA samples.
    from exporter.logs.parse import parse_message

    (read,) = parse_message(chunk.rsplit(", ", 1)[0].rsplit("<", 1)[0] + "<01:0", 0.0)
    assert read.bar is not None and (read.bar.n, read.bar.elapsed_seconds) == (536, 127)
    (read,) = parse_message(chunk, 0.0)
    assert read.bar is not None and (read.bar.n, read.bar.elapsed_seconds) == (536, 127)


@pytest.mark.parametrize(
    ("line", "read"),
    [
        ("2024-04-23 15:23:41.803760: train_loss -0.7526", {"loss": -0.7526}),
        ("2022-02-11 09:34:59.688008: validation loss: -0.7226", {"eval_loss": -0.7226}),
        ("    train/CrossEntropyLoss=0.0", {"loss": 0.0}),
        ("|    loss                 | 20.1        |", {"loss": 20.1}),
        ("|    total_timesteps      | 3584        |", {"step": 3584}),
        # Not a loss, or not alone on its line: nothing.
        ("Total params: 9", {}),
        ("2024-04-23 15:22:40.724555: Current learning rate: 0.00036", {}),
        ("|    value_loss_coef      | 0.5         |", {}),
        ("the loss 0.5 looks high", {}),
        ("loss: 0.5 then more", {}),
        ("|    total_timesteps      | 3584.5      |", {}),
    ],
)
def test_a_loss_on_a_line_of_its_own_is_read_and_nothing_else_is(
    line: str, read: dict[str, float]
) -> None:
    """nnU-Net, OLMo's blocks and Stable-Baselines3's table print one value per line: the
    losses are read (SB3's ``total_timesteps`` row is its step); any other lone pair, or a
    pair with more around it, is left to the other readers."""
    from exporter.logs.formats.lone import parse_lone

    found = parse_lone(line, NOW)
    got = {} if found is None else {k: v for k, v in found.report.values() if v is not None}
    got.pop("timestamp", None)
    assert got == read, got


def test_a_one_line_json_log_is_read_as_a_log_where_it_says_more_than_a_status_file(
    tmp_path: Path,
) -> None:
    """``inspect`` of a file holding one JSON object: a status file (the report format) unless,
    read as a log line, it gives the step the status file's keys did not (fairseq's
    ``--log-format json``)."""
    from exporter.logs.inspect import inspect_path

    fairseq = tmp_path / "fairseq.log"
    fairseq.write_text('{"epoch": 27, "update": 26.267, "loss": "8.206", "num_updates": "33700"}\n')
    doc = inspect_path(str(fairseq))
    assert doc["kind"] == "log" and doc["report"]["step"] == 33700
    assert doc["report"]["epoch"] == 26.267  # "update": the epochs done
    status = tmp_path / "status.json"
    status.write_text('{"step": 5, "max_steps": 10, "loss": 0.5}\n')
    assert inspect_path(str(status))["kind"] == "status-file"


def test_a_trainer_dict_after_a_loggers_prefix_is_read_with_its_step() -> None:
    """TFTrainer (and Trainer under transformers' logging) prints its dicts after a logger's
    prefix; TFTrainer's carry the global step. A dict inside other text that does not end
    the line is not a log dict."""
    from exporter.logs.formats.trainer_dicts import parse_transformers

    line = (
        "[INFO|trainer_tf.py:398] 2021-01-15 10:28:56,791 >> {'loss': 0.604829, "
        "'learning_rate': 4.7826084e-05, 'epoch': 0.17391304347826086, 'step': 20}"
    )
    found = parse_transformers(line, NOW)
    assert found is not None and found.report.step == 20 and found.report.loss == 0.604829
    assert parse_transformers("x {'loss': 0.5} and more words", NOW) is None
    assert parse_transformers("{'loss': 0.5, 'step': True}", NOW).report.step is None  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("line", "step"),
    [
        ("2020-11-25 11:36:45 INFO: epoch:4   train step:6    loss:  6.7186 lr: 0.1", None),
        ("2020-11-25 11:36:45 INFO: epoch:0   train step:6    loss:  6.7186 lr: 0.1", 6),
        ("Epoch 34 | iter 3050700 step 610140 | loss train: 2.846", 610140),  # LitGPT: global
    ],
)
def test_a_train_step_within_a_later_epoch_is_no_step_of_the_run(
    line: str, step: int | None
) -> None:
    """PaddleClas counts ``train step`` within the epoch, whose size it does not print: past
    epoch 0 the run's step is unknown (its loss is still read); LitGPT's ``step`` beside its
    epoch is the run's."""
    from exporter.logs.formats.progress import read_progress

    found = read_progress(line, NOW)
    assert found is not None and found.report.step == step and found.report.loss is not None


@pytest.mark.parametrize(
    "description",
    ["model.safetensors", "generation_config.json", "tokenizer.model", "pytorch_model.bin"],
)
def test_a_download_bar_named_after_its_file_is_no_training_bar(description: str) -> None:
    """The Hugging Face Hub draws one bar per file it downloads (``tokenizer_config.json:
    100%|...| 971/971``): its count is bytes or items of a file, never steps."""
    from exporter.logs.bars import eval_bar

    assert eval_bar(description)
    assert not eval_bar("Epoch 3") and not eval_bar("Training") and not eval_bar("steps")


def test_trainers_notebook_progress_printed_as_text_is_read() -> None:
    """Trainer's notebook progress, where a notebook shows it as text: the global step of
    max_steps (transformers utils/notebook.py)."""
    from exporter.logs.formats.progress import read_progress

    found = read_progress("[ 22/290 02:50 < 38:04, 0.12 it/s, Epoch 0.36/5]", NOW)
    assert found is not None
    assert (found.report.step, found.report.max_steps) == (22, 290)


def test_a_date_is_no_value_and_loss_test_is_the_eval_loss() -> None:
    """Cellpose's epoch line, behind a logger name and a date
    (https://github.com/MouseLand/cellpose/issues/403): "cellpose: 2021-12-10" is no metric
    of 2021, and "Loss Test" is the evaluation's loss, as "test loss" is."""
    line = (
        "INFO: cellpose: 2021-12-10 09:41:27,900 [INFO] Epoch 100, Time 40.8s, "
        "Loss 1.2783, Loss Test 1.2959, LR 0.2000"
    )
    found = parse_line(line, NOW)
    assert found is not None
    r = found.report
    assert (r.loss, r.eval_loss, r.learning_rate) == (1.2783, 1.2959, 0.2)
    assert dict(r.metrics) == {"time": 40.8}
    pairs = [p.key for p in find_pairs("step 5-10 of warmup, eta 2021-12-10, loss 0.5")]
    assert pairs == ["loss"]


def test_camel_case_keys_are_looked_up_as_their_words() -> None:
    """AUTOMAP's Keras loop prints ``ValLoss`` (https://github.com/MattRosenLab/AUTOMAP/issues/4):
    the eval loss, as ``val_loss`` is; a camel-case key the vocabulary does not know stays a
    custom metric under its own name."""
    from exporter.logs.formats.vocabulary import metric_name

    assert field_of("ValLoss") == field_of("val_loss") == ("eval_loss", 1)
    assert field_of("trainLoss") == ("loss", 1)
    assert field_of("PeakMem") is None and metric_name("PeakMem") == "peakmem"
    found = parse_line("Epoch 99, Loss: 0.000111, ValLoss: 9.5e-05", NOW)
    assert found is not None
    assert (found.report.loss, found.report.eval_loss, found.report.step) == (
        0.000111,
        9.5e-05,
        None,
    )


@pytest.mark.parametrize(
    "text, value",
    [
        ("Accuracy:  0,4941176,", 0.4941176),  # ML.NET in a comma-decimal locale
        ("Cross-Entropy: 5,939554E+12", 5.939554e12),
        ("x: 12,5", 12.5),
        ("tps: 10,050", 10050.0),  # thousands stay thousands: exactly three digits a group
        ("Sen. 1,212,903 :", 1212903.0),
        ("consumed samples: 1,000", 1000.0),
    ],
)
def test_a_comma_not_followed_by_three_digits_is_a_decimal_comma(text: str, value: float) -> None:
    """A comma followed by exactly three digits groups thousands (``10,050``); any other
    (``0,4941176``, ``5,939554E+12``: ML.NET printing in a German or French locale,
    https://github.com/dotnet/machinelearning-samples/issues/717) is the decimal point.
    Before, ``5,939554E+12`` was read as 5: a loss eleven orders of magnitude off."""
    (pair,) = find_pairs(text)
    assert pair.value == value


@pytest.mark.parametrize(
    "line, step, loss, eval_loss",
    [
        # Marian (https://github.com/marian-nmt/marian/issues/376): updates done, the cost.
        (
            "[2021-07-17 14:29:40] Ep. 1 : Up. 26000 : Sen. 1,650,105 : Cost 3.89087892 : "
            "Time 636.06s : 2924.37 words/s",
            26000,
            3.89087892,
            None,
        ),
        (
            "[2021-07-17 13:50:36] [valid] Ep. 1 : Up. 20000 : cross-entropy : 130.97 : new best",
            None,
            None,
            130.97,
        ),
        (
            "[2021-07-17 13:51:53] [valid] Ep. 1 : Up. 20000 : translation : 2.35 : new best",
            None,
            None,
            None,
        ),
        # MXNet's Speedometer: the batch within a 0-based epoch, the run's only in epoch 0.
        (
            "Node[0] Epoch[0] Batch [3200]\tSpeed: 47.92 samples/sec\tTrain-cross-entropy=2.1",
            3200,
            2.1,
            None,
        ),
        (
            "Node[0] Epoch[7] Batch [300]\tSpeed: 75294.08 samples/sec\tTrain-cross-entropy=0.127419",
            None,
            0.127419,
            None,
        ),
        ("Epoch[0] Batch [100-200]\tSpeed: 1000.00 samples/sec\tcross-entropy=1.5", 200, 1.5, None),
        # TF Hub's retrain.py.
        (
            "INFO:tensorflow:2019-04-23 05:08:17.799738: Step 290: Cross entropy = 0.009747",
            290,
            0.009747,
            None,
        ),
    ],
)
def test_marian_mxnet_and_retrain_lines_are_read_by_the_general_reader(
    line: str, step: int | None, loss: float | None, eval_loss: float | None
) -> None:
    """Round 16 of the held-out logs (docs/logs.md): Marian's ``Ep. e : Up. n`` counter and
    ``Cost``, its ``[valid]`` lines' losses as eval losses (and its BLEU line as nothing),
    (whose counter is the evaluation's, not a step), MXNet's ``Epoch[e] Batch [i]`` (within
    the epoch, as PaddleClas' and icefall's counters)
    and its ``Train-cross-entropy``, retrain's ``Cross entropy``."""
    found = parse_line(line, NOW)
    if step is None and loss is None and eval_loss is None:
        assert found is None
        return
    assert found is not None
    assert (found.report.step, found.report.loss, found.report.eval_loss) == (step, loss, eval_loss)


def test_a_loss_named_value_printed_in_seconds_is_a_time_not_the_loss() -> None:
    """``cost`` is Marian's loss (``Cost 3.89``); ``cost 0.25s`` is a time: a loss-named
    value printed with a unit of time is kept as ``<name>_seconds``, never as the loss."""
    timed = parse_line("iter 100, cost 0.25s, acc 0.5", NOW)
    assert timed is not None and timed.report.loss is None
    assert dict(timed.report.metrics)["cost_seconds"] == 0.25
    plain_cost = parse_line("iter 100 | cost 0.25 | acc 0.5", NOW)
    assert plain_cost is not None and plain_cost.report.loss == 0.25


@pytest.mark.parametrize(
    "line, step, loss",
    [
        # TinyCLIP (https://github.com/microsoft/Cream/issues/252): epoch 14 (0-based), 41 of
        # its 14656 batches done.
        (
            "2024-12-08,22:10:14 | INFO | Train Epoch: 14 [41/14656] [   41984/15007744 (0%)] "
            "Loss: 3.6008 (3.656) LR: 0.000041",
            14 * 14656 + 41,
            3.6008,
        ),
        # WeNet (https://github.com/wenet-e2e/wenet/issues/941): epoch/batch index.
        (
            "2023-01-30 18:49:20,438 DEBUG TRAIN Batch 4/203800 loss 25.618004 lr 0.00032619 rank 0",
            None,
            25.618004,
        ),
        ("2023-01-30 18:49:20,438 DEBUG TRAIN Batch 0/300 loss 30.5 lr 0.0003 rank 0", 300, 30.5),
        # AllenNLP 2017: the loss, the step unknown (its epoch is on another line).
        ("allennlp.training.trainer - Batch 1701/17168: accuracy: 0.49, loss: 1.09 ||", None, 1.09),
    ],
)
def test_tinyclip_wenet_and_allennlp_counters(line: str, step: int | None, loss: float) -> None:
    """Round 17 of the held-out logs (docs/logs.md)."""
    found = parse_line(line, NOW)
    assert found is not None
    assert (found.report.step, found.report.loss) == (step, loss)


def test_a_cross_validation_under_way_and_wandbs_dropped_entries_are_no_progress() -> None:
    """WeNet's ``CV Batch 4/0 ... history loss`` is a cross-validation still counting (its
    result comes later), and wandb's ``Dropping entry: {... 'step': 205224 ...}`` names a
    step wandb refused, not the run's: before, it was read as the run's step (205224 where
    205225 were done)."""
    assert (
        parse_line(
            "2023-01-30 18:49:56,046 DEBUG CV Batch 4/0 loss 28.402842 history loss 27.845923 rank 0",
            NOW,
        )
        is None
    )
    dropped = (
        "wandb: WARNING (User provided step: 205224 is less than current step: 205528. "
        "Dropping entry: {'train/loss': 3.600809097290039, 'step': 205224})."
    )
    assert parse_line(dropped, NOW) is None


@pytest.mark.parametrize(
    ("line", "step", "loss", "eval_loss"),
    [
        # XGBoost's xgb.train: the training set's and the eval set's one loss each.
        ("[500]\teval-logloss:0.41906\ttrain-logloss:0.160439", 500, 0.160439, 0.41906),
        # xgb.cv: mean+spread.
        ("[3]\ttrain-rmse:0.5+0.01\ttest-rmse:0.61+0.02", 3, 0.5, 0.61),
        # The scikit-learn API names every set validation_N: two of them, no guess.
        (
            "[5739]\tvalidation_0-mae:73.1365\tvalidation_0-rmse:133.785\tvalidation_1-mae:70.5707"
            "\tvalidation_1-rmse:128.86",
            5739,
            None,
            None,
        ),
        # Two loss metrics in one set: which one the user watches is unknown.
        ("[7]\ttrain-mae:1.5\ttrain-rmse:2.5", 7, None, None),
        # An AUC or an error rate is never the loss.
        ("[9]\ttrain-auc:0.91\teval-auc:0.88", 9, None, None),
        ("[9]\ttrain-error:0.1\ttrain-logloss:0.3", 9, 0.3, None),
        # LightGBM's Python package and its R package.
        (
            "[4]\ttraining's binary_logloss: 0.77109\tvalid_1's binary_logloss: 0.770573",
            4,
            0.77109,
            0.770573,
        ),
        ("[30]:   train's l2:0.0850142    valid's l2:0.0935492", 30, 0.0850142, 0.0935492),
        # LightGBM's command line: a set and a metric per line.
        ("[LightGBM] [Info] Iteration:21, training binary_logloss : 0.199708", 21, 0.199708, None),
        ("[LightGBM] [Info] Iteration:21, valid_1 binary_logloss : 0.200359", 21, None, 0.200359),
        ("[LightGBM] [Info] Iteration:21, valid_2 binary_logloss : 0.3", 21, None, None),
        ("[LightGBM] [Info] Iteration:21, training auc : 0.654056", 21, None, None),
        ("[LightGBM] [Info] Iteration:999, training's log loss: 0.004589", 999, 0.004589, None),
        # CatBoost: learn and test, unless best says the metric is maximized.
        (
            "600:\tlearn: 0.1498213\ttest: 0.1367448\tbest: 0.1366783 (566)\ttotal: 28.9s\t"
            "remaining: 19.2s",
            600,
            0.1498213,
            0.1367448,
        ),
        (
            "34:     learn: 0.9508429        test: 0.8235312 best: 0.8356368 (1)     total: 17.5s"
            "    remaining: 1h 39m 38s",
            34,
            None,
            None,
        ),
        (
            "13:     learn 0.2893642169passed: 17.7 sec      total: 6m 57s   remaining: 27m 49s",
            13,
            0.2893642169,
            None,
        ),
    ],
)
def test_gradient_boosting_rounds(
    line: str, step: int, loss: float | None, eval_loss: float | None
) -> None:
    """Round 18 of the held-out logs (docs/logs.md): XGBoost's, LightGBM's and CatBoost's
    line per round, the round as the step; the loss only where one training-set loss metric
    is printed, the eval loss only from the line's one validation set."""
    found = parse_line(line, NOW)
    assert found is not None and found.parser == "boosting"
    assert (found.report.step, found.report.loss, found.report.eval_loss) == (step, loss, eval_loss)
    assert not found.report.final


def test_lightgbm_cli_end_is_a_finish_and_look_alikes_are_not() -> None:
    """LightGBM's ``Application::Train`` prints ``Finished training`` once the model is saved
    (``Finish train`` before 2017): the run's end. The same words from anything else are not."""
    for line in ("[LightGBM] [Info] Finished training", "[LightGBM] [Info] Finish train"):
        found = parse_line(line, NOW)
        assert found is not None and found.report.final, line
    for line in ("Finished training epoch 3", "[Info] Finished training",
                 "[LightGBM] [Info] Finished training data loading"):  # fmt: skip
        found = parse_line(line, NOW)
        assert found is None or not found.report.final, line


def test_a_bar_faster_than_any_training_loop_counts_items_not_steps() -> None:
    """PyTorch Geometric's examples draw each epoch's training nodes as a bar (``Epoch 00:
    100%| 90941/90941 [00:02<00:00, 35622.37it/s]``): past 5,000 at over 5,000 a second, a
    bar counts items, never steps. The same speed over a few iterations (a loop with nothing
    in it, briefly) and a fast count at a training loop's speed are still steps."""
    nodes = [
        f"Epoch {e:02d}: 100%|#####| 90941/90941 [00:02<00:00, 35622.37it/s]" for e in range(3)
    ]
    assert _read_lines(nodes).step is None
    assert _read_lines(["100%|#####| 20/20 [00:00<00:00, 91180.52it/s]"]).step == 20
    assert _read_lines(["40%|##   | 9000/22500 [00:03<00:04, 2999.10it/s]"]).step == 9000


def test_a_bare_val_is_the_eval_loss_only_after_the_lines_train_loss() -> None:
    """LitGPT's ``loss train: 2.846, val: 2.861``: the eval loss. SAGN's ``Accs: Train:
    0.7351, Val: 0.7079``: an accuracy, kept as a custom metric, never the eval loss."""
    litgpt = parse_line("iter 10: loss train: 2.846, val: 2.861 | iter time: 96.32 ms", NOW)
    assert litgpt is not None and litgpt.report.eval_loss == 2.861
    sagn = parse_line(
        "Epoch 26, Time(s): 11.3853 6.5175, Best Val loss: 0.9427, Accs: Train: 0.7351, "
        "Val: 0.7079, Test: 0.6753",
        NOW,
    )
    assert sagn is None or (sagn.report.eval_loss is None and sagn.report.loss is None)


def test_keras_time_per_step_tells_samples_from_steps() -> None:
    """Keras 2's ``fit()`` on arrays counted samples (``60000/60000 ... 5s 87us/step``):
    under 200 us a step, the bar counts items and gives no step; ``423/423 ... 439ms/step``
    (``fit_generator``) counts steps."""
    samples = [
        "Epoch 1/12",
        "60000/60000 [==============================] - 5s 87us/step - loss: 0.3437",
        "Epoch 2/12",
        "60000/60000 [==============================] - 5s 77us/step - loss: 0.1145",
    ]
    assert _read_lines(samples).step is None
    steps = [
        "Epoch 1/100",
        "423/423 [==============================] - 192s 454ms/step - loss: 1.8386",
        "Epoch 2/100",
        "423/423 [==============================] - 186s 439ms/step - loss: 1.8087",
    ]
    report = _read_lines(steps)
    assert (report.step, report.max_steps) == (846, 42300)


def test_keras_train_on_n_samples_makes_bars_of_n_count_samples() -> None:
    """Keras 1 and 2's ``fit()`` on arrays says ``Train on N samples`` first (round 41): its
    bars of N count samples (no step), where ``- 17s -`` gives no time per step. Bars of
    another length still count steps, and ``Train for N steps`` is no such line."""
    lines = [
        "Train on 3523 samples, validate on 186 samples",
        "Epoch 1/1",
        " 512/3523 [===>..........................] - ETA: 25s - loss: 0.0051",
        "3523/3523 [==============================] - 17s - loss: 0.0024 - val_loss: 9.8068e-04",
    ]
    report = _read_lines(lines)
    assert (report.step, report.max_steps, report.loss) == (None, None, 0.0024)
    # Keras from 2.1 (and TensorFlow's) ends an epoch with its time per step.
    timed = [*lines[1:3], "3523/3523 [=====] - 17s 5ms/step - loss: 0.0024 - val_loss: 0.00098"]
    for first in ("Train on 60000 samples", "Train for 3523 steps, validate for 186 steps"):
        assert _read_lines([first, *timed]).step == 3523


def test_a_keras_bar_timed_per_sample_counts_samples() -> None:
    """TensorFlow 2.0 and 2.1's Keras named its unit on arrays: ``- 5s 80us/sample`` (its
    Progbar's unit_name), and counted samples: no step, the epochs read (a notebook's output
    without its ``Train on N samples`` line had read as 2 x 60000 steps)."""
    lines = [
        "Epoch 1/5",
        "60000/60000 [==============================] - 5s 80us/sample - loss: 0.2942 - accuracy: 0.9140",
        "Epoch 2/5",
        " 1024/60000 [..............................] - ETA: 4s - loss: 0.1420",
    ]
    report = _read_lines(lines)
    assert (report.step, report.max_steps, report.loss) == (None, None, 0.142)
    assert (report.epoch, report.max_epochs) == (pytest.approx(1 + 1024 / 60000), 5.0)
    per_step = _read_lines([lines[0], lines[1].replace("80us/sample", "2ms/step")])
    assert (per_step.step, per_step.max_steps) == (60000, 300000)


def test_a_keras_bar_ended_without_a_time_per_step_gives_no_step() -> None:
    """Keras before 2.1 ended an epoch's bar with its time alone (``- 0s - loss``), and
    counted samples in ``fit`` (Keras 1 in ``fit_generator`` too), steps only in 2.0's
    ``fit_generator``: the count is no step, the epochs still are (round 266: Stack Overflow
    question 34673396's 1213 observations had read as 18 x 1213 steps). Keras 2.3's
    ``verbose=2`` line (a count, no bar) counts steps."""
    lines = []
    for epoch, loss in ((1, "0.1760"), (2, "0.1840"), (3, "0.1816")):
        lines += [
            f"Epoch {epoch}/20",
            f"1213/1213 [==============================] - 0s - loss: {loss}",
        ]
    report = _read_lines(
        [*lines, "Epoch 4/20", " 600/1213 [=============>...] - ETA: 0s - loss: 0.19"]
    )
    assert (report.step, report.max_steps, report.loss) == (None, None, 0.19)
    assert (report.epoch, report.max_epochs) == (pytest.approx(3 + 600 / 1213), 20.0)
    timed = [line.replace("- 0s -", "- 0s 40us/step -") for line in lines]
    assert _read_lines(timed).step == 3 * 1213
    verbose2 = [
        "Epoch 1/3",
        "1079/1079 - 11s - loss: 0.1784",
        "Epoch 2/3",
        "1079/1079 - 10s - loss: 0.1024",
    ]
    assert (_read_lines(verbose2).step, _read_lines(verbose2).max_steps) == (2158, 3237)


@pytest.mark.parametrize(
    ("line", "step", "total", "loss", "eval_loss"),
    [
        ("Step... (1000 | Loss: 2.3100, Learning Rate: 0.0001)", 1000, None, 2.31, None),
        ("Step... (500/1000 | Eval Loss: 1.5 | Eval Accuracy: 0.6)", 500, 1000, None, 1.5),
        ("Epoch... (47/116 | Loss: 0.17431044578552246)", None, None, 0.17431044578552246, None),
    ],
)
def test_hugging_face_flax_examples(
    line: str, step: int | None, total: int | None, loss: float | None, eval_loss: float | None
) -> None:
    """The Flax examples of transformers and diffusers: ``Step... (n | ...)`` is the run's
    step; ``Epoch... (e/E | Loss: ...)`` an epoch's summary, its step unknown."""
    found = parse_line(line, NOW)
    assert found is not None
    report = found.report
    assert (report.step, report.max_steps, report.loss, report.eval_loss) == (
        step,
        total,
        loss,
        eval_loss,
    )


def test_fasttext_progress_lines_give_values_and_no_step() -> None:
    """fastText's ``Progress: 41.3%  words/sec/thread: ...  lr: ...  loss: ...`` (``avg.loss``
    since 0.9): the share of its words, no step; its loss and learning rate are read."""
    old = parse_line(
        "Progress: 0.1%  words/sec/thread: 1767038  lr: 0.099883  loss: 1.385664  eta: 0h11m", NOW
    )
    new = parse_line(
        "Progress: 100.0% words/sec/thread:  612035 lr:  0.000000 avg.loss:  0.543113 "
        "ETA:   0h 0m 0s",
        NOW,
    )
    assert old is not None and (old.report.step, old.report.loss) == (None, 1.385664)
    assert new is not None and (new.report.step, new.report.loss) == (None, 0.543113)


def test_darknet_iteration_lines_and_not_its_region_lines() -> None:
    """Darknet's ``957: 0.660188, 0.689227 avg loss, 0.000839 rate, ... 61248 images``: the
    iteration, its loss, the learning rate (the average kept as a custom metric). Its YOLO
    region lines (``..., loss = 316.458832``) are one layer's part: never the run's loss."""
    found = parse_line(
        " 957: 0.660188, 0.689227 avg loss, 0.000839 rate, 3.315456 seconds, 61248 images", NOW
    )
    assert found is not None and found.parser == "darknet"
    report = found.report
    assert (report.step, report.loss, report.learning_rate) == (957, 0.660188, 0.000839)
    assert dict(report.metrics)["average_loss"] == 0.689227
    region = (
        "v3 (mse loss, Normalizer: (iou: 0.750000, cls: 1.000000) Region 82 Avg (IOU: 0.343576, "
        "GIOU: 0.244701), Class: 0.494423, count: 26, loss = 316.458832, class_loss = 296.934875"
    )
    read = _read_lines(
        [" 957: 0.660188, 0.689227 avg loss, 0.000839 rate, 3.315456 seconds, 61248 images"]
        + [region] * 3
    )
    assert (read.step, read.loss) == (957, 0.660188)
    assert _read_lines([region]).loss is None


@pytest.mark.parametrize(
    ("line", "step", "total", "loss"),
    [
        # char-rnn (https://github.com/karpathy/char-rnn/issues/215): i of all iterations.
        (
            "66/9500 (epoch 0.347), train_loss = 3.27353297, grad/param norm = 9.1639e-02, "
            "time/batch = 0.1671s\t",
            66,
            9500,
            3.27353297,
        ),
        # torch-rnn's train.lua format: i of num_iterations, the 1-based epoch not read.
        ("Epoch 1.02 / 50, i = 240 / 11450, loss = 2.310642", 240, 11450, 2.310642),
        # pytorch/examples' ImageNet ProgressMeter: no space between the epoch and the batch.
        (
            "Epoch: [2][  400/5005]\tTime  0.315 ( 0.372)\tData  0.002 ( 0.073)\t"
            "Loss 6.9802e+00 (7.0827e+00)\tAcc@1   0.00 (  0.08)",
            2 * 5005 + 400,
            None,
            6.9802,
        ),
        # CNTK 1, epoch 1 of 1: minibatches 501 to 1000 done; the MSVC runtime's NaN.
        (
            " Epoch[ 1 of 1]-Minibatch[ 501-1000]: SamplesSeen = 500; TrainLossPerSample =  "
            "1.#QNAN000; EvalErr[0]PerSample = 0.48000000; TotalTime = 2.3504s",
            1000,
            None,
            "nan",
        ),
        # A later CNTK epoch of unknown size: its loss, no step.
        (
            " Epoch[ 3 of 9]-Minibatch[  11-  20, 0.004%]: SamplesSeen = 500; "
            "TrainLossPerSample =  0.50000000; EvalErr[0]PerSample = 0.1",
            None,
            None,
            0.5,
        ),
    ],
)
def test_lua_rnn_progressmeter_and_cntk_counters(
    line: str, step: int | None, total: int | None, loss: float | str
) -> None:
    """Round 22 of the held-out logs (docs/logs.md)."""
    found = parse_line(line, NOW)
    assert found is not None
    report = found.report
    assert (report.step, report.max_steps) == (step, total)
    assert report.loss is not None
    if loss == "nan":
        assert math.isnan(report.loss)
    else:
        assert report.loss == loss


def test_openrlhfs_short_status_pg_is_the_loss() -> None:
    """OpenRLHF's PPO bar before it printed ``policy_loss``: ``pg`` is the actor's loss."""
    report = _read_lines(
        [
            "Train epoch [1/1]:  21%|██        | 841/4096 [1:03:43<4:06:33,  4.54s/it, "
            "pg=-0.156, rm=0.25, ret=0.25, glen=770, tlen=862, kl=0, act_lr=2.03e-8]"
        ]
    )
    assert (report.step, report.max_steps, report.loss) == (841, 4096, -0.156)


@pytest.mark.parametrize(
    ("text", "value"),
    [("1.#QNAN000", "nan"), ("-1.#IND", "nan"), ("1.#INF00", math.inf), ("-1.#INF", -math.inf)],
)
def test_the_msvc_runtimes_nan_and_infinity_are_numbers(text: str, value: float | str) -> None:
    got = number(text)
    assert got is not None
    assert math.isnan(got) if value == "nan" else got == value


def test_finished_epoch_is_no_finish_and_a_sample_counter_no_step() -> None:
    """CNTK 2's ``Finished Epoch[936 of 300]`` ends an epoch (here past its own count: the
    issue's bug), Katib's PyTorch MNIST counts samples: neither says a step or a finish."""
    cntk = parse_line(
        "Finished Epoch[936 of 300]: loss = 0.000055 * 512, metric = 0.00% * 512 0.662s "
        "(773.4 samples/s);",
        NOW,
    )
    assert cntk is not None and (cntk.report.step, cntk.report.loss) == (None, 0.000055)
    assert not cntk.report.final
    katib = parse_line("Train Epoch: 1 [12160/60000 (20%)]    loss=0.8218", NOW)
    assert katib is not None and (katib.report.step, katib.report.loss) == (None, 0.8218)


def _terminal_epochs(train_elapsed: list[str]) -> list[str]:
    """A bare training bar and a bare validation bar per epoch, as a terminal's copy keeps
    them: each bar's last frame only (FoodSeg_mask2former issue #3's shape)."""
    lines = []
    for elapsed in train_elapsed:
        lines.append(f"100%|##########| 2492/2492 [{elapsed}<00:00,  1.99it/s]")
        lines.append("Epoch 6 complete. Avg Training Loss: 16.8108")
        lines.append("100%|##########| 1068/1068 [03:35<00:00,  4.95it/s]")
    return lines


def test_a_bar_seen_only_at_its_end_pass_after_pass_gives_no_step() -> None:
    """Each epoch's bare bar seen only at its end: how many passes came before the copy
    began is unknown, so no step and no total (read as step 2492 before round 23); the
    averaged training loss is the loss."""
    report = _read_lines(_terminal_epochs(["20:50", "20:50", "20:49"]))
    assert (report.step, report.max_steps, report.loss) == (None, None, 16.8108)


def test_a_bar_redrawn_with_a_later_clock_is_the_same_pass() -> None:
    """A bar redrawn at its end with a later clock after another bar ran (Trainer's after
    its evaluation) is the same pass: its count stays the step, and a bar seen from its
    start is not a terminal's copy."""
    redrawn = _read_lines(
        [
            "100%|##########| 30/30 [00:20<00:00,  1.49it/s]",
            "100%|##########| 4/4 [00:01<00:00,  3.90it/s]",
            "100%|##########| 30/30 [00:22<00:00,  1.36it/s]",
        ]
    )
    assert redrawn.step == 30
    seen_from_start = _read_lines(
        [
            "  0%|          | 0/30 [00:00<?, ?it/s]",
            "100%|##########| 30/30 [00:20<00:00,  1.49it/s]",
            "100%|##########| 4/4 [00:01<00:00,  3.90it/s]",
            "100%|##########| 30/30 [00:20<00:00,  1.49it/s]",
        ]
    )
    assert seen_from_start.step == 30


@pytest.mark.parametrize(
    ("line", "step", "loss"),
    [
        # IRNet (https://github.com/jiwoon-ahn/irn/issues/13, step/train_irn.py): the index of
        # the step just taken (global_step - 1), then four loss parts: no loss.
        (
            "step: 3300/ 3305 loss:0.3555 0.3044 2.7294 0.1937 imps:28.4 lr: 0.0003 "
            "etc:Tue Sep 17 15:31:19 2019",
            3301,
            None,
        ),
        # Its train_cam.py: the same counter and one loss, which is the loss.
        (
            "step:  100/ 6610 loss:0.2203 imps:25.0 lr: 0.0995 etc:Tue Sep 17 13:02:11 2019",
            101,
            0.2203,
        ),
        # The same counter without IRNet's companions is read as printed.
        ("step: 3300/ 3305 loss:0.3555 lr: 0.0003", 3300, 0.3555),
    ],
)
def test_a_key_over_a_list_of_numbers_and_irnets_index_of_the_step_taken(
    line: str, step: int, loss: float | None
) -> None:
    found = parse_line(line, NOW)
    assert found is not None
    assert (found.report.step, found.report.loss) == (step, loss)


@pytest.mark.parametrize(
    ("key", "field"),
    [
        ("Avg Training Loss", "loss"),
        ("mean val loss", "eval_loss"),
        ("average_validation_loss", "eval_loss"),
        ("running loss", "loss"),
        ("avg step time", None),  # only the losses: no step from an average
        ("mean lr", None),
        ("best val loss", None),
    ],
)
def test_an_averaged_loss_is_the_loss_and_nothing_else_is_averaged_in(
    key: str, field: str | None
) -> None:
    found = field_of(key)
    assert (found[0] if found else None) == field


def test_tf_cnn_benchmarks_rows_and_its_banners_length() -> None:
    """tf_cnn_benchmarks' rows (``'%i\\t%s\\t%.*f' % (step + 1, speed, loss)``, accuracies in
    further columns) and its banner's whole ``Num batches: N`` line; a looser "Num batches"
    is no total."""
    row = parse_line("10\timages/sec: 118.2 +/- 5.0 (jitter = 10.6)\t1.652", NOW)
    assert row is not None and row.parser == "tf_cnn_benchmarks"
    assert (row.report.step, row.report.loss) == (10, 1.652)
    assert dict(row.report.metrics)["images_per_second"] == 118.2
    accuracies = parse_line("100\timages/sec: 6.0 +/- 0.0 (jitter = 0.3)\t2.5\t0.250\t0.500", NOW)
    assert accuracies is not None and (accuracies.report.step, accuracies.report.loss) == (100, 2.5)
    nan = parse_line("20\timages/sec: 940.1 +/- 2.5 (jitter = 3.1)\tnan", NOW)
    assert nan is not None and nan.report.loss is not None
    assert math.isnan(nan.report.loss)
    assert parse_line("20\timages/sec: 940.1\t2.5", NOW) is None  # the scaled form: unread
    banner = parse_line("Num batches: 100", NOW)
    assert banner is not None and banner.report.max_steps == 100
    looser = parse_line("Epoch 1 Num batches: 469", NOW)
    assert looser is None or looser.report.max_steps != 469


def test_detectrons_labelled_json_stats_and_a_loops_num_epoch() -> None:
    """Round 25: Detectron's ``json_stats: {...}`` (numbers as strings, ``iter`` the step
    where no step key is there; a label naming an evaluation is not read as training), and
    a loop's ``num_epoch: 44, loss: 0.3741`` (the epoch just done: its loss, no step)."""
    stats = parse_line(
        'json_stats: {"accuracy_cls": "0.633333", "eta": "6:43:04", "iter": 29240, '
        '"loss": "5.661786", "loss_bbox": "0.011890", "lr": "0.002500", "mb_qsize": 64}',
        NOW,
    )
    assert stats is not None and stats.parser == "jsonl"
    assert (stats.report.step, stats.report.loss, stats.report.learning_rate) == (
        29240,
        5.661786,
        0.0025,
    )
    stepped = parse_line('{"iter": 5, "step": 7, "loss": 1.0}', NOW)
    assert stepped is not None and stepped.report.step == 7  # a step key wins
    evaluation = parse_line('eval_stats: {"iter": 100, "loss": "0.5"}', NOW)
    assert evaluation is None or evaluation.report.loss is None
    epoch = parse_line("num_epoch: 44, loss: 0.3741221", NOW)
    assert epoch is not None and (epoch.report.step, epoch.report.loss) == (None, 0.3741221)
    config = parse_line("num_epoch: 100, lr: 0.1, batch_size: 32", NOW)
    assert config is None or (config.report.step, config.report.loss) == (None, None)


def test_a_tensor_repr_is_its_number_and_an_eval_loss_alone_is_an_evaluation() -> None:
    """llama-recipes and PEFT's examples print tensors' reprs; a line with no counter whose
    only loss is an eval loss is an evaluation's result (round 26)."""
    pairs = find_pairs("eval_ppl=tensor(975.5518, device='cuda:2') eval_epoch_loss=tensor(6.8830)")
    assert [(p.key, p.value) for p in pairs] == [("eval_ppl", 975.5518), ("eval_epoch_loss", 6.883)]
    evaluation = parse_line(
        " eval_ppl=tensor(975.5518, device='cuda:0') eval_epoch_loss=tensor(6.8830, "
        "device='cuda:0')",
        NOW,
    )
    assert evaluation is not None
    assert (evaluation.report.eval_loss, evaluation.report.loss) == (6.883, None)
    summary = parse_line("Epoch 1: train_perplexity=1.5734, train_epoch_loss=0.4533", NOW)
    assert summary is not None and (summary.report.step, summary.report.loss) == (None, 0.4533)


def test_char_rnn_tensorflows_integer_epoch_is_not_read_as_epochs_done() -> None:
    found = parse_line("290/446 (epoch 0), train_loss = 2.098, time/batch = 0.163", NOW)
    assert found is not None
    report = found.report
    assert (report.step, report.max_steps, report.loss, report.epoch) == (290, 446, 2.098, None)


@pytest.mark.parametrize(
    ("header", "row", "loss"),
    [
        # YOLOv7 (and YOLOv5 before 6): the total column is the loss.
        (
            "     Epoch   gpu_mem       box       obj       cls     total    labels  img_size",
            "   33/4999     70.1G   0.05069   0.01035   0.03706    0.0981        14      1856",
            0.0981,
        ),
        # Ultralytics 8: components only, no loss.
        (
            "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size",
            "    70/1000      6.73G      1.081     0.4706      1.084         10        640",
            None,
        ),
        # A row that does not line up with its header says nothing.
        (
            "     Epoch   gpu_mem       box       obj       cls     total    labels  img_size",
            "   33/4999     70.1G   0.05069   0.01035    0.0981        14      1856",
            None,
        ),
    ],
)
def test_a_training_tables_total_column_is_the_loss(header: str, row: str, loss: float) -> None:
    report = _read_lines([header, row + ": 100%|##########| 295/295 [12:39<00:00,  2.57s/it]"])
    assert report.loss == loss


@pytest.mark.parametrize(
    "line",
    [
        # Megatron's evaluate_and_print_results: "{prefix} loss at {iteration} | {key} value:
        # {:.6E} | {key} PPL: {:.6E} |", during and after training, under srun's label too.
        " validation loss at iteration 1000 | lm loss value: 2.724416E+00 | lm loss PPL: "
        "1.524897E+01 | ",
        " validation loss at iteration 1000 on validation set | lm loss value: 2.724416E+00 | ",
        "0: validation loss at iteration 1000 [hplt] | lm loss value: 2.724416E+00 |",
        " validation loss at the end of training for val data | lm loss value: 2.724416E+00 | ",
        # MaxText's and torchtitan's evaluations name themselves before their values.
        "eval metrics after step: 99, loss=2.724416, total_weights=1024.0",
        "[rank0]:[titan] 2025-01-01 10:00:00,000 - root - INFO - validate step: 100  "
        "loss:  2.724416",
    ],
)
def test_an_evaluations_loss_is_the_eval_loss_never_the_training_loss(line: str) -> None:
    found = parse_line(line, NOW)
    assert found is not None
    assert (found.report.loss, found.report.eval_loss) == (None, 2.724416)


@pytest.mark.parametrize(
    ("message", "parser", "step"),
    [
        ("[rank0]:{'loss': 1.2345, 'learning_rate': 2e-05, 'epoch': 0.5}", "transformers", None),
        (
            "[1,0]<stdout>:10\timages/sec: 15.7 +/- 0.8 (jitter = 0.1)\t1.652",
            "tf_cnn_benchmarks",
            10,
        ),
        ("0: 650 | loss 5.3185 | lr 3.0e-04", "progress", 650),
        (
            "(RayTrainWorker pid=123) {'loss': 1.0, 'epoch': 0.1} [repeated 3x across cluster]",
            "transformers",
            None,
        ),
        # Darknet's own "957: " is no launcher's label: the line is read with it.
        (" 957: 0.660188, 0.689227 avg loss, 0.000839 rate, 3.3 seconds, 6 images", "darknet", 957),
        (
            "0:  957: 0.660188, 0.689227 avg loss, 0.000839 rate, 3.3 seconds, 6 images",
            "darknet",
            957,
        ),
    ],
)
def test_a_launchers_prefix_is_no_part_of_the_line(message: str, parser: str, step: int) -> None:
    found = parse_message(message, NOW)
    assert [(r.parser, r.report.step) for r in found] == [(parser, step)]


def test_a_pods_name_before_a_line_is_never_read() -> None:
    """A pod's or a host's name before a line (``argo logs``, pdsh) is taken off, and where
    the rest says nothing, its words are not read instead: an Argo step named ``train-step``
    is no step (only a number, Darknet's ``957: ``, may be the tool's own)."""
    assert parse_message("my-wf-train-step-1234567890: [1] Train-accuracy=0.70", NOW) == []
    assert parse_message("train-step-x7k2p: starting", NOW) == []
    found = parse_message("train-job-x7k2p: step 12 | loss 0.5", NOW)
    assert [(r.report.step, r.report.loss) for r in found] == [(12, 0.5)]


def test_fairseqs_json_after_its_loggers_prefix() -> None:
    """fairseq since 0.10 logs its JSON through its logger: ``train_inner`` is training
    (``num_updates`` the step), ``valid`` an evaluation (its eval loss only), ``train`` the
    epoch's summary (``train_num_updates`` the step)."""
    inner = parse_line(
        '2020-10-28 17:41:27 | INFO | train_inner | {"epoch": 1, "update": 0.005, "loss": '
        '"15.845", "ppl": "58856.6", "num_updates": "100", "lr": "1.25e-05"}',
        NOW,
    )
    assert inner is not None and (inner.report.step, inner.report.loss) == (100, 15.845)
    valid = parse_line(
        '2020-10-28 17:45:00 | INFO | valid | {"epoch": 1, "valid_loss": "9.5", "valid_ppl": '
        '"724.1", "valid_num_updates": "200"}',
        NOW,
    )
    assert valid is not None
    assert (valid.report.step, valid.report.loss, valid.report.eval_loss) == (None, None, 9.5)
    summary = parse_line(
        '2020-10-28 17:45:00 | INFO | train | {"epoch": 1, "train_loss": "10.2", '
        '"train_num_updates": "200"}',
        NOW,
    )
    assert summary is not None and (summary.report.step, summary.report.loss) == (200, 10.2)


def test_a_text_bar_of_the_share_done_gives_its_values_and_no_step() -> None:
    """MonoCon's engine (round 27): ``| Progress [##   ][11.64%] | LR ... | Loss 9.7263 (..)``."""
    found = parse_line(
        "| Progress [##                  ][11.64%] | LR 0.000377 | Loss   9.7263 (  6.9621) |", NOW
    )
    assert found is not None
    assert (found.report.step, found.report.loss, found.report.learning_rate) == (
        None,
        9.7263,
        0.000377,
    )


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(SCANNED_HINTS),
            st.sampled_from(SCAN_PARTS),
            st.sampled_from([h[:-1] for h in (*SCANNED_HINTS, *SCAN_PARTS) if len(h) > 1]),
            st.text(max_size=12),
        ),
        max_size=6,
    )
)
def test_the_quick_scans_trie_finds_exactly_its_parts_and_every_hint(parts: list[str]) -> None:
    """The scan's one regular expression (a trie of the hints' parts from a rarer character
    on) says what ``p in line`` for every part says, on text and on its UTF-8 bytes; a part
    cut short is none. Every line with a format's hint is found: a superset."""
    line = "".join(parts)
    found = any(p in line for p in SCAN_PARTS)
    assert (ANY_HINT.search(line) is not None) == found
    assert (HINT_BYTES.search(line.encode()) is not None) == found
    if any(h in line for h in SCANNED_HINTS):
        assert found


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(SCAN_PARTS),
            st.sampled_from([h[:-1] for h in SCAN_PARTS if len(h) > 1]),
            st.text(alphabet="0123456789", min_size=1, max_size=4),
            st.text(max_size=12),
        ),
        max_size=6,
    ),
    st.lists(st.text(alphabet="0123456789", max_size=3), min_size=1, max_size=3),
)
def test_the_template_scan_finds_every_line_the_pattern_finds(
    parts: list[str], renumbered: list[str]
) -> None:
    """The scan that remembers a template (the line without its digits) never passes over a
    line :data:`HINT_BYTES` finds, whichever line of that template it saw first: the same
    words with other numbers ("v1alpha1" and "v2alpha3") may differ only in being found."""
    line = "".join(parts).encode()
    scan = QuickScan()
    for digits in renumbered:  # lines of the same template seen before this one
        scan.hinted(re.sub(rb"[0-9]+", digits.encode() or b"7", line))
    if HINT_BYTES.search(line) is not None:
        assert scan.hinted(line)
        assert QuickScan().hinted(b"2026-11-29T18:20:54Z stdout F " + line, 30)


def test_the_template_scan_remembers_a_bounded_number_of_templates() -> None:
    scan = QuickScan()
    assert not scan.hinted(b"INFO worker 3 data shard 123 loaded in 0.123s")
    assert not scan.hinted(b"INFO worker 5 data shard 99 loaded in 1.5s")  # the same template
    assert scan.hinted(b"INFO worker 3 data shard 123 loaded, loss 0.5")
    assert scan.hinted(b"[trainer.kubeflow.org/v1alpha1/trainjob/trainerStatus] {}")
    assert scan.hinted(b"[trainer.kubeflow.org/v9alpha7/trainjob/trainerStatus] {}")  # more: fine
    for i in range(TEMPLATES_KEPT + 10):
        scan.hinted(b"x" * (i % 600) + b"-" + str(i).encode())
    assert len(scan._seen) <= TEMPLATES_KEPT
    assert scan.hinted(b"y" * 600 + b" loss 1")  # too long to keep, still scanned
    assert not scan.hinted(b"y" * 600 + b" ok 1")


def test_each_hint_is_scanned_for_as_a_part_of_it() -> None:
    assert all(any(p in h for p in SCAN_PARTS) for h in SCANNED_HINTS)
    assert scan_part(" rate, ") == "rate, "
    assert scan_part("heckpoint") == "kpoint"
    assert scan_part("oss") == "oss"  # no rarer character with three after it
    assert scan_part("Batch ") == "Batch "  # a rare first character: whole


def test_a_cri_lines_head_is_read_from_its_bytes_as_parse_cri_reads_it() -> None:
    from exporter.logs.cri import CriJoiner, cri_head

    line = b"2026-11-29T18:20:54.123456789Z stderr P \r 10%|#| 1/10 [00:01<00:09,  1.0it/s]"
    start, stream, partial = cri_head(line)
    assert (line[start:].startswith(b"\r 10%"), stream, partial) == (True, "stderr", True)
    assert cri_head(b"2026-11-29T18:20:54.1Z stdout F x\n") == (32, "stdout", False)
    for other in (
        b"2026-11-29 18:20:54 step 10 loss 2.5",  # a plain line
        b"2026-11-29T18:20:54.1Z stdout F:x message",  # a tag with attributes: parse_cri's
        b"2026-11-29T18:20:54.1Z stdin F message",
        b"x026-11-29T18:20:54.1Z stdout F message",
        b"2026-11-29T18:20:54.1Z stdout F",
    ):
        assert cri_head(other) == (0, "", False)
    # Read either way, a line gives the same message.
    lines = [
        b"2026-11-29T18:20:54.1Z stdout P step 1 ",
        "2026-11-29T18:20:54.2Z stdout F loss 2.5 \u2501\n".encode(),
        b"2026-11-29T18:20:54.3Z stderr F \n",
        b"plain line\n",
        b"2026-11-29T18:20:54.1Z stdout F:x tagged\n",
    ]
    by_text, by_bytes = CriJoiner(), CriJoiner()
    for raw in lines:
        assert by_bytes.push_raw(raw, 0.0) == by_text.push(raw.decode(), 0.0)


def test_a_sentences_word_before_a_number_is_no_key() -> None:
    """ignite's evaluator (round 28): "Engine run resuming from iteration 0, epoch 12 until 13
    epochs" names no metric "until"; a counter alone says nothing (it was read as step 0)."""
    found = parse_line(
        "[2023-04-08 05:21:38.037][ INFO](ignite.engine.engine.SupervisedEvaluator) - Engine "
        "run resuming from iteration 0, epoch 12 until 13 epochs",
        NOW,
    )
    assert found is None or found.report.step is None
    assert [p.key for p in find_pairs("from 3 to 5 loss 0.25")] == ["loss"]


def test_pytrackings_ltr_trainer_counts_within_a_one_based_epoch() -> None:
    """LightFC, OSTrack, STARK (round 30): ``[train: 2, 300 / 937]`` is step 937 + 300;
    ``Loss/total`` is the loss; ``[val: ...]`` is its evaluation, never the step."""
    found = parse_line(
        "[train: 2, 300 / 937] FPS: 1.0 (1.1)  ,  DataTime: 0.111 (0.010)  ,  Loss/total: "
        "39.87962  ,  Loss/giou: 0.99995",
        NOW,
    )
    assert found is not None and (found.report.step, found.report.loss) == (937 + 300, 39.87962)
    val = parse_line("[val: 2, 50 / 50] FPS: 2.0 (2.0)  ,  Loss/total: 12.5", NOW)
    assert val is None or (val.report.step, val.report.loss) == (None, None)


@pytest.mark.parametrize(
    "message",
    [
        "epoch：1 step：100 loss：0.5234",
        "训练 step：100，损失 loss：0.5234，学习率 lr：1e-4",
        "Epoch：1 ｜ Step：100 ｜ loss＝0.5234",
    ],
)
def test_full_width_punctuation_reads_as_its_ascii(message: str) -> None:
    """Scripts written in Chinese print full-width colons, commas and equals signs."""
    found = parse_message(message, NOW)
    assert [(r.report.step, r.report.loss) for r in found] == [(100, 0.5234)]


@pytest.mark.parametrize(
    ("message", "step", "loss"),
    [
        ("\x1b[1;32mstep 100 | loss 0.5234\x1b[0m", 100, 0.5234),  # the whole line coloured
        ("step \x1b[36m100\x1b[0m | loss \x1b[36m0.5234\x1b[0m", 100, 0.5234),  # its numbers
        ("\x1b[33mstep\x1b[0m 100 | \x1b[33mloss\x1b[0m: 0.5234", 100, 0.5234),  # its keys
        ("step\u00a0100 |\u00a0loss\u00a00.5234", 100, 0.5234),  # no-break spaces
        # Trainer's dict copied from a page with no-break spaces: no hint of it was left to
        # find in the line's bytes
        (
            "{'loss':\u00a01.2607,\u00a0'learning_rate':\u00a06.3e-06,\u00a0'epoch':\u00a00.03}",
            None,
            1.2607,
        ),
    ],
)
def test_colours_and_no_break_spaces_read_as_the_plain_line(
    message: str, step: int | None, loss: float, tmp_path: Path
) -> None:
    from exporter.logs.inspect import read_log

    log = tmp_path / "painted.log"
    log.write_text(message + "\n", encoding="utf-8")
    report = read_log(str(log), 1e9)[0].report()
    assert (report.step, report.loss) == (step, loss)


def test_a_coloured_keras_header_is_read_from_the_lines_start(tmp_path: Path) -> None:
    """A header read only at a line's start, coloured: the colour is no part of the line."""
    log = tmp_path / "keras.log"
    log.write_text("\x1b[1mEpoch 2/3\x1b[0m\n1079/1079 - 10s - loss: \x1b[32m0.1024\x1b[0m\n")
    from exporter.logs.inspect import read_log

    report = read_log(str(log), 1e9)[0].report()
    assert (report.step, report.max_steps, report.loss) == (2158, 3237, 0.1024)


@pytest.mark.parametrize(
    ("message", "parser", "step"),
    [
        # NumPy 2's scalar repr in a dict of metrics, JAX's Array in an f-string, PyTorch's
        # tensor in a dict: each its number, for every format.
        ("{'loss': np.float64(0.5234), 'learning_rate': np.float32(1e-05)}", "transformers", None),
        ("step 100 | loss: Array(0.5234, dtype=float32) | lr 1e-4", "progress", 100),
        ("{'loss': tensor(0.5234, device='cuda:0'), 'step': 100}", "transformers", 100),
    ],
)
def test_a_scalars_repr_is_its_number(message: str, parser: str, step: int | None) -> None:
    found = parse_message(message, NOW)
    assert [(r.parser, r.report.step, r.report.loss) for r in found] == [(parser, step, 0.5234)]


def test_real_numpy_and_torch_scalars_printed_in_a_dict_are_read() -> None:
    """The reprs as the installed NumPy (2.x) and PyTorch print them, not as written here."""
    import numpy as np
    import torch

    metrics = {"loss": np.float64(0.5234), "learning_rate": np.float32(1e-05)}
    found = parse_message(repr(metrics), NOW)
    assert [(r.report.loss, r.report.learning_rate) for r in found] == [(0.5234, 1e-05)]
    line = f"step 100 | loss: {torch.tensor(0.5234)!r} | grad_norm: {torch.tensor(1.5)!r}"
    found = parse_message(line, NOW)
    assert [(r.report.step, r.report.loss, r.report.grad_norm) for r in found] == [
        (100, 0.5234, 1.5)
    ]


@pytest.mark.parametrize(
    "line",
    [
        # RichHandler's place in the code at the line's end, loguru's before the message.
        "[05/01/24 10:00:00] INFO     step 100 | loss 0.5234 | lr 1e-4                 train.py:42",
        "2024-05-01 10:00:00.123 | INFO     | __main__:train:42 - step 100 loss 0.5234",
    ],
)
def test_a_loggers_place_in_the_code_is_no_metric(line: str) -> None:
    found = parse_line(line, NOW)
    assert found is not None
    assert (found.report.step, found.report.loss, found.report.metrics) == (100, 0.5234, ())
    # A logger's prefix before a pair is no place in the code (TensorFlow's).
    tf = parse_line("INFO:tensorflow:loss = 4.264659, step = 100 (124.394 sec)", NOW)
    assert tf is not None and (tf.report.step, tf.report.loss) == (100, 4.264659)


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        # Megatron's "number of nan iterations": no metric "number of" (its value "nan").
        (
            "lm loss: 2.5 | number of skipped iterations:   0 | number of nan iterations:   0 |",
            ["lm loss", "number of skipped iterations", "iterations"],
        ),
        # time.ctime()'s date, a logger's module and line, dotted or in parentheses.
        ("loss:0.35 imps:28.4 etc:Tue Sep 17 15:31:19 2019", ["loss", "imps"]),
        ("2024-05-01 olmo.train:1002 INFO loss 2.5", ["loss"]),
        ("[espnet2/train/trainer.py] (trainer:464) INFO: loss=2.5", ["loss"]),
    ],
)
def test_what_is_no_metric_is_not_kept_as_one(text: str, keys: list[str]) -> None:
    pairs = find_pairs(text)
    assert [p.key for p in pairs] == keys
    fields = to_fields(pairs)
    assert fields.values["loss"] in (2.5, 0.35)
    assert set(fields.metrics) <= {"number_of_skipped_iterations", "imps"}


@pytest.mark.parametrize(
    "line",
    [
        "0s - loss: 0.0130 - acc: 0.0042",  # Keras 1, verbose=2
        " - 5s - loss: 0.0130 - acc: 0.9042 - val_loss: 0.0200",  # Keras 2.0 to 2.2
    ],
)
def test_keras_verbose_2_without_a_count_gives_the_epochs_values_and_no_step(line: str) -> None:
    """Before Keras 2.3, ``verbose=2`` printed the epoch's time and values, no batch count:
    the loss is read, the step stays unknown (the epoch's size is nowhere)."""
    report = _read_lines(["Epoch 3/1000", line])
    assert (report.step, report.loss, report.max_epochs) == (None, 0.013, 1000.0)
    # The same shape is no Keras line without its elapsed time first.
    assert _read_lines(["Epoch 3/1000", "loss - loss: 0.5"]).loss is None


def test_lightnings_own_running_loss_gives_way_to_the_models_logged_loss() -> None:
    """Lightning 1.x put a rounded running mean of 20 losses (``loss=3.1``) in every bar; NeMo
    logs the step's ``reduced_train_loss`` beside it (and an empty ``v_num=``)."""
    frame = (
        "Epoch 0:   1%|          | 795/77225 [9:07:58<878:01:48, 41.36s/it, loss=3.1, v_num=, "
        "reduced_train_loss=3.090, global_step=794.0, consumed_samples=1.63e+6]"
    )
    [found] = parse_message(frame, NOW)
    assert (found.parser, found.report.step, found.report.loss) == ("lightning", 794, 3.09)
    # Alone, Lightning's loss is the loss.
    alone = "Epoch 0:  28%|██▊       | 5/18 [00:20<00:53,  4.14s/it, loss=9.847, v_num=193315]"
    assert [r.report.loss for r in parse_message(alone, NOW)] == [9.847]


def test_a_throughputs_share_of_one_gpu_after_it_is_the_per_gpu_rate() -> None:
    """NeMo Automodel prints all ranks' tokens per second, then one GPU's in parentheses;
    torchtitan's bare ``tps`` stays one device's."""
    line = "step 15 | epoch 0 | loss 0.7918 | tps 20316.81(2539.60/gpu) | num_label_tokens 42959"
    [found] = parse_message(line, NOW)
    metrics = dict(found.report.metrics)
    assert metrics["tokens_per_second"] == 20316.81
    assert metrics["tokens_per_second_per_gpu"] == 2539.6
    [titan] = parse_message("step: 10  loss:  9.8  memory: 40.3GiB(42.4%)  tps: 5,862", NOW)
    assert dict(titan.report.metrics)["tokens_per_second_per_gpu"] == 5862.0
    assert "tokens_per_second" not in dict(titan.report.metrics)


def test_a_loss_on_the_line_after_a_counted_line_without_one_is_that_steps() -> None:
    """openseg.pytorch's trainer logs one message over two lines: its counter on the first,
    the loss on the second. Such a line counts only right after a counted line that printed
    no loss; anywhere else nothing says which step its loss is."""
    counted = (
        "2020-10-30 23:24:18,010 INFO    [trainer.py, 219] Train Epoch: 0\tTrain Iteration: 10"
        "\tTime 11.147s / 10iters, (1.115)\tData load 0.203s / 10iters, (0.020318)"
    )
    values = "Learning rate = [0.00999797497721687, 0.00999797497721687]\tLoss = 3.54437590"
    report = _read_lines([counted, values])
    assert (report.step, report.loss) == (10, 3.5443759)
    # Alone, or after a line that had its own loss: no loss from it.
    assert _read_lines([values]).loss is None
    after_loss = _read_lines(["step 10 | loss 2.5 | lr 1e-4", values])
    assert (after_loss.step, after_loss.loss) == (10, 2.5)
    # Not the line after the next one either.
    assert _read_lines([counted, "step 11 | lr 1e-4 | loss 2.0", values]).loss == 2.0


def test_a_line_of_values_without_a_counter_goes_to_users_formats_first() -> None:
    from exporter.logs.formats.custom import compile_formats
    from exporter.logs.lines import Extra

    line = "Learning rate = [0.01, 0.01]\tLoss = 3.5443 (ave = 3.6228)"
    assert [(r.parser, r.part) for r in parse_message(line, NOW)] == [("progress", "continued")]
    [mine] = compile_formats({"mine": {"regex": r"\tLoss = (?P<loss>[\d.]+)"}}, frozenset())
    assert [r.parser for r in parse_message(line, NOW, Extra(after=(mine,)))] == ["mine"]


_GBRT = [
    "      Iter       Train Loss   Remaining Time ",
    "         1           1.2980            7.89m",
    "         2           1.2814            7.82m",
]


def test_a_table_of_bare_numbers_is_read_under_its_header() -> None:
    """scikit-learn's gradient boosting (verbose=1): the header names the columns, each row
    of bare numbers is the boosting round, its loss and a time (no metric)."""
    report = _read_lines(_GBRT)
    assert (report.step, report.loss, report.metrics) == (2, 1.2814, ())
    # spaCy: the epoch, then the steps ("#"); a loss per component is no training loss.
    spacy = _read_lines(
        [
            "E    #       LOSS TOK2VEC  LOSS NER  ENTS_F  ENTS_P  ENTS_R  SCORE ",
            "---  ------  ------------  --------  ------  ------  ------  ------",
            "  0     200         35.70   2163.45   83.16   83.79   82.53    0.83",
        ]
    )
    assert (spacy.step, spacy.loss, dict(spacy.metrics)["loss_ner"]) == (200, None, 2163.45)
    # skorch and fastai: an epoch's index is no step; the losses are read.
    fastai = _read_lines(
        ["epoch\ttrain_loss\tvalid_loss\taccuracy\ttime", "3\t0.5\t0.6\t0.9\t00:03"]
    )
    assert (fastai.step, fastai.loss, fastai.eval_loss) == (None, 0.5, 0.6)


@pytest.mark.parametrize(
    ("lines", "step", "loss"),
    [
        (_GBRT[1:], None, None),  # rows with no header: numbers that name nothing
        ([_GBRT[0], "         1           1.2980"], None, None),  # not the header's shape
        ([*_GBRT, "         1           0.5            0.1s"], 2, 1.2814),  # counting back
        (["  Iter    UAS    POS", "     1   64.2   90.5"], None, None),  # no loss: no table
    ],
)
def test_numbers_a_header_does_not_name_are_not_read(
    lines: list[str], step: int | None, loss: float | None
) -> None:
    report = _read_lines(lines)
    assert (report.step, report.loss) == (step, loss)


def test_table_rows_count_only_where_read() -> None:
    """A line of bare numbers is offered as a row wherever it is, but only a row read under
    its header counts as a match (training_exporter_log_matches_total{parser="table"})."""
    from exporter.logs.accumulate import LogAccumulator

    acc = LogAccumulator()
    taken = [acc.feed(r, NOW) for line in [_GBRT[1], *_GBRT] for r in parse_message(line, NOW)]
    assert taken == [False, True, True, True]
    assert acc.counts["table"] == 3


def test_the_quick_scan_reads_rows_once_a_header_was_read(tmp_path: Path) -> None:
    """inspect skips lines with no hint unread; after a table's header, lines of bare
    numbers are read too, as CRI lines as well."""
    from exporter.logs.inspect import read_log

    log = tmp_path / "0.log"
    stamp = "2026-12-06T02:00:00.000000000Z stdout F "
    log.write_text("".join(f"{stamp}{line}\n" for line in ["1 2 3", *_GBRT]), encoding="utf-8")
    acc, _, skipped = read_log(str(log), NOW)
    report = acc.report()
    assert (report.step, report.loss, skipped) == (2, 1.2814, 1)


@pytest.mark.parametrize(
    ("frame", "step"),
    [
        # torchtune's recipes: "{epoch}|{global_step}|Loss: {loss}", epoch 1-based.
        ("1|31|Loss: 1.1992870569229126:  31%|███       | 31/101 [08:13<20:26, 17.52s/it]", 31),
        ("2|132|Loss: 1.1992870569229126:  31%|███       | 31/101 [08:13<20:26, 17.52s/it]", 132),
        # Its early recipes: the batch within the epoch ("{epoch}|{idx + 1}|Loss: ...").
        ("2|31|Loss: 1.1992870569229126:  31%|███       | 31/101 [08:13<20:26, 17.52s/it]", 132),
    ],
)
def test_torchtunes_bar_gives_its_step_and_loss_and_counts_one_epoch(frame: str, step: int) -> None:
    """The bar counts one epoch's steps: its total is no run's (the epochs are not printed)."""
    report = _read_lines([f"[trainer0|0]:{frame}"])
    assert (report.step, report.loss, report.max_steps) == (step, 1.1992870569229126, None)


def test_kohya_ss_banner_gives_the_runs_total() -> None:
    """sd-scripts and musubi-tuner print their banner in English and Japanese."""
    line = "[07:50:25] [STDOUT] total optimization steps / 学習ステップ数: 96"
    assert [r.report.max_steps for r in parse_message(line, NOW)] == [96]


def _lightning_frame(n: int, total: int) -> str:
    return f"Epoch 0:  {100 * n // total:2d}%|##| {n}/{total} [01:38<05:27, 32.75s/it, loss=4.73, v_num=7]"


def test_lightning_1_counts_validation_on_in_its_main_bar_from_a_bar_drawn_at_zero() -> None:
    """Before 2.0 the main bar is sized for the training and validation batches and counts
    both; a terminal's copy may keep the validation bar's first frame only."""
    lines = [
        _lightning_frame(3, 13),
        "Validating:   0%|          | 0/10 [00:00<?, ?it/s]",
        *(_lightning_frame(n, 13) for n in range(5, 12)),
    ]
    assert _read_lines(lines).step == 3


def test_lightning_2s_main_bar_is_not_held_by_a_validation_bar_left_at_zero() -> None:
    """From 2.0 the main bar counts training batches only, all done when validation starts
    at the epoch's end: a validation bar whose last frame is its first holds nothing back."""
    lines = [
        _lightning_frame(100, 100),
        "Validation DataLoader 0:   0%|          | 0/10 [00:00<?, ?it/s]",
        "Epoch 1:   5%|##| 5/100 [00:05<01:35,  1.00it/s, loss=4.1, v_num=7]",
    ]
    assert _read_lines(lines).step == 105


def test_a_data_sets_name_run_into_a_loss_is_an_evaluations() -> None:
    """Angel's "epoch=3 validationData loss=3.05": the validation data's loss."""
    line = "Task[175]: epoch=3 validationData loss=3.053074162678633 precision=0.8823529411764706"
    report = _read_lines([line])
    assert (report.loss, report.eval_loss) == (None, 3.053074162678633)


def test_a_trainer_dict_that_names_its_loss_otherwise_gives_it() -> None:
    """TRL's PPOTrainer logs the policy's loss as "loss/policy_avg" and no "loss"; the
    Trainer's closing summary's "train_loss" (an average over the run) stays no step's."""
    ppo = "{'loss/policy_avg': -0.0024, 'loss/value_avg': 0.0871, 'episode': 832, 'epoch': 0.92}"
    assert [r.report.loss for r in parse_message(ppo, NOW)] == [-0.0024]
    summary = (
        "{'train_runtime': 12.5, 'train_samples_per_second': 3.2, 'train_loss': 1.25, 'epoch': 3.0}"
    )
    assert [(r.report.loss, r.report.final) for r in parse_message(summary, NOW)] == [(None, True)]


def test_fairseqs_evaluation_keys_carry_their_subsets_name() -> None:
    """fairseq-hydra-train's JSON log names each evaluation's keys by its subset ("dev_",
    "valid_"): its loss is the eval loss, its num_updates the run's step."""
    line = (
        '[2022-11-02 11:38:35,221][dev][INFO] - {"epoch": 501, "dev_loss": "90.382", '
        '"dev_nll_loss": "0.596", "dev_num_updates": "20000", "dev_best_wer": "22.85"}'
    )
    report = _read_lines([line])
    assert (report.step, report.loss, report.eval_loss) == (20000, None, 90.382)


def test_a_real_gradient_boosting_runs_verbose_table_is_read(tmp_path: Path) -> None:
    """scikit-learn run for real (``verbose=1``): its table, as a plain file and as CRI
    lines, gives the last boosting round as the step and its training loss as printed."""
    import contextlib
    import io

    from sklearn.datasets import make_classification
    from sklearn.ensemble import GradientBoostingClassifier

    from exporter.logs.inspect import read_log

    x, y = make_classification(n_samples=300, random_state=0)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        model = GradientBoostingClassifier(n_estimators=30, verbose=1, random_state=0)
        model.fit(x, y)
    lines = out.getvalue().splitlines()
    stamp = "2026-12-06T02:00:00.000000000Z stdout F "
    plain = tmp_path / "plain.log"
    plain.write_text(out.getvalue(), encoding="utf-8")
    cri = tmp_path / "cri.log"
    cri.write_text("".join(f"{stamp}{line}\n" for line in lines), encoding="utf-8")
    for log in (plain, cri):
        report = read_log(str(log), NOW)[0].report()
        assert report.step == model.n_estimators_
        assert report.loss == round(float(model.train_score_[-1]), 4)


def test_a_bar_as_a_notebook_shows_it_is_a_bar() -> None:
    """A notebook's text of a tqdm bar has no bar glyphs: the same frame otherwise."""
    frame = (
        "Epoch 0:  90% 1531/1702 [12:41<01:25,  2.01it/s, loss=0.158, v_num=0, train_loss=0.149]"
    )
    [found] = parse_message(frame, NOW)
    assert found.parser == "lightning" and found.bar is not None
    assert (found.bar.n, found.bar.total, found.report.loss) == (1531, 1702, 0.149)
    plain = "Validation DataLoader 1: 100% 1000/1000 [00:18<00:00, 55.55it/s]"
    assert [(r.bar.n, r.bar.total) for r in parse_message(plain, NOW) if r.bar] == [(1000, 1000)]


def test_lightning_1s_validating_bar_before_it_knows_its_batches_holds_the_step() -> None:
    """Lightning before 2.0 draws "Validating: 0it" first; its main bar then counts the
    validation batches on. From 2.0 the bar says "Validation": nothing is held."""
    frames = [
        "Epoch 0:  90%|#| 1531/1702 [12:41<01:25,  2.01it/s, loss=0.158, v_num=0]",
        "Validating: 0it [00:00, ?it/s]",
        "Epoch 0:  90%|#| 1534/1702 [12:41<01:23,  2.01it/s, loss=0.158, v_num=0]",
    ]
    assert _read_lines(frames).step == 1531
    two = [frames[0], "Validation: 0it [00:00, ?it/s]", frames[2]]
    assert _read_lines(two).step == 1534


def test_a_trainers_sentence_that_it_reached_max_steps_ends_the_run() -> None:
    """LLaMA-Factory v1 (round 42): ``Reached max_steps (1635), stopping training.`` is the
    step, the total and the end. An agent's or an RL episode's "reached max_steps" (no
    "stopping training" after it) is not a training run's end."""
    report = _read_lines(["[INFO] Reached max_steps (1635), stopping training."])
    assert (report.step, report.max_steps, report.final) == (1635, 1635, True)
    assert _read_lines(["Reached max_steps (5000). Stopping training."]).final
    assert _read_lines(["Reached max_steps (300), stopping training early..."]).final
    for other in (
        "Episode 3 reached max_steps (200) without termination; not saved.",
        "Reached max_steps (5), auto-stopping episode...",
        "[Adaptive] Reached max_steps (8).",
        "Reached max_steps (0), stopping training.",
        "Reached max_steps (200), stopping training episode 3",
    ):
        assert not _read_lines([other]).final, other


def test_trainers_train_metrics_table_is_the_runs_summary_not_a_steps_loss() -> None:
    """Transformers' ``log_metrics`` table (round 42): its ``train_loss`` row is the mean
    over the run; an ``eval_loss`` row is an evaluation's loss, and a loss on a line of its
    own (nnU-Net's) is still read."""
    table = [
        "***** train metrics *****",
        "  epoch                    =        3.0",
        "  train_loss               =     0.7228",
        "  train_runtime            = 0:36:58.55",
    ]
    assert _read_lines(table).loss is None
    evaluated = ["***** eval metrics *****", "  eval_loss               =     0.5123"]
    assert _read_lines(evaluated).eval_loss == 0.5123
    assert _read_lines(["2024-04-23 15:23:41.803760: train_loss -0.7526"]).loss == -0.7526


def test_counts_under_epoch_headers_become_the_runs_step_once_they_start_over() -> None:
    """Round 43 (a NumPy CNN's ``--- Epoch 2 ---`` then ``[Step 100]`` again): a count that
    starts over under a later header counts within the epoch. Its epoch's size is the
    counter's total where printed, else the last count the epoch printed; a counter that
    never starts over, or starts over under an earlier header (run again), is as printed."""
    blocks = [
        (
            ["Epoch 1/3", "Step 100/938 loss 0.5", "Step 938/938 loss 0.4", "Epoch 2/3"],
            (1038, 2814),
        ),
        (["--- Epoch 1 ---", "[Step 1000] loss 0.4", "--- Epoch 2 ---"], (1100, None)),
        (["Epoch: 1", "Step 938, loss 0.4", "===== Epoch 2 of 5 ====="], (1038, None)),
    ]
    for lines, expected in blocks:
        report = _read_lines(
            [*lines, "Step 100 loss 0.3" if "/" not in lines[1] else "Step 100/938 loss 0.3"]
        )
        assert (report.step, report.max_steps) == expected, lines
    never = _read_lines(["Epoch 1", "Step 100 loss 0.5", "Epoch 2", "Step 300 loss 0.3"])
    assert never.step == 300
    again = _read_lines(["Epoch 3", "Step 200 loss 0.4", "Epoch 1", "Step 50 loss 0.3"])
    assert again.step == 50
    assert _read_lines(["Epoch 2 loss improved", "Step 5 loss 0.3"]).step == 5  # no header


def test_a_counter_that_prints_a_batch_index_of_zero_gives_no_step_once_it_starts_over() -> None:
    """DGL's GraphSAGE (round 60): ``Epoch 00029 | Step 00000 | Loss ...`` then ``Step
    00020``: an index from enumerate printed at the start of each interval, so an epoch's
    last count (20) falls short of its size and the run's step is unknown once the count
    starts over; before that, as printed. A 1-based counter keeps the round-43 rule."""
    line = "Epoch {e:05d} | Step {s:05d} | Loss 0.4032 | Train Acc 0.9050 | GPU 469.6 MB"
    lines = [line.format(e=e, s=s) for e in (28, 29) for s in (0, 20)]
    report = _read_lines(lines)
    assert (report.step, report.max_steps, report.loss) == (None, None, 0.4032)
    assert _read_lines(lines[:2]).step == 20
    assert _read_lines([*lines, line.format(e=30, s=0)]).step is None
    one_based = _read_lines(
        ["--- Epoch 1 ---", "[Step 1000] loss 0.4", "--- Epoch 2 ---", "[Step 100] loss 0.3"]
    )
    assert one_based.step == 1100


def test_bars_described_by_their_epoch_count_the_epochs_even_when_their_length_changes() -> None:
    """A ResNet-50 loop (round 60) describes each epoch's bar ``Train Epoch: 2 Loss: 4.504
    Acc@1 ...`` and draws it whole: the epoch named tells the passes apart (three of 10010
    batches). From epoch 4 its bars have 5005 (the batch doubled): the next epoch's bar at
    another length goes on from the steps before it. A bar at another length that is not
    the next epoch, or follows an unfinished one, places no step."""
    bar = (
        "Train Epoch: {e} Loss: {loss} Acc@1 3.611 Acc@5 11.045: 100%|##########| {n}/{n} "
        "[59:42<00:00,  2.79it/s]"
    )
    big = [bar.format(e=e, loss=5.8 - e / 10, n=10010) for e in (1, 2, 3)]
    assert (_read_lines(big).step, _read_lines(big).max_steps) == (30030, None)
    both = _read_lines([*big, *(bar.format(e=e, loss=2.7, n=5005) for e in (4, 5, 6))])
    assert (both.step, both.max_steps, both.loss) == (45045, None, 2.7)
    assert both.epoch == 6.0  # six whole epochs, not 45045 / 5005
    skipped = _read_lines([*big, bar.format(e=5, loss=2.7, n=5005)])
    assert (skipped.step, skipped.loss) == (None, 2.7)
    short = bar.format(e=3, loss=3.6, n=10010).replace("10010/10010", "9000/10010")
    cut = _read_lines([*big[:2], short, bar.format(e=4, loss=2.9, n=5005)])
    assert (cut.step, cut.loss) == (None, 2.9)


def test_the_test_sets_average_loss_is_an_evaluations() -> None:
    """PyTorch's MNIST example (round 43): ``Test set: Average loss: 0.0831, Accuracy:
    9727/10000 (97%)`` is the test set's loss, never the training loss, and its accuracy's
    fraction is no counter."""
    report = _read_lines(
        [
            "Train Epoch: 1 [4864/60000 (32%)]\tLoss: 0.141531",
            "Test set: Average loss: 0.0831, Accuracy: 9727/10000 (97%)",
        ]
    )
    assert (report.step, report.loss, report.eval_loss) == (None, 0.141531, 0.0831)
    alone = _read_lines(["Test set: Average loss: 0.0648, Accuracy: 58591/60000 (98%)"])
    assert (alone.loss, alone.eval_loss, alone.step) == (None, 0.0648, None)


def test_an_average_after_a_data_sets_name_is_still_that_sets_loss() -> None:
    """gotorch's ``Test average loss: 0.2291`` (round 42): the average between the data
    set's name and ``loss`` names the same loss; only losses are so read."""
    from exporter.logs.formats.vocabulary import field_of

    assert field_of("Test average loss") == field_of("test loss")
    assert field_of("val_mean_loss") == field_of("val_loss")
    assert field_of("train avg loss") == field_of("train_loss")
    assert field_of("test average acc") is None
    report = _read_lines(["2020/09/02 01:58:26 Test average loss: 0.2291 acc1: 0.0344"])
    assert (report.loss, report.eval_loss) == (None, 0.2291)


def test_a_batch_of_n_in_epoch_0_is_the_runs_step() -> None:
    """DexiNed (round 44): ``Epoch: 0 Sample 75/76`` is the batch's index in epoch 0, the
    first surely: the run's step. In a later epoch whose first is unknown (0 or 1), no step."""
    line = "Mon Nov 16 01:53:58 2020 Epoch: 0 Sample 75/76 Loss: 30482.720703125"
    assert _read_lines([line]).step == 75
    assert _read_lines(["epoch 0, batch 12/300, loss 0.5"]).step == 12
    later = _read_lines(["Epoch: 3 Batch 75/76 Loss: 0.25"])
    assert (later.step, later.loss) == (None, 0.25)


def test_clus_logging_writer_lines_give_the_step_and_their_values() -> None:
    """CLU's LoggingWriter (round 45, the Flax examples): ``[step] name=value, ...``, with a
    collection's name where the writer has one (clu/metric_writers/logging_writer_test.py's
    shapes). An eval collection moves no step; what CLU logs that is no scalar is no line."""
    train = (
        "I1002 21:43:51.424899 140400640460352 logging_writer.py:35] [1000] "
        "steps_per_second=1.760847, train_learning_rate=0.97, train_loss=6.525280952453613"
    )
    report = _read_lines([train])
    assert (report.step, report.loss, report.learning_rate) == (1000, 6.525280952453613, 0.97)
    assert _read_lines(["INFO:absl:[2] collection=train a=5e-07, loss=0.007"]).step == 2
    evaluated = _read_lines(["INFO:absl:[12] collection=eval loss=2.5"])
    assert (evaluated.step, evaluated.eval_loss) == (None, 2.5)
    assert _read_lines(["INFO:absl:[4] Got images: {'input_images': (2, 28, 28, 3)}."]).step is None
    assert _read_lines(["items[3] loss=2.5"]).step is None  # an index inside a word


def test_a_real_mmengine_runners_log_is_read(tmp_path: Path) -> None:
    """mmengine's Runner run for real (tests/fixtures/logs/programs/mmengine_runner.py: 3
    epochs of 25 iterations, printed every 10), its log read as a plain file and as CRI
    lines: the iterations run as the step (its checkpoint line after the last epoch,
    ``Saving checkpoint at 3 epochs``, is 3 x 25), the loss its last line printed (mmengine's
    message hub's window mean, printed with 4 digits), and nothing finished: mmengine prints
    no end of training."""
    from exporter.logs.inspect import read_log

    program = Path(__file__).parent / "fixtures" / "logs" / "programs" / "mmengine_runner.py"
    truth_path = tmp_path / "truth.json"
    env = {**os.environ, "TRUTH_PATH": str(truth_path), "WORK_DIR": str(tmp_path / "work")}
    done = subprocess.run(
        [sys.executable, str(program)], capture_output=True, env=env, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    truth = json.loads(truth_path.read_text())
    text = (done.stdout + done.stderr).decode()
    assert "Epoch(train) [3][20/25]" in text
    plain = tmp_path / "plain.log"
    plain.write_text(text, encoding="utf-8")
    cri = tmp_path / "cri.log"
    stamp = "2026-12-06T05:40:00.000000000Z stdout F "
    cri.write_text("".join(f"{stamp}{line}\n" for line in text.splitlines()), encoding="utf-8")
    for log in (plain, cri):
        report = read_log(str(log), NOW)[0].report()
        assert report.step == truth["step"] == 75
        assert report.loss == pytest.approx(truth["loss"], abs=5e-5)
        assert (report.max_steps, report.final) == (None, False)


def test_a_run_named_test_is_no_evaluation() -> None:
    """Only "test set" or "test:" before a line's values make it an evaluation's: a run,
    job or experiment named "test" prints its training losses as training losses."""
    for line in (
        "[test-run] step 100 | loss 2.3",
        "my test run: step 100 loss 2.3",
        "test-exp | Epoch 1/3, Step 100/938, Loss: 2.3",
    ):
        report = _read_lines([line])
        assert (report.step, report.loss, report.eval_loss) == (100, 2.3, None), line


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 5),
    st.integers(1, 60),
    st.lists(st.sets(st.integers(1, 59), max_size=6), min_size=1, max_size=5),
)
def test_counts_under_epoch_headers_read_as_the_runs_step(
    epochs: int, size: int, printed: list[set[int]]
) -> None:
    """Any loop that prints ``Epoch e/E`` and then some of its epoch's counts ``Step k/n``
    (the epoch's last among them, as a loop that logs at the end of each epoch does): after
    each line the step is the run's, (e - 1) x n + k, and the total E x n once an epoch
    started over (before, the counter's own n)."""
    from exporter.logs.accumulate import LogAccumulator

    acc = LogAccumulator()
    for epoch, chosen in enumerate(printed[:epochs], start=1):
        for found in parse_message(f"Epoch {epoch}/{epochs}", NOW):
            acc.feed(found, NOW)
        for k in sorted({c for c in chosen if c < size} | {size}):
            for found in parse_message(f"Step {k}/{size}, loss 0.5", NOW):
                acc.feed(found, NOW)
            report = acc.report()
            assert report.step == (epoch - 1) * size + k
            assert report.max_steps == (epochs * size if epoch > 1 else size)


def test_a_phases_line_gives_its_loss_by_its_phase() -> None:
    """``{phase} Loss: ...`` (the PyTorch transfer-learning tutorial's ``train_model``:
    ``print(f'{phase} Loss: {epoch_loss:.4f} Acc: {epoch_acc:.4f}')``) and GAT's segments
    ``Training: loss = ... | Val: loss = ...``: the train phase's loss, a validation's eval
    loss. An early-stopping note ("Validation loss decreased (0.52 --> 0.48)") is none."""
    tutorial = [
        "Epoch 0/24",
        "----------",
        "train Loss: 0.5821 Acc: 0.6844",
        "val Loss: 0.2232 Acc: 0.9281",
    ]
    report = _read_lines(tutorial)
    assert (report.step, report.loss, report.eval_loss) == (None, 0.5821, 0.2232)
    gat = "Training: loss = 1.46445, acc = 0.53571 | Val: loss = 1.68655, acc = 0.496 | Time: 1"
    assert (_read_lines([gat]).loss, _read_lines([gat]).eval_loss) == (1.46445, 1.68655)
    note = _read_lines(["Validation loss decreased (0.520000 --> 0.480000).  Saving model ..."])
    assert (note.loss, note.eval_loss) == (None, None)
    assert _read_lines(["train Loss: 0.5 | weird segment 3"]).loss is None


def test_an_epoch_header_from_zero_counts_the_last_epochs_index() -> None:
    """``Epoch 0/24`` is no Keras header (Keras counts from 1) but a loop printing its
    0-based epoch of the last (the PyTorch transfer-learning tutorial): 25 epochs, and its
    later headers too; counts under them count within those epochs. Keras is unchanged."""
    tutorial = ["Epoch 0/24", "train Loss: 0.58 Acc: 0.68", "Epoch 1/24", "train Loss: 0.49"]
    assert _read_lines(tutorial).max_epochs == 25
    counted = _read_lines(["Epoch 0/2", "Step 10/10 loss 0.5", "Epoch 1/2", "Step 10/10 loss 0.4"])
    assert (counted.step, counted.max_steps, counted.max_epochs) == (20, 30, 3)
    keras = [
        "Epoch 1/3",
        "1875/1875 [==============================] - 4s 2ms/step - loss: 0.29",
        "Epoch 2/3",
        "1875/1875 [==============================] - 4s 2ms/step - loss: 0.14",
    ]
    assert (_read_lines(keras).step, _read_lines(keras).max_epochs) == (3750, 3)


def test_a_step_key_that_disagrees_with_the_counter_takes_the_counters_total_away() -> None:
    """Coqui TTS (round 50): ``--> STEP: 49/377 -- GLOBAL_STEP: 370050``: the counter counts the
    epoch's batches, so its 377 is no total of the run's 370050 steps; the line needs no value
    beside its two counts. A step key that agrees keeps the counter's total."""
    report = _read_lines(["    --> STEP: 49/377 -- GLOBAL_STEP: 370050", "      | > loss_0: 2.4"])
    assert (report.step, report.max_steps) == (370050, None)
    agreeing = _read_lines(["step 40/100 | global_step: 40 | loss: 0.5"])
    assert (agreeing.step, agreeing.max_steps, agreeing.loss) == (40, 100, 0.5)
    assert _read_lines(["saved at step 100"]).step is None  # one count alone is a sentence


def test_a_loops_count_after_an_epochs_number_claims_no_total() -> None:
    """DrQA (round 50): ``Epoch = 0 | iter = 1150/2714``: the count may be the epoch's (it is,
    in DrQA's train.py), so 2714 is no total; once it starts over under the next epoch, 2714
    is the epoch's size (a run's total does not start over: round 112) and it counts on from
    it, not from the epoch's last printed count. A count before the epoch (OLMo's ``[step=1/739328,epoch=0]``),
    beside the number of epochs, or PaddleSeg's global ``[TRAIN] epoch: 1, iter: 20/500``
    keeps its total."""
    drqa = "[ train: Epoch = {e} | iter = {i}/2714 | loss = 4.95 | elapsed time = 87.94 (s) ]"
    first = _read_lines([drqa.format(e=0, i=1150)])
    assert (first.step, first.max_steps, first.loss) == (1150, None, 4.95)
    later = _read_lines([drqa.format(e=0, i=2700), drqa.format(e=1, i=25)])
    assert (later.step, later.max_steps) == (2714 + 25, None)
    olmo = _read_lines(["[step=3/739328,epoch=0]", "    train/CrossEntropyLoss=12.18"])
    assert (olmo.step, olmo.max_steps) == (3, 739328)
    epochs = _read_lines(["Epoch 1/3 | iter 20/500 | loss 0.4"])
    assert (epochs.step, epochs.max_steps) == (20, 1500)
    paddleseg = _read_lines(["[TRAIN] epoch: 2, iter: 620/1000, loss: 1.0859, lr: 0.009"])
    assert (paddleseg.step, paddleseg.max_steps) == (620, 1000)


def test_a_count_of_an_epoch_names_the_epoch_after_it() -> None:
    """DLRM's ``Finished training it 8192/315310 of epoch 0`` and RSC's ``30/42 of epoch 6/30``
    (round 50): a count within the epoch. Epoch 0 is the first; a line printing the number of
    epochs counts from 1; a later epoch of unknown base places no step."""
    dlrm = _read_lines(
        ["Finished training it 8192/315310 of epoch 0, 12.80 ms/it, loss 0.441182, accuracy 80.4 %"]
    )
    assert (dlrm.step, dlrm.max_steps, dlrm.loss) == (8192, None, 0.441182)
    rsc = _read_lines(["30/42 of epoch 6/30 class : 0.208 - acc class : 92.97 [bs:128]"])
    assert (rsc.step, rsc.max_steps) == (5 * 42 + 30, 30 * 42)
    unknown = _read_lines(["Finished training it 100/315310 of epoch 2, loss 0.42"])
    assert (unknown.step, unknown.loss) == (None, 0.42)


def test_a_dict_that_names_its_step_and_loss_otherwise_gives_them() -> None:
    """ParlAI's train report (round 50): ``[ time:... ] {'exs': 570, 'mean_loss': 4.698, ...,
    'total_train_updates': 73}``: the vocabulary's step and loss keys; Tianshou's bar postfix
    ``env_step=250000`` is its step, not the bar's count. A dict with neither is no report."""
    parlai = (
        "[ time:82.0s total_exs:2190 epochs:0.03 ] {'exs': 570, 'mean_loss': 4.698, "
        "'lr': 5e-05, 'total_train_updates': 73}"
    )
    report = _read_lines([parlai])
    assert (report.step, report.loss) == (73, 4.698)
    assert "total_train_updates" not in dict(report.metrics)
    assert _read_lines(["{'exs': 570, 'rank': 14.19, 'mrr': 0.1575}"]).step is None
    tianshou = (
        "Epoch #{e}: 50001it [00:40, 1244.54it/s, env_step={s}, len=200, loss=-0.562, n/ep=7]"
    )
    run = _read_lines([tianshou.format(e=1, s=50000), tianshou.format(e=2, s=100000)])
    assert (run.step, run.loss) == (100000, -0.562)


def test_lines_of_values_under_an_epochs_header_are_that_epochs() -> None:
    """chemprop's loop (round 50): ``Epoch 25`` on a line of its own, then ``Loss = 3.77e-01,
    PNorm = 37.1, GNorm = 0.62, lr_0 = 1.36e-04`` lines with no counter: their loss is the
    run's (its step unknown). Under no header, or after an evaluation's line, such a line
    says nothing."""
    lines = ["Epoch 25", "Loss = 3.7729e-01, PNorm = 37.1023", "Loss = 3.2899e-01, PNorm = 37.12"]
    report = _read_lines(lines)
    assert (report.step, report.loss) == (None, 0.32899)
    assert _read_lines(lines[1:]).loss is None
    assert _read_lines(["Epoch 25", "Validation loss = 0.61"]).loss is None


def test_a_loops_count_in_groups_of_thousands_is_the_whole_number() -> None:
    """BasicSR and IRN (round 51) log ``<epoch: 86, iter: 107,200, lr:2.500e-05>`` ('{:8,d}'):
    the iteration is 107200, not 107 (which the epoch's number beside it then made 214). A
    comma that only separates values is no group."""
    basicsr = (
        "19-08-09 08:25:25.996 - INFO: <epoch: 86, iter: 107,200, lr:2.500e-05> l_g_pix: 1.4e-03"
    )
    assert _read_lines([basicsr]).step == 107200
    irn = "20-07-29 21:08:17.830 - INFO: <epoch:1599, iter:  80,000> psnr: 3.1740e+01."
    assert _read_lines([irn]).step == 80000
    assert _read_lines(["step 12, loss 0.5, lr 0.001"]).step == 12
    assert _read_lines(["iter 5,100 loss 0.4"]).step == 5100


def test_mlx_lms_start_line_gives_the_runs_iterations() -> None:
    """mlx-lm (round 51): ``Starting training..., iters: 3000`` (mlx_lm/tuner/trainer.py) is the
    run's total; its ``Iter n: Train loss`` lines are the steps."""
    report = _read_lines(
        [
            "Starting training..., iters: 3000",
            "Iter 1: Val loss 2.480, Val took 0.732s",
            "Iter 110: Train loss 1.188, Learning Rate 1.000e-05, It/sec 0.780, Tokens/sec 84.555",
        ]
    )
    assert (report.step, report.max_steps, report.loss, report.eval_loss) == (
        110,
        3000,
        1.188,
        2.48,
    )
    assert _read_lines(["Starting training..., please wait"]).max_steps is None


def test_gaussian_splattings_stamped_end_ends_the_run() -> None:
    """3D Gaussian Splatting (round 51) ends with ``Training complete. [11/07 14:03:13]`` (its
    safe_state stamps each line): the run's end. The words without its stamp are any
    script's, which may go on to a next stage: no end."""
    bar = "Training progress: 100%|#####| 30000/30000 [06:19<00:00, 78.99it/s, Loss=0.2308751]"
    done = _read_lines([bar, "", "Training complete. [11/07 14:03:13]"])
    assert (done.step, done.max_steps, done.final) == (30000, 30000, True)
    assert not _read_lines([bar, "Training complete."]).final
    assert not _read_lines(["Stage 1: Training complete. [11/07 14:03:13] next: stage 2"]).final


def test_the_yolo_familys_closing_line_ends_the_run() -> None:
    """YOLOv5, YOLOv7 and Ultralytics (round 59) log ``150 epochs completed in 16.469 hours.``
    once, after their epoch loop (also when EarlyStopping ends it): the run's end, at the
    step the table reached. Its count is the epochs since a resume, so it sets no epoch; other
    scripts' wordings, or the words inside a longer sentence, are no end."""
    header = "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size"
    cells = "    3/3      6.73G      1.081     0.4706      1.084         10"
    row = _YOLO_FRAME.format(row=cells, pct=100, n=10)
    done = _read_lines([header, row, "", "3 epochs completed in 0.012 hours."])
    assert (done.step, done.max_steps, done.final) == (30, 30, True)
    assert _read_lines(["360 epochs completed in 0.338 hours.\n"]).final
    for line in (
        "Training of 10 epochs completed in 12.5 sec using cuda",
        "3 epochs completed in 0.012 hours. Starting stage 2",
        "Stage 1: 3 epochs completed in 0.012 hours.",
        "0 epochs completed in 0.000 hours.",
        "3 epochs completed in 0.5 hours.",
    ):
        assert not _read_lines([header, row, line]).final, line


def test_time_series_librarys_counts_within_epochs_take_the_size_its_summary_prints() -> None:
    """Informer and the Time-Series-Library family (round 52): ``iters: 200, epoch: 5 | loss:``
    counts the (1-based) epoch's batches; ``Epoch: 4, Steps: 225 | Train Loss ... Vali Loss ...
    Test Loss ...`` prints the epoch's size after it (225, not a step): four epochs of 225
    and 200 more. Before any summary a later epoch's count places no step; the validation
    set's loss is the eval loss, not the test set's."""
    lines = [
        "Epoch: 4, Steps: 225 | Train Loss: 0.1432611 Vali Loss: 0.1369737 Test Loss: 0.2011482",
        "\titers: 100, epoch: 5 | loss: 0.1322199",
        "\tspeed: 0.3368s/iter; left time: 118.2158s",
        "\titers: 200, epoch: 5 | loss: 0.1428038",
    ]
    report = _read_lines(lines)
    assert (report.step, report.loss, report.eval_loss) == (4 * 225 + 200, 0.1428038, 0.1369737)
    assert report.epoch == pytest.approx(4 + 200 / 225)  # the count's epoch, not the summary's
    summary = _read_lines(lines[:1])
    assert (summary.step, summary.loss) == (900, 0.1432611)
    alone = _read_lines(["\titers: 1700, epoch: 6 | loss: 0.5045499"])
    assert (alone.step, alone.loss) == (None, 0.5045499)
    assert _read_lines(["\titers: 300, epoch: 1 | loss: 0.0452041"]).step == 300


def test_a_loggers_bracket_before_a_lone_loss_is_no_part_of_it() -> None:
    """kur (round 52): ``[INFO 2017-03-02 18:11:38,332 kur.model.executor:175] Validation loss:
    155.686`` is a validation's loss alone on its line; a bracket that is no logger's (no
    level first) is still no stamp."""
    line = "[INFO 2017-03-02 18:11:38,332 kur.model.executor:175] Validation loss: 155.686"
    report = _read_lines([line])
    assert (report.loss, report.eval_loss) == (None, 155.686)
    assert _read_lines(["[note] loss: 0.5"]).loss is None


def test_a_catalyst_loaders_name_says_whether_its_loss_is_an_evaluations() -> None:
    """Catalyst (round 53): ``2/4 * Epoch 2 (valid): ... | loss=1.4724`` is the valid loader's
    loss, the eval loss; the train loader's line before it gives the loss."""
    line = "{e}/4 * Epoch {e} ({loader}): _base/lr=0.0033 | accuracy01=44.5312 | loss={loss}"
    report = _read_lines(
        [
            line.format(e=2, loader="train", loss=1.8742),
            line.format(e=2, loader="valid", loss=1.4724),
        ]
    )
    assert (report.loss, report.eval_loss) == (1.8742, 1.4724)


def test_an_evaluation_for_a_step_names_the_runs_step() -> None:
    """Ludwig (round 53): ``Running evaluation for step: 1500, epoch: 23`` says the run is at
    step 1500 (its bar's frame before it showed 1498); an evaluation counting its own
    batches (``Validation: iteration 3/10``) still moves nothing."""
    bar = "Training:  24%|#####     | 1498/6300 [00:01<00:05, 861.12it/s]"
    report = _read_lines([bar, "Running evaluation for step: 1500, epoch: 23"])
    assert (report.step, report.max_steps) == (1500, 6300)
    own = _read_lines(["step 40 | loss: 0.5", "Validation: iteration 3/10 | loss: 0.7"])
    assert own.step == 40


def test_a_bars_description_that_is_a_progress_line_gives_its_step_and_loss() -> None:
    """Yet-Another-EfficientDet (round 53): the bar's description ``Step: 37529. Epoch:
    1072/2000. Iteration: 10/35. ... Total loss: 0.18125`` holds the run's step (the bar
    counts the epoch's 35 batches) and its loss; its total is not the epochs' (a step that
    disagrees with the epoch's count). A plain description (``Epoch 3``) says nothing."""
    frame = (
        "Step: {s}. Epoch: 1072/2000. Iteration: {i}/35. Cls loss: 0.17834. Reg loss: 0.00291. "
        "Total loss: {loss}:  29%|##8       | {i}/35 [00:53<00:55,  2.21s/it]"
    )
    report = _read_lines(
        [frame.format(s=37528, i=9, loss=0.17813), frame.format(s=37529, i=10, loss=0.18125)]
    )
    assert (report.step, report.max_steps, report.loss) == (37529, None, 0.18125)
    plain = _read_lines(["Epoch 3:  29%|##8       | 10/35 [00:53<00:55,  2.21s/it]"])
    assert plain.loss is None


def test_ludwigs_split_tables_give_the_train_and_validation_losses() -> None:
    """Ludwig (round 53) prints a box table per output feature: the train row's loss is the
    loss, the vali row's the eval loss, the test row is not read; rows under no header, or
    a header with no loss column, say nothing."""
    header = "│ rating   │   loss │   accuracy │"
    rows = ["│ train    │ 1.0847 │     0.7543 │", "│ vali     │ 1.6780 │     0.5833 │"]
    report = _read_lines([header, *rows, "│ test     │ 1.2223 │     0.7264 │"])
    assert (report.loss, report.eval_loss) == (1.0847, 1.678)
    assert _read_lines(rows).loss is None
    assert _read_lines(["│ rating   │   accuracy │", "│ train    │ 0.7543 │"]).loss is None


def test_a_bar_seen_only_at_its_end_again_after_an_evaluations_bar_is_a_further_pass() -> None:
    """Ludwig (round 53) draws each epoch's 'Training' bar, then evaluation bars: the next
    epoch's bar at its end again, its clock no later, is a further pass, so its 3/3 is no
    step of the run (which epoch is first is unknown) and no total."""
    epoch = [
        "Training: 100% 3/3 [00:10<00:00,  3.46s/it]",
        "Evaluation train: 100% 3/3 [00:03<00:00,  1.01s/it]",
    ]
    report = _read_lines(["Epoch   4", *epoch, "Epoch   5", *epoch])
    assert (report.step, report.max_steps) == (None, None)


def test_maces_error_report_is_an_evaluations_loss() -> None:
    """MACE (round 54) logs after each evaluation ``Epoch 1: head: default, loss=  0.0001,
    RMSE_E_per_atom= 33.7 meV, RMSE_F= ...`` (mace/tools/train.py log_errors): the validation
    set's loss. A line with a loss and no such errors is still a training loss."""
    line = "2024-10-18 16:25:29.734 INFO: Epoch 2: head: pt_head, loss=  0.0004, RMSE_E_per_atom=   353.0 meV, RMSE_F=   339.7 meV / A"
    report = _read_lines([line])
    assert (report.loss, report.eval_loss) == (None, 0.0004)
    mae = _read_lines(["INFO: Epoch 1: loss=0.0000, MAE_E_per_atom=0.2 meV, MAE_F=2.9 meV / A"])
    assert (mae.loss, mae.eval_loss) == (None, 0.0)
    train = _read_lines(["Epoch 2: loss=0.4, acc=0.9"])
    assert (train.loss, train.eval_loss) == (0.4, None)


def test_dgl_kes_one_value_lines_give_its_step_and_only_the_whole_loss() -> None:
    """DGL-KE (round 54): ``[proc 0][Train](15000/40000) average pos_loss: ...``, then
    ``average neg_loss``, ``average loss``, one value a line: the process's step of its
    max_step; the positive and negative samples' losses are parts, never the loss."""
    line = "[proc 0][Train](15000/40000) average {k}: {v}"
    parts = _read_lines([line.format(k="pos_loss", v=0.22), line.format(k="neg_loss", v=0.29)])
    assert (parts.step, parts.max_steps, parts.loss) == (15000, 40000, None)
    whole = _read_lines([line.format(k="pos_loss", v=0.22), line.format(k="loss", v=0.2598)])
    assert whole.loss == 0.2598
    assert _read_lines(["step 5 | Mask_Loss 1.55"]).loss == 1.55  # one loss of its own


def test_a_phases_average_loss_after_its_error_word_is_its_loss() -> None:
    """A loop in the PyTorch tutorials' style (round 55): ``Train Error: Avg loss: 0.232530``
    after the epoch's batches is the training loss, ``Test Error: Avg loss: 0.062938`` the
    eval loss; "Error" alone with no loss says nothing."""
    report = _read_lines(
        [
            "Train Epoch: 0 [7010/7010 Srno: 2 (100%)]\tLoss: 0.110357",
            "Train Error: Avg loss: 0.232530 ",
            "Test Error: Avg loss: 0.062938",
        ]
    )
    assert (report.loss, report.eval_loss) == (0.23253, 0.062938)
    assert _read_lines(["Train Error: 12 samples skipped"]).loss is None


def test_the_kohya_gui_passes_its_planned_steps_on() -> None:
    """The kohya_ss GUI (round 57) logs ``max_train_steps (4800 / 4 / 1 * 10 * 1) = 12000``
    before it starts sd-scripts: the run's total; its ``Total steps: 4800`` (an epoch's
    images, repeats included) and ``lr_warmup_steps = 1200`` are no total."""
    report = _read_lines(
        [
            "23:06:06-584246 INFO     Total steps: 4800",
            "23:06:06-588246 INFO     max_train_steps (4800 / 4 / 1 * 10 * 1) = 12000",
            "23:06:06-590247 INFO     lr_warmup_steps = 1200",
        ]
    )
    assert (report.step, report.max_steps) == (None, 12000)
    assert _read_lines(["23:06:06-584246 INFO     Total steps: 4800"]).max_steps is None


def test_llamafactorys_throughput_is_its_tokens_per_second_where_it_counted_tokens() -> None:
    """LLaMA-Factory's trainer_log.jsonl (round 61) writes ``throughput``, the tokens seen
    over the time since the start, where it counts tokens; otherwise ``"0.00"`` beside
    ``total_tokens: 0``, which is no throughput. Another tool's ``throughput`` key (no
    ``current_steps``) stays a custom metric of that name."""
    record = (
        '{{"current_steps": 15, "total_steps": 18, "loss": 1.731, "epoch": 2.4, '
        '"throughput": {t}, "total_tokens": {n}}}'
    )
    counted = _read_lines([record.format(t=1019.0, n=74784)])
    assert (counted.step, counted.max_steps, counted.loss) == (15, 18, 1.731)
    assert dict(counted.metrics).get("tokens_per_second") == 1019.0
    assert "throughput" not in dict(counted.metrics)
    uncounted = _read_lines([record.format(t='"0.00"', n=0)])
    assert "tokens_per_second" not in dict(uncounted.metrics)
    assert "throughput" not in dict(uncounted.metrics)
    other = _read_lines(['{"step": 15, "loss": 1.7, "throughput": 33.0}'])
    assert dict(other.metrics).get("throughput") == 33.0
    assert "tokens_per_second" not in dict(other.metrics)


def test_an_epoch_summary_with_its_batches_counts_epochs_from_epoch_0() -> None:
    """A CIFAR-10 loop (round 67) prints ``Epoch 9 iterations 12500, average loss 0.83``
    after each epoch, the epoch 0-based and 12500 that epoch's batches: ten epochs, 125000
    steps. Epoch 0 is surely the first; a log whose first summary is epoch 1 may be a
    1-based loop's first or a 0-based loop's second (no step), and a count larger than the
    first epoch held is a running count, not an epoch's (no step either)."""
    line = "Epoch {e} iterations {n}, average loss 0.83"
    zero = _read_lines([line.format(e=e, n=12500) for e in range(10)])
    assert (zero.step, zero.max_steps, zero.loss) == (125000, None, 0.83)
    assert zero.epoch == 10.0
    assert _read_lines([line.format(e=0, n=12500)]).step == 12500
    one = _read_lines([line.format(e=e, n=12500) for e in (1, 2, 3)])
    assert (one.step, one.loss) == (None, 0.83)
    running = _read_lines([line.format(e=0, n=12500), line.format(e=1, n=25000)])
    assert running.step is None


@settings(max_examples=60, deadline=None)
@given(
    first=st.integers(1, 4),
    second=st.integers(1, 4),
    sizes=st.tuples(st.integers(2, 50), st.integers(2, 50)).filter(lambda s: s[0] != s[1]),
    gap=st.booleans(),
    short=st.booleans(),
)
def test_described_bars_that_change_length_give_the_sum_or_nothing(
    first: int, second: int, sizes: tuple[int, int], gap: bool, short: bool
) -> None:
    """Any number of whole epochs' bars of one length, then of another (a batch size that
    changed): the step read is the sum of their batches where the epochs run on and the
    earlier bar ended whole, and unknown otherwise, never another number."""
    bar = "Train Epoch: {e} Loss: 1.5 Acc@1 3.6: 100%|##########| {n}/{t} [00:10<00:00,  2.7it/s]"
    n1, n2 = sizes
    lines = [bar.format(e=e, n=n1, t=n1) for e in range(1, first + 1)]
    if short:
        lines[-1] = bar.format(e=first, n=n1 - 1, t=n1)
    start = first + (2 if gap else 1)
    lines += [bar.format(e=e, n=n2, t=n2) for e in range(start, start + second)]
    report = _read_lines(lines)
    if gap or short:
        assert report.step is None, lines
    else:
        assert report.step == first * n1 + second * n2, lines
        assert report.epoch == first + second, lines


@settings(max_examples=60, deadline=None)
@given(start=st.integers(0, 2), epochs=st.integers(1, 6), size=st.integers(1, 20000))
def test_epoch_summaries_with_their_batches_give_the_step_only_from_epoch_0(
    start: int, epochs: int, size: int
) -> None:
    """``Epoch e iterations n, average loss x`` for consecutive epochs from ``start``: the
    step is every epoch's batches where the log shows epoch 0, else unknown."""
    line = "Epoch {e} iterations {n}, average loss 0.5"
    report = _read_lines([line.format(e=e, n=size) for e in range(start, start + epochs)])
    assert report.step == (epochs * size if start == 0 else None)
    assert report.loss == 0.5


def test_a_real_tqdm_loop_whose_batch_size_changes_is_read(tmp_path: Path) -> None:
    """tqdm run for real (tests/fixtures/logs/programs/tqdm_batch_size_change.py): a bar per
    epoch described ``Train Epoch: e Loss: x ...``, 40 batches for three epochs and 20 for
    three more. Its output as tqdm wrote it (frames joined by carriage returns) is read as
    every batch run and every epoch done, the loss the last description's."""
    output, truth = _run_program(tmp_path, "tqdm_batch_size_change")
    report = _read_lines(output.split("\n"))
    assert (report.step, report.epoch) == (truth["step"], truth["epochs"]) == (180, 6)
    assert report.loss == truth["loss"]
    assert report.max_steps is None


_EZPZ = "[2025-12-31 11:31:{s:02d},000000][I][{where}] "


def test_ezpz_launchs_closing_line_ends_the_run_only_with_code_0() -> None:
    """Argonne's ``ezpz launch`` (round 69) logs ``Execution finished with {retcode}.`` under
    its logger ``ezpz/launch`` once the command it ran returned: the end with 0, coloured or
    not; another code, or the words under another logger or inside a sentence, are no end."""
    step = _EZPZ.format(s=1, where="ezpz/examples/test:325:train_step") + (
        "iter=190 loss=0.044844 accuracy=0.984375 loss/mean=0.051969 loss/max=0.151458"
    )
    end = _EZPZ.format(s=2, where="ezpz/launch:448:launch") + "Execution finished with {rc}."
    done = _read_lines([step, end.format(rc=0)])
    assert (done.step, done.loss, done.final) == (190, 0.044844, True)
    assert _read_lines([step, end.format(rc="\x1b[1;36m0\x1b[0m")]).final
    for line in (
        end.format(rc=1),
        end.format(rc=127),
        end.format(rc=0) + " Retrying",
        _EZPZ.format(s=2, where="examples/vit:544:main") + "Execution finished with 0.",
        "Execution finished with 0.",
    ):
        assert not _read_lines([step, line]).final, line


@pytest.mark.parametrize(
    ("where", "validating"),
    [
        ("ezpz/examples/test:325:train_step", "ezpz/examples/test:325:validate"),
        ("trainer/validate.py:88", None),
        ("eval_utils.py:12:log_step", "eval_utils.py:12:validate"),
        ("test.py:40", None),
        ("tests.finetune:train:469", "tests.finetune:validate:469"),  # loguru's format
    ],
)
def test_a_loggers_source_location_does_not_make_a_train_line_an_evaluation(
    where: str, validating: str | None
) -> None:
    """ezpz's logger prints ``[I][ezpz/examples/test:325:train_step]`` before each line
    (round 69): the module ``test`` is no test phase, so the line's loss is the train loss.
    The words of an evaluation in the message itself still make it one, and so does the
    function that logged it (``validate``)."""
    if validating is not None:
        by_function = _read_lines([_EZPZ.format(s=1, where=validating) + "iter=100 loss=0.07"])
        assert (by_function.loss, by_function.eval_loss) == (None, 0.07)
    train = _EZPZ.format(s=1, where=where) + "iter=100 loss=0.079676 accuracy=1.000000"
    report = _read_lines([train])
    assert (report.step, report.loss, report.eval_loss) == (100, 0.079676, None)
    test = _EZPZ.format(s=1, where=where) + "Test: iter=100 loss=0.079676"
    evaluated = _read_lines([test])
    assert (evaluated.loss, evaluated.eval_loss) == (None, 0.079676)


_NEMO_RL_BANNER = "\n{bar} Step {i}/{n} {bar}".replace("{bar}", "=" * 25)


def test_nemo_rls_results_are_read_under_its_step_banner() -> None:
    """NeMo RL (round 70) prints a banner per step, then its results one bullet each
    (nemo_rl/algorithms/dpo.py, grpo.py, ppo.py): ``  • loss: 0.6931`` (DPO), ``  • Loss:``
    (GRPO, SFT), ``  • Policy Loss:`` (PPO) is the train loss and ``    • Validation loss:``
    the eval loss; the other bullets (``sft_loss``, ``Critic Loss``, rewards, times) are no
    loss. PPO's ``▶ Step 1/4...`` counts its passes over one rollout, not the run's steps."""
    ppo = [
        *_NEMO_RL_BANNER.format(i=5, n=100).split("\n"),
        "▶ Preparing batch...",
        "▶ Step 1/4...",
        "▶ Step 2/4...",
        "",
        "📊 Training Results:",
        "  • Policy Loss: 0.0123",
        "  • Generation KL Error: 0.0010",
        "  • Critic Loss: 0.5000",
        "  • Avg Reward: 0.2500",
        "",
        "⏱️  Timing:",
        "  • Total step time: 12.30s",
    ]
    report = _read_lines(ppo)
    assert (report.step, report.max_steps, report.loss) == (5, 100, 0.0123)
    dpo = [
        *_NEMO_RL_BANNER.format(i=2, n=2).split("\n"),
        "▶ Taking a training step...",
        "📊 Validation Results for `default` set:",
        "    • Validation loss: 0.6645",
        "    • Validation sft_loss: 0.0000",
        "📊 Training Results:",
        "  • loss: 0.6931",
        "  • sft_loss: 0.0000",
        "  • preference_loss: 0.6931",
    ]
    report = _read_lines(dpo)
    assert (report.step, report.max_steps, report.loss, report.eval_loss) == (2, 2, 0.6931, 0.6645)
    assert _read_lines(["▶ Step 3/4..."]).step is None
    assert _read_lines(["Step 3/4... loss 0.5"]).step == 3  # the words of another loop


def test_mlx_lms_tokens_per_second_and_tokens_trained_are_read() -> None:
    """mlx-lm's report (round 70) ``Iter 69: Train loss 0.001, ..., Tokens/sec 584.980,
    Trained Tokens 37481.0, Peak mem 2.334 GB``: every rank's tokens per second and the tokens
    trained so far feed the run's throughput and token count, not custom metrics."""
    line = (
        "Iter 69: Train loss 0.001, Learning Rate 1.000e-05, It/sec 1.019, "
        "Tokens/sec 584.980, Trained Tokens 37481.0, Peak mem 2.334 GB"
    )
    report = _read_lines([line])
    assert (report.step, report.loss, report.tokens) == (69, 0.001, 37481)
    metrics = dict(report.metrics)
    assert metrics["tokens_per_second"] == 584.98
    assert "trained_tokens" not in metrics and "tokens_sec" not in metrics


_MEGATRON_ITERATION = (
    " [2025-10-06 03:27:07] iteration       10/      10 | consumed samples:         5120 | "
    "elapsed time per iteration (ms): 4647.8 | learning rate: 1.500000E-06 | global batch "
    "size:   512 | lm loss: 9.763827E+00 | loss scale: 1.0 | grad norm: 33.055 |"
)


def test_megatrons_end_and_its_test_set_are_read_as_such() -> None:
    """Megatron-Bridge's pretraining (round 71): ``[after training is done] datetime: ...``
    once train() returned is the run's end; the validation set's loss is the eval loss and
    the test set's after it (``validation loss at iteration 10 on test set``, or ``... at the
    end of training for test data`` before 2023) is the test loss, a metric of its own."""
    lines = [
        _MEGATRON_ITERATION,
        "[after training is done] datetime: 2025-10-06 03:27:07 ",
        " validation loss at iteration 10 on validation set | lm loss value: 9.647480E+00 | "
        "lm loss PPL: 1.548272E+04 |",
        " validation loss at iteration 10 on test set | lm loss value: 9.625707E+00 | "
        "lm loss PPL: 1.514926E+04 |",
    ]
    report = _read_lines(lines)
    assert (report.step, report.max_steps, report.loss) == (10, 10, 9.763827)
    assert (report.eval_loss, report.final) == (9.64748, True)
    assert dict(report.metrics)["test_loss"] == 9.625707
    old = " validation loss at the end of training for test data | lm loss value: 3.2E+00 |"
    assert _read_lines([_MEGATRON_ITERATION, old]).eval_loss is None
    # Before the end, and in other words, no end.
    assert not _read_lines([_MEGATRON_ITERATION]).final
    for line in (
        "[after training is done]",
        "[after training is done] datetime: 2025-10-06 03:27:07 then resuming",
        "[before the training loop] datetime: 2025-10-06 03:27:07",
    ):
        assert not _read_lines([_MEGATRON_ITERATION, line]).final, line
    # A script's own test set, the only evaluation it prints, is still its eval loss.
    assert _read_lines(["Test set: Average loss: 0.0329, Accuracy: 9890/10000 (99%)"]).eval_loss


def test_trainers_metrics_table_pasted_with_ideographic_spaces_is_no_loss() -> None:
    """A Trainer log pasted into a README (round 71), every line indented by two ideographic
    spaces (U+3000) and padded with them: the ``***** train metrics *****`` rows still sum
    up the run (``train_loss`` is its mean), so the last logged loss stands."""
    pad = "\u3000\u3000"
    lines = [
        pad + "{'loss': 0.6449, 'grad_norm': 10.27, 'learning_rate': 5.9e-11, 'epoch': 30.0}  ",
        pad + "***** train metrics *****  ",
        pad + "epoch\u3000\u3000\u3000\u3000 =\u3000\u3000   30.0  ",
        pad + "train_loss\u3000\u3000\u3000   =\u3000\u3000 1.0989  ",
    ]
    report = _read_lines(lines)
    assert (report.loss, report.epoch) == (0.6449, 30.0)
    assert _read_lines([pad + "loss\uff1a0.5234\uff0c lr\uff1a1e-4 step 3"]).loss == 0.5234


_WORD_LM = (
    "| epoch {e:3d} | {i:5d}/{n:5d} batches | lr 5.0000 | ms/batch 11.86 | loss  4.19 | "
    "ppl    65.84"
)


def test_pytorch_examples_word_language_model_is_read_to_its_end() -> None:
    """pytorch/examples' word_language_model and the PyTorch Transformer tutorial (round 72):
    ``| epoch 12 |  2800/ 2983 batches |`` is the batch's index in an epoch of 2983 (epochs
    from 1), ``| end of epoch 12 | ... | valid loss 4.81`` the eval loss, and ``| End of
    training | test loss 4.74 |`` the run's end with the test set's loss (no eval loss). The
    command that ran it (``--epochs 12``) gives the run's length; the epoch's end line puts
    the step at that epoch's end by the size the tool prints (round 131)."""
    lines = [
        "python main.py --cuda --epochs 12 --model LSTM --nhid 200 --bptt 35",
        _WORD_LM.format(e=11, i=2800, n=2983),
        "| end of epoch  11 | time: 36.76s | valid loss  4.82 | valid ppl   124.31",
        _WORD_LM.format(e=12, i=2800, n=2983),
        "| end of epoch  12 | time: 36.78s | valid loss  4.81 | valid ppl   123.27",
        "=" * 89,
        "| End of training | test loss  4.74 | test ppl   114.95",
    ]
    report = _read_lines(lines)
    assert (report.step, report.max_steps) == (12 * 2983, 12 * 2983)
    assert (report.loss, report.eval_loss, report.final) == (4.19, 4.81, True)
    assert dict(report.metrics)["test_loss"] == 4.74
    assert not _read_lines(lines[1:-1]).final
    assert _read_lines(lines[1:2]).max_steps is None  # the epochs nowhere said


@pytest.mark.parametrize(
    ("line", "epochs", "steps"),
    [
        ("Namespace(batch_size=20, bptt=35, epochs=12, log_interval=200, lr=20)", 12.0, None),
        ("INFO: Namespace(max_steps=None, num_train_epochs=3, seed=42)", 3.0, None),
        ("Namespace(max_steps=-1, epochs=0)", None, None),
        ("python main.py --cuda --epochs 12 --model LSTM", 12.0, None),
        ("$ torchrun --nproc_per_node 8 train.py --max-steps 5000 --num_train_epochs 3", 3.0, 5000),
        ("python3 train.py --max_iters=600000", None, 600000),
        ("python train.py --n-epochs 3 --total-steps 900", 3.0, 900),
        ("use --epochs 12 to train longer", None, None),
        ("python main.py --epochs12", None, None),
        ("Namespace(my_epochs=12, warmup_epochs=5)", None, None),
    ],
)
def test_a_runs_length_is_read_from_the_arguments_it_echoes(
    line: str, epochs: float | None, steps: int | None
) -> None:
    """argparse's ``Namespace(...)`` and the command that started the run (round 72): the
    arguments that plainly say its length, as whole numbers; other words, other names, or
    Trainer's "no limit" (``max_steps=-1``) say none."""
    report = _read_lines([line])
    assert (report.max_epochs, report.max_steps) == (epochs, steps)


@pytest.mark.parametrize(
    ("line", "epochs", "steps"),
    [
        ("Training: 2022-05-05 03:02:23,624-: total_step               3318320", None, 3318320),
        ("Training: 2022-05-05 03:02:23,624-: num_epoch                20", 20.0, None),
        ("max_steps: 5000", None, 5000),
        ("  num_epochs: 3", 3.0, None),
        ("step 10 | loss 1.2 | epochs: 3", None, None),
        ("Saving at max_steps  5000 and later", None, None),
        ("my_total_step               3318320", None, None),
        ("warmup_steps             2000", None, None),
        ("total_step               0", None, None),
    ],
)
def test_a_runs_length_is_read_from_a_config_dumped_a_setting_a_line(
    line: str, epochs: float | None, steps: int | None
) -> None:
    """InsightFace's arcface_torch (round 108) logs its config a setting a line, the name
    padded to a column: its ``total_step`` is the run's length; so is a YAML echo's line of
    the setting alone. A pair among a line's others, another name, or 0 says none."""
    report = _read_lines([line])
    assert (report.max_epochs, report.max_steps) == (epochs, steps)


def test_nanot5s_lines_and_log_txts_train_lr_are_read() -> None:
    """nanoT5 (round 73) writes ``[train] Step 53050 out of 80000 | Loss --> 1.822 | Lr -->
    0.003 |`` (its "-->" between a name and its value; "out of" between the step and the
    total), and ``[eval] Step ...`` its evaluation; DeiT's and MAE's log.txt name the
    learning rate ``train_lr``."""
    stamp = "[2024-08-11 14:43:51,226][Main][INFO] - "
    train = stamp + "[train] Step 53050 out of 80000 | Loss --> 1.822 | Lr --> 0.003 |"
    report = _read_lines([train])
    assert (report.step, report.max_steps, report.loss, report.learning_rate) == (
        53050,
        80000,
        1.822,
        0.003,
    )
    evaluated = _read_lines([train, stamp + "[eval] Step 53050 out of 80000 | Loss --> 2.101 |"])
    assert (evaluated.loss, evaluated.eval_loss) == (1.822, 2.101)
    # An arrow after a pair's value is no pair: "lr 0.1 --> 0.01" keeps the rate printed first.
    changed = _read_lines(["step 5 | lr 0.1 --> 0.01 | loss 0.5"])
    assert (changed.step, changed.learning_rate, changed.loss) == (5, 0.1, 0.5)
    assert _read_lines(['{"train_lr": "0.000089", "train_loss": "1.199931"}']).learning_rate == (
        0.000089
    )


def test_ms_swifts_stdout_dicts_give_the_step_and_total() -> None:
    """ms-swift logs each step's dict to stdout as a Python repr, its step and total one
    string (``'global_step/max_steps': '13/176'``), as its logging.jsonl writes them in
    JSON: both forms give the step and the total; a string of another shape gives neither."""
    repr_line = (
        "{'loss': 0.65555829, 'memory(GiB)': 60.09, 'epoch': 0.15, "
        "'global_step/max_steps': '13/176', 'percentage': '7.39%'}"
    )
    json_line = repr_line.replace("'", '"')
    for line in (repr_line, json_line):
        report = _read_lines([line])
        assert (report.step, report.max_steps, report.loss) == (13, 176, 0.65555829), line
        assert "global_step/max_steps" not in dict(report.metrics)
    odd = repr_line.replace("'13/176'", "'13 of 176'")
    assert _read_lines([odd]).step is None


def test_composers_headers_by_the_unit_of_its_duration() -> None:
    """Composer's ConsoleLogger heads each block by the run's max_duration unit
    (composer/loggers/console_logger.py): ``[batch=10/100]`` the run's step and total;
    ``[epoch=2][batch=3/5]`` the 1-based epoch and its batches done (step 8, the 5 no run's
    total); ``[epoch=3][batch=17]`` (no epoch length) no step; ``[token=t/T]`` the share of
    the run done and no step. The block's ``time/`` lines (taken when the batch began, one
    behind the header) are not read; an evaluation's ``LanguageCrossEntropy`` is its loss."""
    loss = "\t Train loss/train/total: 1.5"
    epochs = _read_lines(["[epoch=2][batch=3/5]:", "\t Train time/batch: 7", loss])
    assert (epochs.step, epochs.max_steps, epochs.epoch, epochs.loss) == (8, None, 1.6, 1.5)
    unknown = _read_lines(["[epoch=3][batch=17]:", loss])
    assert (unknown.step, unknown.loss) == (None, 1.5)
    tokens = _read_lines(["[token=2048000/8000000]:", "\t Train time/batch: 250", loss])
    assert (tokens.step, tokens.progress, tokens.loss) == (None, 0.256, 1.5)
    evaluated = _read_lines(
        [
            "[batch=10/100]:",
            loss,
            "[Eval batch=10/10] Eval on eval data:",
            "\t Eval metrics/eval/LanguageCrossEntropy: 2.7",
            "\t Eval metrics/eval/LanguagePerplexity: 14.9",
        ]
    )
    assert (evaluated.step, evaluated.max_steps, evaluated.loss) == (10, 100, 1.5)
    assert evaluated.eval_loss == 2.7
    # The block quoted as a Markdown list (round 266: Composer's issue 2357).
    bullets = _read_lines(
        ["- Train memory/allocated_mem: 6.8051", "- Train loss/train/total: 11.6525"]
    )
    assert (bullets.step, bullets.loss) == (None, 11.6525)
    assert _read_lines(["* Eval metrics/eval/LanguageCrossEntropy: 2.7"]).eval_loss == 2.7
    # A share of no total is none.
    assert _read_lines(["[token=5/0]:", loss]).progress is None


def test_timms_validation_result_and_its_end_are_read() -> None:
    """timm's train.py: validate() logs ``Test: [{batch_idx:>4d}/{last_idx}] ... Loss:
    {val:>7.3f} ({avg:>6.3f})``; at its last batch (``[  78/78]``) the running mean is the
    evaluation's loss, before it none is. ``*** Best metric: ... (epoch N)``, logged once the
    epoch loop is over, ends the run."""
    train = "Train: 3 [ 311/312 (100%)]  Loss: 3.456 (3.512)  Time: 0.331s,  773.4/s  LR: 1e-03"
    test = "Test: [{i:>4d}/78]  Time: 0.2 (0.3)  Loss:  0.900 ( 0.950)  Acc@1: 78.0 (79.1)"
    midway = _read_lines([train, test.format(i=40)])
    assert (midway.step, midway.loss, midway.eval_loss) == (3 * 312 + 311, 3.456, None)
    done = _read_lines([train, test.format(i=78), "*** Best metric: 80.126 (epoch 287)"])
    assert (done.loss, done.eval_loss, done.final) == (3.456, 0.95, True)
    assert not _read_lines([train, "*** Best metric: 80.126 (epoch 287) so far"]).final


@pytest.mark.parametrize(
    ("end", "finished"),
    [
        ("Training completed. Do not forget to share your model on huggingface.co/models =)", True),
        ("[INFO|trainer.py:2622] >> Training completed. Do not forget to share it =)", False),
        ("2021-01-01 00:00:00 | INFO | fairseq_cli.train | done training in 1234.5 seconds", True),
        ("2021-01-01 00:00:00 | INFO | my_script | done training in 1234.5 seconds", False),
        ("[titan] 2025-01-01 12:00:00,000 - root - INFO - Training completed", True),
        ("2025-01-01 12:00:00,000 - root - INFO - Training completed", False),
        ("Training completed", False),
        (
            "(TaskRunner pid=1) (\"Final validation metrics: {'val-core/gsm8k/reward/mean@1': 0.7}\")",
            True,
        ),
        ("(TaskRunner pid=1) 'Final validation metrics: None'", True),
        ("Final validation metrics will be computed at the end", False),
        (
            "[10/02 12:00:01 d2.engine.hooks]: Total training time: 7:25:08 (0:06:01 on hooks)",
            False,
        ),
        (
            "2022-09-21 13:21:05,188 sagemaker-training-toolkit INFO     Reporting training SUCCESS",
            True,
        ),
        ("Reporting training SUCCESS", True),
        (
            "2022-09-21 13:21:05,188 sagemaker-training-toolkit ERROR    Reporting training FAILURE",
            False,
        ),
        ("Reporting training SUCCESS to the dashboard every 100 steps", False),
    ],
)
def test_the_tools_own_closing_lines_end_the_run(end: str, finished: bool) -> None:
    """Transformers' Trainer, fairseq-train, torchtitan and verl each log one sentence once their
    loop is over (never on the way out of an exception), SageMaker's training toolkit once the
    entry point returned 0 (round 266): each ends the run; the same words
    under another logger, alone, or inside another sentence do not, nor does detectron2's
    "Total training time" (logged in a ``finally:``, after a crash too)."""
    step = "step:99 - actor/pg_loss:0.01 - training/global_step:99"
    assert _read_lines([step, end]).final is finished


def test_lightnings_checkpoint_line_gives_a_monitored_eval_loss() -> None:
    """Lightning's ``ModelCheckpoint(verbose=True)`` names the value it monitors: where that
    is an evaluation's loss (NeMo 2's ``'val_loss' reached 6.90000``) it is the eval loss;
    a train loss or an accuracy it monitors is no eval loss."""
    line = "Epoch 0, global step 9: '{name}' reached {v} (best {v}), saving model to '/c/x.ckpt' as top 3"
    report = _read_lines([line.format(name="val_loss", v="6.90000")])
    assert (report.checkpoint_step, report.eval_loss) == (9, 6.9)
    for name in ("train_loss", "val_acc"):
        other = _read_lines([line.format(name=name, v="0.91000")])
        assert (other.checkpoint_step, other.eval_loss, other.loss) == (9, None, None), name


_MLLOG = ':::MLLOG {{"namespace": "", "time_ms": 1715850093688, "event_type": "{kind}", "key": "{key}", "value": {value}, "metadata": {{"file": "custom_callbacks.py", "lineno": 195{meta}}}}}'


def test_mlperf_compliance_log_gives_the_loss_the_target_metric_and_the_end() -> None:
    """MLPerf's ``:::MLLOG`` events (mlcommons/logging's mllog): ``train_loss`` is the loss with
    its metadata's learning rate (AMD's Primus form, from its MLPerf reproduction guide),
    ``eval_accuracy`` a custom metric (a perplexity or an accuracy by benchmark, never an eval
    loss), and ``run_stop`` ends the run only with status success; no step is read from the
    sample counts, behind a rank's prefix too."""
    loss = _MLLOG.format(
        kind="POINT_IN_TIME",
        key="train_loss",
        value="11.846",
        meta=', "samples_count": 0, "lr": 3.125e-06',
    )
    target = _MLLOG.format(
        kind="POINT_IN_TIME", key="eval_accuracy", value="0.925", meta=', "samples_count": 3072'
    )
    report = _read_lines(["0: " + loss, target])
    assert (report.loss, report.learning_rate, report.step, report.eval_loss) == (
        11.846,
        3.125e-06,
        None,
        None,
    )
    assert dict(report.metrics)["eval_accuracy"] == 0.925
    assert report.final is False

    def stop(status: str) -> str:
        meta = f', "status": "{status}"'
        return _MLLOG.format(kind="INTERVAL_END", key="run_stop", value="null", meta=meta)

    assert _read_lines([loss, stop("success")]).final is True
    for status in ("aborted", "abort", "fail"):
        assert _read_lines([loss, stop(status)]).final is False, status


@pytest.mark.parametrize(
    "line",
    [
        ':::MLLOG {"key": "train_loss", "value": 1.5',  # cut off
        ':::MLLOG ["train_loss", 1.5]',
        ':::MLLOG {"key": "train_loss", "value": true}',
        ':::MLLOG {"key": "train_loss", "value": "1.5"}',
        ':::MLLOG {"key": "run_stop", "value": null, "metadata": "success"}',
        ':::MLLOG {"key": "tracked_stats", "value": [1.9], "metadata": {"step": 1536}}',
    ],
)
def test_mlperf_events_that_say_nothing_read_nothing(line: str) -> None:
    """A cut or malformed event, a bool or a string for a number, a status outside the
    metadata: nothing is read, and nothing else reads the line."""
    report = _read_lines([line])
    assert (report.loss, report.final, report.metrics, report.step) == (None, False, (), None)


def test_mlperf_nan_loss_is_kept_as_divergence() -> None:
    """A NaN loss (Python's json writes it bare) is the divergence signal, kept as such."""
    line = _MLLOG.format(kind="POINT_IN_TIME", key="train_loss", value="NaN", meta="")
    loss = _read_lines([line]).loss
    assert loss is not None and loss != loss


_ORBIT_PREFIX = "I0324 07:55:20.597360 140348344015936 controller.py:479] "


def test_orbit_lines_give_the_step_the_train_loss_and_the_evaluations_loss() -> None:
    """Orbit's controller (TensorFlow Model Garden): the one-line form behind absl's prefix;
    ``training until step N`` is this call's stop, the next evaluation's step under
    train_and_evaluate, never the run's total; an evaluation's losses are its eval loss and
    its other values the evaluation's own metrics."""
    lines = [
        "train | step:    100 | training until step 200...",
        _ORBIT_PREFIX
        + "train | step:    200 | steps/sec:    2.1 | output: {'train_accuracy': 0.5, 'train_loss': 2.5}",
        "eval | step:    200 | running 11 steps of evaluation...",
        "eval | step:    200 | eval time:   48.1 | output: {'accuracy': 0.7, 'validation_loss': 1.9}",
    ]
    report = _read_lines(lines)
    assert (report.step, report.max_steps, report.loss, report.eval_loss) == (200, None, 2.5, 1.9)
    metrics = dict(report.metrics)
    assert (metrics["train_accuracy"], metrics["eval_accuracy"]) == (0.5, 0.7)
    assert "training_until_step" not in metrics


def test_orbit_pretty_printed_output_is_read_in_its_block_only() -> None:
    """pprint's entries under a header that ends in ``output:`` are that step's (an
    evaluation's total_loss is its eval loss, never the train loss); the same entries under no
    such header (a config dict printed at start) or after the dict closed are nobody's."""
    train = [
        "train | step:    188 | steps/sec:    0.1 | output:       ",
        "    {'learning_rate': 0.009999976,      ",
        "     'total_loss': 0.009622246,   ",
        "     'training_loss': 0.009622246} ",
    ]
    evaluation = [
        "eval | step:    188 | eval time:   48.1 | output:            ",
        "    {'gap': 0.0286,                         ",
        "     'total_loss': 0.01632894,  ",
        "     'validation_loss': 0.01632894}",
    ]
    report = _read_lines(train + evaluation)
    assert (report.step, report.loss, report.eval_loss) == (188, 0.009622246, 0.01632894)
    assert report.learning_rate == 0.009999976
    assert dict(report.metrics)["eval_gap"] == 0.0286
    stray = ["    {'learning_rate': 0.1,", "     'total_loss': 3.0}"]
    assert _read_lines(stray).loss is None
    after = _read_lines([*train, "     'total_loss': 7.0,"])
    assert after.loss == 0.009622246


def test_time_history_gives_the_global_step_and_the_example_rate() -> None:
    """keras_utils' TimeHistory (Model Garden): the later bound of ``between steps`` is the
    global step; its rate where a number is printed (a README's ``xx`` is none)."""
    line = "I0203 02:48:47.790128 139660941027136 keras_utils.py:145] TimeHistory: {t} seconds, {r} examples/second between steps 2200 and 2300"
    report = _read_lines([line.format(t="15.58", r="6572.89")])
    assert (report.step, dict(report.metrics)["examples_per_second"]) == (2300, 6572.89)
    placeholder = _read_lines([line.format(t="xx", r="xxxx")])
    assert (placeholder.step, placeholder.metrics) == (2300, ())


_CENTERNET = "ctdet/coco_dla |####      | {phase}: [{e}][{i}/{n}]|Tot: 0:00:55 |ETA: 2:33:53 |loss {loss} |hm_loss 57.9812 |wh_loss 20.8580 |off_loss 0.2626 |Data 0.002s(0.008s) |Net 0.653s"


def test_centernets_bar_gives_the_global_step_and_its_validation_the_eval_loss() -> None:
    """CenterNet's Bar (FairMOT, CenterTrack): the 1-based epoch times the printed epoch size
    plus the batch index; the first stat is the total loss; a ``val`` phase gives the eval
    loss and no step; frames a terminal overwrote with ``\\r`` read as their last."""
    train = _CENTERNET.format(phase="train", e=3, i=84, n=100, loss="60.3296")
    report = _read_lines([train])
    assert (report.step, report.loss, report.eval_loss) == (284, 60.3296, None)
    assert dict(report.metrics)["hm_loss"] == 57.9812
    val = _CENTERNET.format(phase="val", e=3, i=5, n=6, loss="92.2464")
    after = _read_lines([train, val])
    assert (after.step, after.loss, after.eval_loss) == (284, 60.3296, 92.2464)
    frames = "\r".join(
        _CENTERNET.format(phase="train", e=1, i=i, n=100, loss=f"{9 - i / 10:.4f}")
        for i in (7, 8, 9)
    )
    assert (_read_lines([frames]).step, _read_lines([frames]).loss) == (9, 8.1)


def test_centernets_bar_without_its_stats_or_with_a_count_past_the_epoch_reads_no_step() -> None:
    """Only the Bar's own shape is read: a count past its epoch's size gives no step (the
    loss still), and a ``|Tot:`` with no stats after it nothing."""
    past = _CENTERNET.format(phase="train", e=1, i=500, n=100, loss="1.5")
    assert (_read_lines([past]).step, _read_lines([past]).loss) == (None, 1.5)
    bare = "mot/default |###   | train: [1][5/100]|Tot: 0:00:01 |ETA: 0:01:00 |Data 0.1s"
    assert (_read_lines([bare]).step, _read_lines([bare]).loss) == (None, None)


def test_a_value_glued_to_the_next_capitalized_word_is_read() -> None:
    """MindSpore's ResNet benchmark monitor prints the time right after the loss with no space
    (``loss is 7.078993Epoch time``): the loss is the number, which a lower-case word glued on
    (``5abcde``, a name, not a value) never is."""
    line = (
        "epoch: [0/1] step: [40/5004], loss is 7.078993Epoch time: 3438.972 ms, fps: 1488 img/sec."
    )
    report = _read_lines([line])
    assert (report.step, report.max_steps, report.loss) == (40, 5004, 7.078993)
    assert _read_lines(["step 3 loss 5abcde"]).loss is None


def test_a_value_in_angle_brackets_after_its_key_is_read_a_comparison_is_not() -> None:
    """Apache MADlib prints ``Loss: <0.0995580174594>``: the number in the brackets is the
    value; ``loss < 0.5`` (a condition a script states) gives no loss."""
    report = _read_lines(["INFO:  Iteration: 8, Loss: <0.0995580174594>"])
    assert (report.step, report.loss) == (8, 0.0995580174594)
    assert _read_lines(["Iteration: 3, stop when loss < 0.5"]).loss is None


def test_an_ascii_framed_progress_table_is_read_as_a_table() -> None:
    """Turi Create's toolkits frame their progress table in ASCII (``+---+`` borders, ``|``
    between cells): rows under the header are read as the unframed table's; a framed row
    under no header, or a framed key-value table (Stable Baselines'), gives no step."""
    border = "+-----------+---------------+------------------------+"
    header = "| Iteration | Training Loss | Elapsed Time (seconds) |"
    rows = [
        "| 1         | 2.931         | 17.959                 |",
        "| 4         | 2.388         | 85.326                 |",
    ]
    report = _read_lines([border, header, border, rows[0], border, rows[1], border])
    assert (report.step, report.loss, report.metrics) == (4, 2.388, ())
    assert _read_lines(rows).step is None
    stable_baselines = [
        "| fps                | 142           |",
        "| nupdates           | 782           |",
    ]
    assert _read_lines(stable_baselines).step is None


def test_kaldis_iteration_line_counts_the_iterations_done_of_all() -> None:
    """Kaldi's nnet3 trainers print the 0-based iteration starting and the last one's index
    (``Iter: 27/59``, 45.0 % complete): 27 done of 60. The same words without Kaldi's epoch
    and share are any loop's ``iter i/n``."""
    line = "2022-03-25 12:08:20,179 [steps/nnet3/chain/train.py:535 - train - INFO ] Iter: 27/59   Jobs: 1   Epoch: 9.00/20.0 (45.0% complete)   lr: 0.000355   "
    report = _read_lines([line])
    assert (report.step, report.max_steps, report.epoch, report.max_epochs) == (27, 60, 9.0, 20.0)
    assert report.learning_rate == 0.000355
    assert (
        _read_lines(["Iter: 27/59 loss 2.5"]).step,
        _read_lines(["Iter: 27/59 loss 2.5"]).max_steps,
    ) == (27, 59)


def test_a_sentences_next_clause_is_no_part_of_a_key() -> None:
    """``... learning rate is 0.0017 and shrink value is 0.97.`` (Kaldi): the second value's
    key is ``shrink value``; ``accuracy 0.9 and loss 0.3`` gives the loss."""
    line = "On iteration 220, learning rate is 0.00170658356495 and shrink value is 0.965868328701."
    assert dict(_read_lines([line]).metrics) == {"shrink_value": 0.965868328701}
    assert _read_lines(["step 5 accuracy 0.9 and loss 0.3"]).loss == 0.3


def test_tacotron_lines_give_the_iteration_loss_validation_and_save() -> None:
    """NVIDIA's Tacotron 2 puts the iteration between the loss's name and its value; its
    validation line is the eval loss and its save line the checkpoint's step. Another
    script's "Train loss 3" with no Grad Norm after it is not Tacotron's."""
    lines = [
        "Train loss 64000 0.302735 Grad Norm 0.958112 4.36s/it",
        "Validation loss 64000:  0.323265  ",
        "Saving model and optimizer state at iteration 64000 to /out/checkpoint_64000",
        "Train loss 64001 0.314525 Grad Norm 0.615372 4.37s/it",
    ]
    report = _read_lines(lines)
    assert (report.step, report.loss, report.eval_loss, report.grad_norm) == (
        64001,
        0.314525,
        0.323265,
        0.615372,
    )
    assert report.checkpoint_step == 64000
    assert _read_lines(["Train loss 3 is high"]).step is None


def test_a_bare_step_beside_a_larger_iteration_and_a_late_epoch_is_the_epochs_batch() -> None:
    """``epoch : 231  iter : 120160  step : 502`` (an SSD trainer): the step counts the
    epoch's batches, the iteration is the run's; LitGPT's ``Epoch 34 | iter 3051000 step
    610200`` counts micro-batches as iterations (610200 is no epoch's batch) and a first
    epoch cannot tell the two apart: the step stands there."""
    assert _read_lines(["epoch :  231  iter :  120160  step :  502  loss :  2.07"]).step == 120160
    litgpt = "Epoch 34 | iter 3051000 step 610200 | loss train: 2.857, val: 2.861 | iter time: 111.49 ms (step)"
    assert _read_lines([litgpt]).step == 610200
    assert (
        _read_lines(
            ["Epoch 1 | iter 52 step 1 | loss train: 3.725, val: n/a | iter time: 46.98 ms"]
        ).step
        == 1
    )


def test_neuralclassifier_sets_loss_lines_are_read_by_the_set_before_them() -> None:
    """NeuralClassifier prints each set's scores and then ``Loss is: x.``: the train set's is
    the loss, the validation set's the eval loss, the test set's neither; a ``Loss is:`` line
    under no set's header is nobody's."""
    lines = [
        "Train performance at epoch 2 is precision: 0.500000, recall: 0.400000, fscore: 0.444444, macro-fscore: 0.300000, right: 5, predict: 10, standard: 12.",
        "Loss is: 0.185657.",
        "Validate performance at epoch 2 is precision: 0.450000, recall: 0.350000, fscore: 0.393750, macro-fscore: 0.250000, right: 4, predict: 9, standard: 11.",
        "Loss is: 0.185401.",
        "test performance at epoch 2 is precision: 0.400000, recall: 0.300000, fscore: 0.342857, macro-fscore: 0.200000, right: 3, predict: 8, standard: 10.",
        "Loss is: 0.999999.",
        "Epoch 2 cost time: 273 second",
    ]
    report = _read_lines(lines)
    assert (report.loss, report.eval_loss, report.step) == (0.185657, 0.185401, None)
    metrics = dict(report.metrics)
    assert (metrics["precision"], metrics["eval_precision"]) == (0.5, 0.45)
    assert "right" not in metrics and "standard" not in metrics
    assert _read_lines(["Loss is: 0.5."]).loss is None


def test_the_cifar10_tutorials_counts_and_its_end() -> None:
    """PyTorch's CIFAR-10 tutorial: ``[1, 12000] loss: 1.476`` is the first epoch's 12000th
    batch (the step); in the second epoch the count starts over and the epoch's size was never
    printed, so the step is unknown from there (not the first epoch's, which would look
    stalled); ``Finished Training`` alone on its line ends the run, inside another sentence
    it does not."""
    first = _read_lines(["[1,  2000] loss: 2.170", "[1, 12000] loss: 1.476"])
    assert (first.step, first.loss) == (12000, 1.476)
    second = _read_lines(["[1, 12000] loss: 1.476", "[2,  6000] loss: 1.462", "Finished Training"])
    assert (second.step, second.loss, second.final) == (None, 1.462, True)
    assert second.epoch == 1.5  # placed by the first epoch's last count: the run moves on
    assert _read_lines(["[1, 2000] loss: 2.1", "Finished Training epoch 1 of 5"]).final is False


def test_a_csv_log_is_read_as_a_table_and_its_empty_cells_are_no_values() -> None:
    """A script appending CSV rows (``step,loss,lr,...``) is a table with commas for gaps.
    Lightning's CSVLogger leaves the cells a row does not log empty (``0,49,0.71,,``): such a
    row is no row (an empty cell is never a NaN loss); a sentence with commas is no row."""
    csv = [
        "step,loss,lr,tokens_per_sec,eta_seconds,timestamp",
        "11508,2.4971,1.99e-04,6898.26,8265013,1773304246.25",
        "11509,2.4995,1.99e-04,7065.68,8069134,1773304283.35",
    ]
    report = _read_lines(csv)
    assert (report.step, report.loss) == (11509, 2.4995)
    assert "timestamp" not in dict(report.metrics) and "eta_seconds" not in dict(report.metrics)
    lightning = ["epoch,step,train_loss,val_loss", "0,49,0.7132,", "0,49,,0.6911"]
    assert (_read_lines(lightning).loss, _read_lines(lightning).eval_loss) == (None, None)
    assert _read_lines(["step,loss", "loaded 10,000 samples, 3 files"]).step is None


_SKLEARN = Path(__file__).parent / "fixtures" / "logs" / "sklearn"


@pytest.mark.parametrize(
    "name, step, loss",
    [
        ("sklearn-mlp-no-improvement", 138, 0.26398826),
        ("sklearn-mlp-max-iter", 400, 0.04179212),
        ("sklearn-sgd-verbose", None, 0.299079),
    ],
)
def test_real_scikit_learn_fits_are_read_and_never_finished(
    name: str, step: int | None, loss: float
) -> None:
    """Three fits of scikit-learn 1.9.1 run on this machine, their output as printed (first
    and last lines): MLPClassifier's ``Iteration N, loss = x`` (stopped on tol with ``...
    Stopping.``, or run to max_iter with a ConvergenceWarning), SGDClassifier's ``-- Epoch N``
    with a ``Total training time`` after every epoch. None is finished: a fit's end is no
    job's (cross-validation fits again), and max_iter's total, printed only in the closing
    warning, is not read, since read it would finish the run."""
    report = _read_lines((_SKLEARN / f"{name}.log").read_text().splitlines())
    assert (report.step, report.loss, report.max_steps, report.final) == (step, loss, None, False)


def test_starspace_reads_the_runs_share_not_the_epochs() -> None:
    """StarSpace's ``Epoch: 100.0%`` ends an epoch; the share in parentheses is the run's: 20 %
    after the first of five epochs (no finish), 100 % after the last."""
    line = "Epoch: 100.0%  lr: {lr}  loss: {loss}  eta: 0h19m  tot: 0h4m53s  ({share}%)"
    first = _read_lines([line.format(lr="0.008006", loss="0.048233", share="20.0")])
    assert (first.loss, first.learning_rate, first.progress, first.final) == (
        0.048233,
        0.008006,
        0.2,
        False,
    )
    last = _read_lines([line.format(lr="0.000027", loss="0.048544", share="100.0")])
    assert (last.progress, last.final) == (1.0, True)


def test_an_inferencing_bar_is_an_evaluation_never_the_training_bar() -> None:
    """YOLOv6 (meituan/YOLOv6#614) draws ``Inferencing model in train datasets.: 100%|...| 11/11``
    after each epoch; with the training bar's frames cut in the paste it was the only bar
    left, and read as the run at 11 of 11 steps, finished. Any ``infer`` word makes a bar an
    evaluation's (as ``inference`` and ``infer`` did)."""
    bar = "Inferencing model in train datasets.: 100%|█████| 11/11 [00:01<00:00,  9.37it/s]"
    report = _read_lines([bar])
    assert (report.step, report.max_steps, report.progress, report.final) == (
        None,
        None,
        None,
        False,
    )


def test_chainers_print_report_reads_its_iteration_and_its_evaluators_loss() -> None:
    """Chainer's PrintReport: ``main/loss`` is the optimizer's target's loss (the training
    loss), ``validation/main/loss`` the Evaluator's, and an ``iteration`` column beside the
    epoch the updater's step. Without an iteration column no step is read; a row that lost a
    cell (its epoch, where the ProgressBar redrew over it) is no row."""
    header = "epoch       iteration   main/loss   validation/main/loss  main/accuracy  elapsed_time"
    row = "2           712         0.0748937   0.0690557             0.977333       10.951"
    report = _read_lines([header, row])
    assert (report.step, report.loss, report.eval_loss) == (712, 0.0748937, 0.0690557)
    by_epoch = _read_lines(
        [header.replace("iteration   ", ""), "2  0.0748937  0.0690557  0.98  10.9"]
    )
    assert (by_epoch.step, by_epoch.loss, by_epoch.eval_loss) == (None, 0.0748937, 0.0690557)
    shifted = "           0.22397     0.109173              0.9321         23.6282"
    assert _read_lines([header, shifted]).loss is None


def test_chainers_progress_bar_status_is_the_step_and_its_length_the_end() -> None:
    """ProgressBar's ``{iteration} iter, {epoch} epoch / {length} {unit}s``: the step and the
    epochs done; the training length is the stop trigger's, so reaching it is the end (the
    trainer leaves its loop there and the bar erases itself). Before it, no end; a length in
    iterations is the run's total."""
    last = _read_lines(["      6000 iter, 20 epoch / 20 epochs"])
    assert (last.step, last.epoch, last.max_epochs, last.final) == (6000, 20.0, 20, True)
    under_way = _read_lines(["       200 iter, 0 epoch / 20 epochs"])
    assert (under_way.step, under_way.final) == (200, False)
    by_iterations = _read_lines(["      2500 iter, 3 epoch / 100000 iterations"])
    assert (by_iterations.step, by_iterations.max_steps, by_iterations.final) == (
        2500,
        100000,
        False,
    )
    assert _read_lines(["    100000 iter, 41 epoch / 100000 iterations"]).final is True
    assert _read_lines(["saw 6000 iter, 20 epoch / 20 epochs of data"]).final is False


def test_a_record_naming_its_value_is_read_under_that_name() -> None:
    """caikit-nlp's and fms-hf-tuning's training_logs.jsonl write one named value per record
    (fms-hf-tuning's FileLoggingCallback: ``training_loss`` or ``validation_loss``, its keys
    sorted). The name goes through the vocabulary; another object with a "name" and a "data"
    is read as it is."""
    caikit = '{"name": "loss", "data": {"epoch": 0.01, "step": 2, "value": 4.4904, "timestamp": "2023-09-26T19:25:19.316729"}}'
    report = _read_lines([caikit])
    assert (report.step, report.loss, report.epoch) == (2, 4.4904, 0.01)
    fms = [
        '{"data": {"epoch": 0.5, "step": 10, "timestamp": "2024-06-11T10:00:00", "value": 2.31}, "name": "training_loss"}',
        '{"data": {"epoch": 1.0, "step": 20, "timestamp": "2024-06-11T10:01:00", "value": 2.05}, "name": "validation_loss"}',
    ]
    report = _read_lines(fms)
    assert (report.step, report.loss, report.eval_loss) == (20, 2.31, 2.05)
    other = '{"name": "resnet", "data": {"path": "/data"}, "step": 3, "loss": 1.5}'
    assert (_read_lines([other]).step, _read_lines([other]).loss) == (3, 1.5)


def test_equibinds_epoch_and_iteration_count_within_a_one_based_epoch() -> None:
    """EquiBind's trainer and its kin print ``[Epoch 12; Iter    85/   85]``: the 1-based
    epoch and its batches, so the run's step is 11 x 85 + 85, never the count alone (a
    resumed run's first line is a late epoch's). A terminal pane's border after the value
    is no part of it."""
    line = "[Epoch 12; Iter    85/   85] train: loss: 0.0166987" + " " * 40 + "│"
    report = _read_lines([line])
    assert (report.step, report.epoch, report.loss) == (1020, 12.0, 0.0166987)
    assert _read_lines(["[Epoch 1; Iter    20/   85] train: loss: 0.5"]).step == 20
    # After the loop, the evaluation of the best checkpoint: the trainer's end.
    end = _read_lines([line, "Statistics on  val_best_checkpoint", "mae: 1.1165286655164222"])
    assert end.final is True
    assert _read_lines([line, "Statistics on  val_best_checkpoint" + " " * 9 + "│"]).final is True
    assert _read_lines([line, "Statistics on  test"]).final is False


def test_trimodal_ep_lines_count_within_a_zero_based_epoch_of_unprinted_size() -> None:
    """The gesture trainers after Trimodal-Context print ``EP {epoch} ({iter_idx + 1})``
    (``for epoch in range(args.epochs)``) and never the epoch's size: the count is the step
    in epoch 0 only; later, its loss is read and no step. ``[VAL] loss`` is the validation's."""
    first = _read_lines(
        ["2023-04-03 19:20:01,000: EP 0 (156) |  5m 1s, 584 samples/s | loss: 40.1, KLD: 0.01, "]
    )
    assert (first.step, first.loss) == (156, 40.1)
    later = _read_lines(
        [
            "2023-04-03 20:28:48,844: [VAL] loss: 0.114, joint mae: 0.03963, FGD: 170.022 / 79.7s",
            "2023-04-03 20:38:10,138: EP 4 (468) |  77m 28s, 491 samples/s | loss: 33.686, KLD: 0.097, ",
        ]
    )
    assert (later.step, later.loss, later.eval_loss) == (None, 33.686, 0.114)
    assert _read_lines(["[VAL] accuracy: 0.9"]).eval_loss is None


def test_a_value_named_before_the_step_it_is_at_is_read_at_that_step() -> None:
    """TensorFlow's word2vec tutorial and its copies: ``Average loss at step  2000 :
    118.85819623184204``; the Udacity assignments' ``Minibatch loss at step 500: 1.23``.
    The value is the loss at that step, never the step's number; a sentence is no such line."""
    report = _read_lines(
        [
            "Average loss at step  0 :  287.22259521484375",
            "Average loss at step  2000 :  118.85819623184204",
        ]
    )
    assert (report.step, report.loss) == (2000, 118.85819623184204)
    assert _read_lines(["Minibatch loss at step 500: 1.230"]).loss == 1.23
    assert _read_lines(["Saved the model at step 500: ok"]).step is None


def test_fasttexts_progress_line_is_the_runs_share_and_its_last_the_end() -> None:
    """fastText prints the share of all the words to process (its run's progress), the rate,
    the learning rate and the average loss (``loss:`` before 0.9); its 100.0 % is printed
    after the training threads joined: the end. No step is read."""
    mid = _read_lines(
        [
            "Progress: 41.3% words/sec/thread: 1767038 lr: 0.058725 avg.loss: 0.831745 ETA:   0h11m 2s"
        ]
    )
    assert (mid.progress, mid.loss, mid.learning_rate, mid.step, mid.final) == (
        0.413,
        0.831745,
        0.058725,
        None,
        False,
    )
    old = _read_lines(
        ["Progress: 0.1%  words/sec/thread: 1765863  lr: 0.099877  loss: 1.385701  eta: 0h11m"]
    )
    assert (old.progress, old.loss) == (0.001, 1.385701)
    end = _read_lines(
        [
            "Progress: 100.0% words/sec/thread:  992044 lr:  0.000000 avg.loss:  0.401522 ETA:   0h 0m 0s"
        ]
    )
    assert (end.progress, end.final) == (1.0, True)
    assert _read_lines(["Progress: 41.3% done"]).progress is None


def test_a_rate_printed_after_its_number_names_that_number() -> None:
    """``Speed: 171.26 samples/sec 8627.36 tokens/sec 1.61 updates/sec`` (Sockeye's and
    MXNet's Speedometer): each unit names the number before it; read as ``key value`` the
    tokens per second would be the updates' 1.61."""
    line = "[INFO:sockeye.training] Epoch[1] Batch [6000]   Speed: 171.26 samples/sec 8627.36 tokens/sec 1.61 updates/sec     perplexity=17.815732"
    metrics = dict(_read_lines(["Updates=6000 Epoch=1 Samples=633045", line]).metrics)
    assert metrics["tokens_per_second"] == 8627.36
    assert (metrics["samples_sec"], metrics["updates_sec"]) == (171.26, 1.61)
    assert (
        dict(_read_lines(["step 10 | loss 2.5 | 112,241 tok/s"]).metrics)["tokens_per_second"]
        == 112241.0
    )


def test_sockeyes_checkpoint_gives_the_updates_not_the_checkpoints_number() -> None:
    """``Checkpoint [88] Updates=440000 Epoch=16 ...``: the updates are the step; the bracket
    after a word is the checkpoint's number, no CLU step (whose ``[1000]`` leads its message
    or follows a logger's prefix)."""
    quoted = "> [2020-05-14:17:46:36:INFO:sockeye.training:fit] Checkpoint [88] Updates=440000 Epoch=16 Samples=280841176 Time-cost=2919.597 Updates/sec=1.713"
    assert _read_lines([quoted]).step == 440000
    clu = "I0312 10:00:00.000000 139 logging_writer.py:48] [1000] steps_per_second=1.76, train_loss=6.52"
    assert (_read_lines([clu]).step, _read_lines([clu]).loss) == (1000, 6.52)
    assert _read_lines(["[2000] train_loss=5.5, lr=0.1"]).step == 2000


def test_an_evaluation_at_an_epoch_and_step_is_at_the_runs_step() -> None:
    """JoeyNMT's ``Validation result (greedy) at epoch   6, step     2400: ... loss: 4489.4``:
    the evaluation's loss, at the run's step 2400; an evaluation counting its own batches
    moves no step."""
    line = "Validation result (greedy) at epoch   6, step     2400: bleu:  37.37, loss: 4489.4004, ppl:   1.2274, duration: 537.8312s"
    report = _read_lines([line])
    assert (report.step, report.eval_loss, report.loss) == (2400, 4489.4004, None)
    assert _read_lines(["Validation: step 30/50 loss: 1.2"]).step is None


def test_returnns_epoch_summary_is_the_loss_and_the_dev_sets() -> None:
    """RETURNN's ``epoch N score: S elapsed: T dev: score D error E``: the training score is
    its loss, the dev set's score the eval loss, the epoch done 1-based; devtrain's is no eval
    loss, and scores of several losses at once are no one loss."""
    report = _read_lines(
        [
            "epoch 1 score: 3.96068657248 elapsed: 3:19:03 dev: score 3.65861076902 error 0.99728335187"
        ]
    )
    assert (report.loss, report.eval_loss, report.epoch, report.step) == (
        3.96068657248,
        3.65861076902,
        1.0,
        None,
    )
    newer = _read_lines(
        ["epoch 12 score: 0.8412 error: 0.2551 elapsed: 1:02:11 devtrain: score 0.80 error 0.24"]
    )
    assert (newer.loss, newer.eval_loss, dict(newer.metrics)["error"]) == (0.8412, None, 0.2551)
    assert _read_lines(["epoch 3 score: ctc 1.2 ce 2.3 elapsed: 0:10:00"]).loss is None


def test_a_keras_header_right_under_another_heads_no_epoch() -> None:
    """TensorFlow 2.1's fit printed its validation loop's own ``Epoch 1/2`` right under each
    epoch's header (tensorflow/tensorflow#35815): passed over, the run is at epoch 2 of 2,
    not back at epoch 1. A header after a bar is the run's: a second fit starts again."""
    epoch = "1/1 [==============================] - 0s 1ms/step - loss: 0.5000"
    last = epoch + " - val_loss: 0.4000"
    nested = ["Epoch 1/2", "Epoch 1/2", epoch, last, "Epoch 2/2", "Epoch 1/2", epoch, last]
    report = _read_lines(nested)
    assert (report.step, report.max_steps, report.epoch) == (2, 2, 2.0)
    again = _read_lines(["Epoch 1/2", epoch, last, "Epoch 2/2", epoch, last, "Epoch 1/2", epoch])
    assert (again.step, again.epoch) == (1, 1.0)


def test_frames_run_together_without_carriage_returns_give_the_last() -> None:
    """A copy that lost the carriage returns between tqdm's frames runs them together on one
    line (a PLSA homework's train.log, Colab's frames without the bar): the newest frame is
    the last, never the first one the bar's pattern finds."""
    glued = "".join(f"{p:3d}% {p}/100 [00:{p // 4:02d}<00:00,  4.12it/s]" for p in range(89, 101))
    report = _read_lines([glued])
    assert (report.step, report.max_steps) == (100, 100)
    barred = "  50%|#####     | 5/10 [00:01<00:01,  4.00it/s] 60%|######    | 6/10 [00:01<00:01,  4.00it/s]"
    assert _read_lines([barred]).step == 6


def test_an_epoch_begin_line_heads_the_values_under_it() -> None:
    """``Epoch 8 begin`` (Deep-learning-template's trainer) is an epoch's header like ``Epoch 8
    started``: the loss printed under it with a batch count of no known size is read, no
    step; without the header the same values are nobody's."""
    lines = ["INFO:  Epoch 8 begin", "INFO: Train 100: loss:0.2852", "INFO: Train 200: loss:0.3940"]
    report = _read_lines(lines)
    assert (report.loss, report.step) == (0.394, None)
    assert _read_lines(lines[1:]).loss is None


def test_a_training_start_after_a_traceback_is_a_new_attempt() -> None:
    """lightning-hydra-template logs ``Starting training!`` before ``trainer.fit``: after a
    traceback (the first run crashed before training), the crash is an earlier attempt's,
    not how the log ends; without the start, it stands."""
    crash = [
        "Traceback (most recent call last):",
        '  File "train.py", line 72, in train',
        "hydra.errors.InstantiationException: Error in call to target 'Net':",
        "[2022-09-23 19:29:09,535][src.utils.utils][INFO] - Closing loggers...",
    ]
    assert _read_lines(crash).failure is not None
    again = [*crash, "[2022-09-23 19:31:01,023][__main__][INFO] - Starting training!"]
    assert _read_lines(again).failure is None


def test_espnets_epoch_results_give_the_iterations_and_both_losses() -> None:
    """ESPnet2's ``Nepoch results: [train] ... [valid] ...`` (FunASR's trainer copies it):
    ``[train]``'s ``total_count`` is the iterations over all epochs, the run's step; its loss
    the training loss, ``[valid]``'s the eval loss; the epoch done is N. A section other than
    those two is not read, nor a time in words."""
    line = (
        "[host-0] 2023-08-16 17:38:19,309 (trainer:334) INFO: 2epoch results: [train] "
        "iter_time=6.271, loss_att=0.572, acc=0.875, loss=0.572, optim0_lr0=3.333e-09, "
        "time=10.9 seconds, total_count=2046, [valid] loss_att=0.008, acc=1.000, "
        "loss=0.0085, time=1.81 seconds, total_count=12, [att_plot] time=5.2 seconds"
    )
    report = _read_lines([line])
    assert (report.step, report.epoch, report.loss, report.eval_loss) == (2046, 2.0, 0.572, 0.0085)
    assert dict(report.metrics)["acc"] == 0.875
    only_valid = "3epoch results: [valid] loss=0.5, total_count=30"
    assert (_read_lines([only_valid]).step, _read_lines([only_valid]).loss) == (None, None)


def test_a_stage_header_makes_the_lone_values_under_it_its_own() -> None:
    """PyText prints ``Stage.EVAL``, the epoch, then ``loss: 1.219663`` alone: the
    evaluation's loss, never the training's; under ``Stage.TRAIN`` the training loss; under
    ``Stage.TEST`` none the run watches. A lone loss under no header stays the loss."""
    evaluation = _read_lines(["Stage.EVAL", "Epoch:10", "loss: 1.219663", "Accuracy: 96.70"])
    assert (evaluation.loss, evaluation.eval_loss) == (None, 1.219663)
    both = _read_lines(
        [
            "Stage.TRAIN",
            "Epoch:10",
            "loss: 1.3",
            "Stage.EVAL",
            "Epoch:10",
            "loss: 1.2",
            "Stage.TEST",
            "Epoch:10",
            "loss: 9.9",
        ]
    )
    assert (both.loss, both.eval_loss) == (1.3, 1.2)
    assert _read_lines(["train_loss: 0.75"]).loss == 0.75


def test_skyrls_step_dict_gives_its_step() -> None:
    """SkyRL v0 logs ``step 1: {'train/loss': ..., 'train/step': 1}``: the step key is the step."""
    line = "model.py:660 - step 7: {'train/loss': 0.0006, 'train/pg_loss': 0.0, 'train/grad_norm': 0.03, 'train/step': 7}"
    report = _read_lines([line])
    assert (report.step, report.loss) == (7, 0.0006)


_RAY_TABLE = [
    "Training finished iteration 3 at 2023-06-27 09:28:54. Total running time: 2min 4s",
    "╭───────────────────────────────────────────────╮",
    "│ Training result                               │",
    "├───────────────────────────────────────────────┤",
    "│ time_this_iter_s                      8.63442 │",
    "│ training_iteration                          3 │",
    "│ acc                                      0.91 │",
    "│ config/train_loop_config/lr             0.001 │",
    "│ loss                                  0.32971 │",
    "╰───────────────────────────────────────────────╯",
]


def test_ray_trains_result_table_is_the_reported_iteration_and_loss() -> None:
    """Ray Train prints each report as a table under ``Training finished iteration N``: the
    iteration is the step, the loss the loss, other numbers custom metrics; the config and
    durations are not read, nor ``2min 4s`` as 2. ``Training completed after N iterations``
    is the end; a Tune sweep's trial tables are no run's of this log."""
    report = _read_lines(_RAY_TABLE)
    assert (report.step, report.loss, report.final) == (3, 0.32971, False)
    metrics = dict(report.metrics)
    assert metrics == {"acc": 0.91}
    end = _read_lines(
        [
            *_RAY_TABLE,
            "Training completed after 3 iterations at 2023-06-27 09:29:01. Total running time: 2min 11s",
        ]
    )
    assert (end.step, end.final) == (3, True)
    trial = [
        line.replace("│ Training result      ", "│ Trial TorchTrainer_8dace_00004 result")
        for line in _RAY_TABLE[1:]
    ]
    assert (_read_lines(trial).step, _read_lines(trial).loss) == (None, None)
    assert _read_lines(["│ loss                                  0.32971 │"]).loss is None


def test_yolov6s_table_rows_count_a_zero_based_epoch_of_the_last() -> None:
    """YOLOv6's header has no GPU memory column (``Epoch  lr  iou_loss  dfl_loss
    cls_loss``); each row is its bar's description, ``{epoch}/{max_epoch - 1}`` and the mean
    losses: 0-based of the last, its bar the epoch's steps. Epoch 2 of 0..4 at 50 of 106 is
    step 262 of 530. The same numbers under no such header are any bar's: no run total."""
    header = "     Epoch        lr  iou_loss  dfl_loss  cls_loss"
    row = "       2/4   0.00062    0.8123    0.9911     1.102:  47%|████▋     | 50/106 [00:08<00:09,  5.99it/s]"
    report = _read_lines([header, row])
    assert (report.step, report.max_steps, report.max_epochs) == (262, 530, 5.0)
    assert report.loss is None  # parts of the loss, no total
    alone = _read_lines([row])
    assert (alone.step, alone.max_steps, alone.max_epochs) == (50, 106, None)


def test_allennlps_phase_lines_tell_whose_bar_follows() -> None:
    """AllenNLP logs ``Training`` and ``Validating`` before each phase's bar, whose
    description is its metrics (``accuracy: 0.87, batch_loss: 0.32, loss: 0.40 ||``): the
    training bar's loss is the loss, the validation bar's the eval loss, and the validation
    bar is never the training bar (its 2 of 2 no step of the run)."""
    lines = [
        "2018-05-18 00:15:30,001 - INFO - allennlp.training.trainer - Training",
        "accuracy: 0.8700, batch_loss: 0.3214, loss: 0.4012 ||:  40%|####      | 80/200 [00:05<00:07, 16.00it/s]",
        "2018-05-18 00:15:37,750 - INFO - allennlp.training.trainer - Validating",
        "loss: 2.3851 ||: 100%|##########| 2/2 [00:00<00:00, 10.31it/s]",
    ]
    report = _read_lines(lines)
    assert (report.loss, report.eval_loss, report.step) == (0.4012, 2.3851, 80)
    alone = _read_lines(lines[2:])
    assert (alone.step, alone.max_steps, alone.eval_loss) == (None, None, 2.3851)


def test_allennlps_metrics_table_gives_the_epochs_loss_and_validation_loss() -> None:
    """AllenNLP's table after each epoch (``%s |  %8.3f  |  %8.3f`` under ``Training |
    Validation``, allennlp/training/tensorboard_writer.py): the ``loss`` row is the training
    loss and the validation loss, ``N/A`` none; other rows (``gpu_0_memory_MB``) and the
    same row without AllenNLP's logger name are not read."""
    w = "2022-06-30 12:07:25,479 - INFO - allennlp.training.tensorboard_writer - "
    lines = [
        w + "                                Training |  Validation",
        w + "gpu_0_memory_MB             |  3589.000  |       N/A",
        w + "loss                        |  -137.582  |  -145.318",
    ]
    report = _read_lines(lines)
    assert (report.loss, report.eval_loss, report.step) == (-137.582, -145.318, None)
    train_only = _read_lines([w + "loss |     0.250  |       N/A"])
    assert (train_only.loss, train_only.eval_loss) == (0.25, None)
    assert _read_lines([w + "gpu_0_memory_MB |  3589.000  |  12.000"]).loss is None
    assert _read_lines(["loss                        |  -137.582  |  -145.318"]).loss is None


def test_a_batch_of_an_epoch_leading_its_line_gives_its_values_and_no_step() -> None:
    """HelixLM's ``  batch 50/1646 | loss=5.4196 ppl=225.79 ...`` under ``Epoch 3/3 | LR:
    ...``: a count within the epoch (its header 0- or 1-based as the loop prints it), so
    no step and no total; the loss is read. Before, the line was no counted line and
    nothing on it was read."""
    lines = [
        "Epoch 3/3 | LR: 3.00e-04 | Effective batch: 96",
        "  batch 50/1646 | loss=5.4196 ppl=225.79 lr=3.00e-04 tok/s=37729 skipped=0",
        "  batch 1646/1646 | loss=5.3783 ppl=216.66 lr=3.00e-04 tok/s=37471 skipped=0",
    ]
    report = _read_lines(lines)
    assert (report.step, report.max_steps, report.loss) == (None, None, 5.3783)
    # Not a batch size's words: "Effective batch: 96" and "batch 96 |" count nothing.
    assert _read_lines(["  batch 96 | loss=0.5"]).step is None


def test_a_loggers_fields_between_pipes_before_a_lone_loss() -> None:
    """A TransQuest-style trainer logs ``| 2021-07-08 17:13:34 | INFO | Validation loss:
    0.634, acc: 0.829, F1: 0.568`` (its time and level between pipes, as fairseq's logging
    format puts them, ``%(asctime)s | %(levelname)s | %(name)s | %(message)s``): the prefix
    is a logger's, the loss line after it is read. Before, nothing on these lines was."""
    lines = [
        "| 2021-07-08 17:12:32 | INFO | Train Loss: 0.037, tp: 11, fn: 0, Acc: 1.000, F1: 1.000",
        "| 2021-07-08 17:13:34 | INFO | Validation tp: 26, fn: 115, fp: 56, tn: 803",
        "| 2021-07-08 17:13:34 | INFO | Validation loss: 0.634, acc: 0.829, F1: 0.568",
    ]
    report = _read_lines(lines)
    assert (report.loss, report.eval_loss, report.step) == (0.037, 0.634, None)
    named = _read_lines(["2021-07-08 17:13:34 | INFO | ced.train | Validation loss: 0.5"])
    assert named.eval_loss == 0.5
    assert _read_lines(["| 2021-07-08 17:13:34 | NOTICE | Validation loss: 0.5"]).eval_loss is None


def test_llms_from_scratch_ep_before_its_step_is_the_epoch() -> None:
    """LLMs-from-scratch's loops print ``Ep 1 (Step 000000): Train loss ..., Val loss ...``:
    ``Ep`` is the 1-based epoch. Where the step starts over in each epoch (a lab's copy:
    ``Ep 2 (Step 00000)`` after ``Ep 1 (Step 00195)``) it counts within an epoch of unknown
    size: no step. Before, ``Ep`` was no epoch, the count was the run's step (195 in epoch
    2) and ``ep`` a custom metric. The book's own global step, which goes on, still is,
    plus one: train_model_simple starts it at -1 and prints it after each optimizer step,
    so ``Step 000015`` is 16 steps done (before, 15)."""
    lines = [
        "Ep 1 (Step 00190): Train loss 1.146, Val loss 1.212",
        "Ep 1 (Step 00195): Train loss 1.102, Val loss 1.212",
        "Ep 2 (Step 00000): Train loss 1.119, Val loss 1.216",
        "Ep 2 (Step 00195): Train loss 0.876, Val loss 1.212",
    ]
    report = _read_lines(lines)
    assert (report.step, report.loss, report.eval_loss) == (None, 0.876, 1.212)
    assert "ep" not in dict(report.metrics)
    book = _read_lines(
        ["Ep 1 (Step 000005): Train loss 2.1, Val loss 2.2", "Ep 2 (Step 000015): Train loss 1.8"]
    )
    assert book.step == 16


def test_an_epochs_batch_before_the_runs_step_gives_the_epochs_size() -> None:
    """A loop's own ``Epoch 17/100, Batch 110, Step 2750: Loss = ...`` (shakespearean-llm's
    train.py: the 1-based epoch under way, the batch in it, the run's step): 16 epochs of
    (2750 - 110) / 16 = 165 batches are done, so the run is 100 x 165 = 16500 steps. Before,
    the total was unknown. A step that starts over each epoch, or sizes that do not divide,
    give none; the first epoch gives none either."""
    report = _read_lines(["Epoch 17/100, Batch 110, Step 2750: Loss = 0.093415"])
    assert (report.step, report.max_steps) == (2750, 16500)
    assert report.epoch == pytest.approx(16 + 110 / 165)
    for line in (
        "Epoch 2/10, Batch 50, Step 50: Loss = 0.07",
        "Epoch 3/10, Batch 7, Step 1000: Loss = 0.1",
        "Epoch 1/100, Batch 5, Step 5: Loss = 0.07",
    ):
        assert _read_lines([line]).max_steps is None, line


def test_the_step_a_best_value_was_at_is_no_step_of_the_run() -> None:
    """A sweep's summary of one of its runs, ``Finished run 1. Best val accuracy: 0.6734,
    corresponding test accuracy: 0.6691 (step 16).`` (the heterophily benchmark's
    train.py): the step after a best value is where the best was, not the run's step now;
    the line gives nothing. Before, each summary's best step was read as the run's (16,
    then 15, ...). A step that leads its line, or a save's, still is the run's."""
    lines = [
        "Starting run 1/10 (using data split 1/10)...",
        "Finished run 1. Best val accuracy: 0.6734, corresponding test accuracy: 0.6691 (step 16).",
        "Finished run 2. Best val accuracy: 0.6439, corresponding test accuracy: 0.6913 (step 15).",
    ]
    assert _read_lines(lines).step is None
    assert _read_lines(["New best val_loss 0.5 at step 100"]).step is None
    assert _read_lines(["step 100: best loss 0.5"]).step == 100
    assert _read_lines(["loss: 0.5 step 100"]).step == 100


def test_a_training_prefix_before_a_known_loss_name_is_the_loss() -> None:
    """EAGNet's Lightning module logs ``train_total_loss`` (the total it optimizes) beside
    ``train_intent_loss_step`` (one head's part) in the bar's postfix: the total loss with
    the training's prefix is the loss, the part a custom metric. Before, neither was read.
    The prefix makes no evaluation's loss a training loss (``train_val_loss``)."""
    frame = (
        "\rEpoch 0:  31%|###       | 1225/3999 [1:07:35<2:33:02,  3.31s/it, v_num=29, "
        "train_intent_loss_step=1.110, train_total_loss=0.375]"
    )
    report = _read_lines([frame])
    assert (report.step, report.loss) == (1225, 0.375)
    assert dict(report.metrics)["train_intent_loss_step"] == 1.11
    assert _read_lines(["step 3 train_val_loss: 0.5"]).loss is None
    both = _read_lines(["step 3 train_loss: 0.5 train_total_loss: 0.7"])
    assert both.loss == 0.5  # the better-ranked name of the two


def test_a_test_sets_loss_after_a_validations_is_no_eval_loss() -> None:
    """BrainFormer validates each epoch (``Val loss: 0.637, Acc: ...``) and tests once after
    training (``Test loss: 0.634, Acc: ...``): the validation is what training watches, so
    the test set's loss is the ``test_loss`` metric, not the eval loss. A loop whose only
    evaluation is called test (the PyTorch tutorials, the MNIST example) keeps it as the
    eval loss. Before, the test set's loss replaced the validation's."""
    report = _read_lines(
        ["Val loss: 0.637, Acc: 1.000, precision: 0.500", "Test loss: 0.634, Acc: 1.000"]
    )
    assert (report.eval_loss, dict(report.metrics).get("test_loss")) == (0.637, 0.634)
    phases = _read_lines(["train Loss: 0.58 Acc: 0.68", "val Loss: 0.22", "test Loss: 0.25"])
    assert (phases.loss, phases.eval_loss, dict(phases.metrics)["test_loss"]) == (0.58, 0.22, 0.25)
    tutorial = _read_lines(["Epoch 1", "Test Error: Avg loss: 0.0629"])
    assert tutorial.eval_loss == 0.0629
    mnist = _read_lines(["Test set: Average loss: 0.0479, Accuracy: 9850/10000 (98%)"])
    assert mnist.eval_loss == 0.0479
    # A validation after the test set's loss takes the eval loss back.
    later = _read_lines(["Test loss: 0.9", "Val loss: 0.7"])
    assert later.eval_loss == 0.7


def test_lightnings_padded_non_finite_losses_are_nan_and_inf() -> None:
    """Lightning's progress bar pads every float it shows to five characters (its
    ``Tqdm.format_num``): a NaN loss is ``train_loss=nan.0``, an infinite one ``inf.0`` or
    ``-inf.`` (checked against the installed Lightning below). They are NaN and inf, in the
    bar's postfix and in a line's pairs; before, the padded forms were no number and the
    run's NaN went unseen. A word that only starts with nan is still none."""
    from lightning.pytorch.callbacks.progress.tqdm_progress import Tqdm

    assert [Tqdm.format_num(v) for v in (math.nan, math.inf, -math.inf)] == [
        "nan.0",
        "inf.0",
        "-inf.",
    ]
    frame = "\rEpoch 0:   0%|          | 2/4282 [00:00<10:12,  6.98it/s, v_num=0, train_loss={}]"
    for shown, kind in (("nan.0", "nan"), ("inf.0", "inf"), ("-inf.", "-inf")):
        report = _read_lines([frame.format(shown)])
        assert report.step == 2 and str(report.loss) == kind, shown
    line = _read_lines(["step 3 loss: nan.0, lr: 1"])
    assert line.step == 3 and math.isnan(line.loss or 0.0) and line.learning_rate == 1.0
    assert _read_lines(["step 3 loss: nan.5"]).loss is None


def test_a_bracketed_step_heading_a_block_is_the_step() -> None:
    """A fine-tuning script's ``[Step 0] Training Debug Info:`` and then its indented
    ``  Loss: 0.661919`` (an Accelerate FLUX.2 fine-tune's debug print): the bracketed step
    leads its line and heads the block under it, so it is the run's step without a value
    beside it; the block's loss is read. Before, the header was a counter alone and gave
    nothing. A step in a sentence or with text after the colon heads nothing."""
    lines = [
        "Total optimization steps = 500",
        "[Step 0] Training Debug Info:",
        "  Loss: 0.661919",
        "  Latent mean: -0.0188, std: 0.8555",
    ]
    report = _read_lines(lines)
    assert (report.step, report.max_steps, report.loss) == (0, 500, 0.661919)
    assert _read_lines(["[Step 40/500] Debug:", "  Loss: 0.5"]).step == 40
    assert _read_lines(["[Step 40/500] Debug:"]).max_steps == 500
    for sentence in ("Saved at [Step 3] Debug:", "[Step 3] Debug: see below", "[Step 1] Load"):
        assert _read_lines([sentence]).step is None, sentence


def test_a_table_row_with_blank_cells_is_read_by_its_cells_places() -> None:
    """Chainer's PrintReport pads a missing value with spaces, each cell left-aligned at its
    column's start: a row with blank cells is read by where its cells stand (one character
    off at most). A cell under no column's start makes no row; a row without its counter
    is none either."""
    header = "epoch       iteration   main/loss   lr          validation/main/loss  validation/main/accuracy"
    train_only = "1           600         2.26055     6.71828e-05                                                "
    validated = "1           500         2.25634     6.27392e-05  2.26484               0                       "
    report = _read_lines([header, validated, train_only])
    assert (report.step, report.loss, report.eval_loss) == (600, 2.26055, 2.26484)
    assert report.learning_rate == 6.71828e-05
    misaligned = "1      700    2.2"
    assert _read_lines([header, misaligned]).step is None
    no_counter = "            700         2.2739      7.0964e-05"
    assert _read_lines([header, no_counter]).step is None


def test_a_bracketed_count_leading_the_line_is_the_step_of_its_total() -> None:
    """deep-text-recognition-benchmark's ``[1/300000] Train loss: 3.63514, Valid loss: ...``:
    iteration + 1 of num_iter, its losses. A package manager's ``[1/4] Resolving
    packages...`` has no values: nothing."""
    report = _read_lines(
        ["[2000/300000] Train loss: 0.36514, Valid loss: 0.57144, Elapsed_time: 1175.33"]
    )
    assert (report.step, report.max_steps, report.loss, report.eval_loss) == (
        2000,
        300000,
        0.36514,
        0.57144,
    )
    assert _read_lines(["[1/4] Resolving packages..."]).step is None


def test_a_loops_plural_iterations_leading_its_line_is_its_count() -> None:
    """``iterations:69, train acc:0.305, train loss:461.343, ...`` (a loop using ESPnet as a
    library) counts its iterations; the plural anywhere else is a setting, no step."""
    report = _read_lines(
        ["iterations:69, train acc:0.305, train loss:461.343, train loss ctc:840.656,"]
    )
    assert (report.step, report.loss) == (69, 461.343)
    assert _read_lines(["Total iterations: 5000, lr: 0.01"]).step is None


def test_espnet1s_printreport_rows_after_their_erase_codes_are_read_by_place() -> None:
    """ESPnet1 trains on Chainer's trainer: each PrintReport row follows an erase code
    (``\\x1b[J``, the ProgressBar's cursor moves before it) and leaves the validation cells
    blank until the evaluator runs; ProgressBar's status gives the step too."""
    header = "epoch       iteration   main/loss   main/loss_ctc  validation/main/loss  main/acc    elapsed_time"
    row = "\x1b[4A\x1b[J0           200         677.669     1669.19                              0.000181526  152.819     "
    report = _read_lines([header, row, "       200 iter, 0 epoch / 100 epochs"])
    assert (report.step, report.loss, report.eval_loss, report.max_epochs) == (
        200,
        677.669,
        None,
        100,
    )


def test_nerfstudios_rows_give_the_step_and_the_runs_share() -> None:
    """nerfstudio's LocalWriter (round 109) prints ``{step} ({share:.2f}%)`` padded to 20, then
    its statistics, a time as ``_format_time`` writes it: the step, and the share of the run's
    iterations as its progress (rounded: no total). A line of the same start with no such
    time is no row of it."""
    header = "Step (% Done)       Train Iter (time)    ETA (time)           Train Rays / Sec"
    row = "4310 (86.18%)       44.431 ms            30 s, 701.883 ms     14.51 M"
    report = _read_lines([header, "-" * 83, row])
    assert (report.step, report.max_steps) == (4310, None)
    assert report.progress == pytest.approx(0.8618)
    assert _read_lines(["100 (50.00%)  of the files copied"]).step is None


def test_mmfs_logistics_line_gives_its_total_loss_and_max_updates() -> None:
    """MMF's LogisticsCallback (round 109): ``progress: 10600/22000, train/<dataset>/<loss>:
    ..., train/total_loss: 0.0024, train/total_loss/avg: ..., num_updates: 10600, ...,
    max_updates: 22000``: the total loss is the loss (its running mean a metric), max_updates
    the run's length."""
    line = (
        "2021-02-14T07:18:04 | mmf.trainers.callbacks.logistics: progress: 10600/22000, "
        "train/hateful_memes/cross_entropy: 0.0024, train/hateful_memes/cross_entropy/avg: "
        "0.1518, train/total_loss: 0.0031, train/total_loss/avg: 0.1518, max mem: 6424.0, "
        "experiment: run, epoch: 40, num_updates: 10600, iterations: 10600, max_updates: "
        "22000, lr: 0.00001, ups: 2.00"
    )
    report = _read_lines([line])
    assert (report.step, report.max_steps, report.loss) == (10600, 22000, 0.0031)


def test_gluoncvs_rank_between_the_epoch_and_the_batch_is_read() -> None:
    """GluonCV's scripts under Horovod (round 109): ``Epoch [0] Rank [0] Batch [239]``, the
    0-based epoch and the batch's index as MXNet's Speedometer prints them, the rank between."""
    line = "[2020-05-27 11:14:49] Epoch [0] Rank [0] Batch [239]    accuracy=0.015853       loss=6.220434   lr=0.766773"
    report = _read_lines([line])
    assert (report.step, report.loss) == (239, 6.220434)


def test_paddlepaddles_passes_count_batches_and_its_test_is_an_evaluation() -> None:
    """PaddlePaddle's demos (round 110), v2 (``Pass 0, Batch 100, Cost 2.26, {...}``) and
    Fluid (``Pass:0, Batch:100, Cost:0.40671, Accuracy:...``): a 0-based pass and the batch's
    index, the pass's size never printed, so a later pass's step is unknown (not the first
    pass's last, which would make the run look stalled at it). Fluid's ``Test:N, Cost:...``
    after each pass is its evaluation: its cost the eval loss, its accuracy no train one."""
    first = "Pass:0, Batch:300, Cost:0.24156, Accuracy:0.89844"
    assert (_read_lines([first]).step, _read_lines([first]).loss) == (300, 0.24156)
    test = "Test:0, Cost:0.26778, Accuracy:0.92138"
    later = _read_lines([first, test, "Pass:1, Batch:100, Cost:0.27148, Accuracy:0.92188"])
    assert (later.step, later.loss, later.eval_loss) == (None, 0.27148, 0.26778)
    metrics = dict(later.metrics)
    assert (metrics["accuracy"], metrics["eval_accuracy"]) == (0.92188, 0.92138)
    v2 = _read_lines(["Pass 0, Batch 100, Cost 2.261713, {'classification_error_evaluator': 0.8}"])
    assert (v2.step, v2.loss) == (100, 2.261713)
    assert _read_lines(["Test:0 passed, 3 skipped"]).eval_loss is None


def test_traxs_loop_lines_give_the_step_the_loss_and_the_eval_loss() -> None:
    """Trax's training.Loop (round 111): ``Step %6d: train <loss layer> | value`` is the
    loss whatever the layer's name, ``eval`` lines the evaluation's metrics, the one named as
    a loss its eval loss; ``Ran N train steps in ... secs`` gives the step and no metric."""
    lines = [
        "Step   2000: Ran 500 train steps in 5.35 secs",
        "Step   2000: train                 L2Loss |  0.38129005",
        "Step   2000: eval  WeightedCategoryCrossEntropy |  0.33760912",
        "Step   2000: eval      WeightedCategoryAccuracy |  0.85312500",
    ]
    report = _read_lines(lines)
    assert (report.step, report.loss, report.eval_loss) == (2000, 0.38129005, 0.33760912)
    assert dict(report.metrics) == {"eval_weightedcategoryaccuracy": 0.853125}
    assert _read_lines(lines[:1]).metrics == ()


def test_a_bracketed_epoch_batch_and_step_give_the_runs_length() -> None:
    """PSENet.pytorch and its kin (round 111): ``[9/100], [0/11], step: 99, ...``: the run's
    step is printed, its length 100 epochs of 11 batches."""
    line = (
        "2019-10-13 05:41:38 INFO      train.py: [11/100], [0/11], step: 121, 25.979 "
        "samples/sec, batch_loss: 0.4168, batch_loss_c: 0.4013, time:0.3849, lr:0.0001"
    )
    report = _read_lines([line])
    assert (report.step, report.max_steps, report.loss) == (121, 1100, 0.4168)


def test_opennmts_lua_epoch_and_iteration_count_within_a_one_based_epoch() -> None:
    """OpenNMT's Lua trainer and its forks (round 112): ``Epoch 2 ; Iteration 4000/77776 ;
    ...`` (``Iter`` in data2text's), the 1-based epoch and its iterations done of the epoch's,
    so 77776 + 4000; the end epoch is never printed. Only perplexities are, never a loss."""
    line = "Epoch {e} ; Iteration {i}/77776 ; Learning rate 1.0000 ; Source tokens/s 1270 ; Perplexity 8.29"
    report = _read_lines([line.format(e=1, i=77000), line.format(e=2, i=4000)])
    assert (report.step, report.max_steps, report.loss) == (77776 + 4000, None, None)
    fork = "Epoch 3 ; Iter 200/213 ; LR 1.0000 ; Target tokens/s 1320 ; PPL 31.60 ;"
    assert _read_lines([fork]).step == 2 * 213 + 200


def test_deeplearning4js_score_at_iteration_is_its_loss() -> None:
    """Deeplearning4j's ScoreIterationListener (round 113): ``Score at iteration 78700 is
    0.98`` under its logger's name: the network's score, its loss, at that iteration. The
    same words inside another sentence are none."""
    line = (
        "01:49:29.507 [main] INFO org.deeplearning4j.optimize.listeners.ScoreIterationListener"
        " - Score at iteration 78700 is 0.9849485238764399"
    )
    report = _read_lines([line])
    assert (report.step, report.loss, report.metrics) == (78700, 0.9849485238764399, ())
    assert _read_lines(["The Score at iteration 5 is 3 and rising"]).loss is None


def test_a_trainer_dict_after_a_bars_frames_on_its_line_is_read() -> None:
    """Trainer writes its log dict with tqdm.write, which blanks the bar's line first; a copy
    of the log that lost its carriage returns (round 113, a train.log kept in a repository)
    holds the frames, the blanking spaces and the dict on one line: the dict is read."""
    frame = "100%|█████████▉| {i}/4854 [2:15:54<00:07,  1.56s/it]"
    frames = "".join(frame.format(i=i) for i in range(4841, 4851))  # longer than a prefix
    line = frames + " " * 53 + "{'loss': 1.1103, 'grad_norm': 0.36, 'epoch': 3.0}"
    report = _read_lines([line])
    assert (report.loss, report.epoch) == (1.1103, 3.0)


def test_a_scripts_short_ep_is_an_epoch_word_and_its_batch_no_step() -> None:
    """A pretraining script's ``ep: 0, batch: 260, ..., loss: 8.39`` (round 114): ``ep:`` is
    its epoch, so the line is an epoch's and its loss read; ``batch: 260`` beside it is no
    step (the same words print a batch size elsewhere). Without its colon ``ep`` is no
    epoch."""
    report = _read_lines(["ep: 0, batch: 260, time: 8.56, ntokens: 413.40/513, loss: 8.390625"])
    assert (report.step, report.loss) == (None, 8.390625)
    assert _read_lines(["ep 0 batch 260 loss 8.39"]).loss is None


@pytest.mark.parametrize(
    ("line", "steps"),
    [
        ("INFO:absl:  Num steps = 8242", 8242),
        ("INFO:tensorflow:  Num steps = 3000", 3000),
        ("Num steps = 8242 were skipped", None),
        ("INFO:absl:  Num steps = 0", None),
        ("12/27/2022 20:56:23 - INFO - __main__ -     Num steps = 12216", 12216),
        ("a - b Num steps = 12216", None),
    ],
)
def test_google_berts_training_banner_gives_the_runs_steps(line: str, steps: int | None) -> None:
    """Google BERT's run_classifier and its forks (round 115) log ``  Num steps = %d``
    (num_train_steps, the Estimator's max_steps) under ``***** Running training *****``: the
    setting alone on its line is the run's length; in a sentence, or 0, it is none. Its
    PyTorch ports (pytorch-pretrained-BERT's run_squad, round 261) log it after Python's
    ``... - INFO - __main__ -`` prefix."""
    assert _read_lines([line]).max_steps == steps


def test_a_files_table_with_no_counter_gives_values_and_no_step() -> None:
    """FADNet's train.log (round 116): a tab-separated header of values only
    (``train_loss\\ttrain_EPE\\tEPE``) and a row an epoch: the last row's loss is read, no
    step; the same header with spaces is no table (console prose has double spaces)."""
    header = "train_loss\ttrain_EPE\tEPE"
    rows = ["8.01\t13.72\t13.41", "7.71\t13.22\t13.12"]
    report = _read_lines([header, *rows])
    assert (report.step, report.loss) == (None, 7.71)
    assert dict(report.metrics)["epe"] == 13.12
    spaced = _read_lines(["train_loss  train_EPE  EPE", "8.01  13.72  13.41"])
    assert spaced.loss is None


def test_an_epochs_mean_loss_under_its_header_is_the_loss() -> None:
    """A Faster R-CNN script's logger (round 116) puts each message on the line after its
    prefix: ``EPOCH 10 of 30`` then ``EPOCH loss: 0.3842``, the epoch's mean: the loss."""
    prefix = "2024-05-26 19:10:03 - INFO - task2_train_fasterrcnn.py - 65 - "
    lines = [prefix, "EPOCH 10 of 30", prefix, "EPOCH loss: 0.3842035332923396"]
    report = _read_lines(lines)
    assert (report.loss, report.max_epochs, report.step) == (0.3842035332923396, 30.0, None)


def test_a_resumed_runs_global_step_claims_no_length_from_its_epochs() -> None:
    """DBNet.pytorch resumed from another run's checkpoint (round 117): ``[38/200], [1/604],
    global_step: 13099`` is no step epoch 38 and batch 1 place (37 x 604 + 1), so 200 x 604
    is not its length in steps; a fresh run's ``[1/200], [1/1], global_step: 1`` is."""
    line = "DBNet INFO: [{e}/200], [{i}/{n}], global_step: {s}, speed: 7.7 samples/sec, loss: 0.8310, lr:0.0008"
    resumed = _read_lines([line.format(e=38, i=3, n=604, s=13101)])
    assert (resumed.step, resumed.max_steps, resumed.loss) == (13101, None, 0.831)
    fresh = _read_lines([line.format(e=1, i=1, n=1, s=1)])
    assert (fresh.step, fresh.max_steps) == (1, 200)


def test_a_rounded_step_is_no_step_and_leaves_none_stale() -> None:
    """LeRobot's MetricsTracker (round 118) prints its counts through format_big_number:
    ``step:23K`` is a step rounded to thousands, never 23, and the exact ``step:800`` read
    before it is stale once the run logs ``step:1K``; its ``ep`` counts episodes beside its
    ``epch``, no epoch. Its checkpoint line says the exact step; ``End of training`` ends it."""
    line = "INFO 2026-06-12 10:58:46 ot_train.py:357 step:{s} smpl:32K ep:{ep} epch:2.53 loss:1.226 grdn:34.825 lr:1.0e-05 updt_s:0.502 data_s:0.010"
    exact = _read_lines([line.format(s=800, ep=81)])
    assert (exact.step, exact.loss, exact.epoch) == (800, 1.226, None)
    rounded = _read_lines([line.format(s=800, ep=81), line.format(s="1K", ep="101")])
    assert (rounded.step, rounded.loss, rounded.epoch) == (None, 1.226, None)
    end = [
        line.format(s="50K", ep="5K"),
        "INFO 2026-06-12 18:27:57 ot_train.py:367 Checkpoint policy after step 50000",
        "INFO 2026-06-12 18:27:59 ot_train.py:438 End of training",
    ]
    finished = _read_lines(end)
    assert (finished.step, finished.checkpoint_step, finished.final) == (50000, 50000, True)
    # The words inside another sentence end nothing.
    assert not _read_lines(["End of training data reached, restarting the loader"]).final
    # A rounded count is never a counter's value, whatever names it, in either case.
    assert _read_lines(["iteration: 3, tokens: 1.5M, loss: 2.0"]).tokens is None
    assert _read_lines(["iteration: 3, tokens: 12k, loss: 2.0"]).tokens is None
    assert _read_lines(["loss: 2.0, global_step: 13k"]).step is None


def test_an_epochs_own_step_count_is_no_run_step() -> None:
    """The Annotated Transformer's run_epoch (round 118): ``Epoch Step: 1801`` is the batch's
    index within an epoch named on a line of its own and never sized: no run's step, its
    loss read; its validation prints run_epoch's (loss, TrainState): the eval loss."""
    lines = [
        "[Epoch 3] Training ====",
        "Epoch Step:   1801 | Accumulation Step: 181 | Loss:   1.47 | Tokens / Sec:   128.9 | Learning Rate: 1.0e-03",
        "[Epoch 3] Validation ====",
        "(tensor(1.5898), <__main__.TrainState object at 0x000001EDF0FB6C90>)",
    ]
    report = _read_lines(lines)
    assert (report.step, report.loss, report.eval_loss) == (None, 1.47, 1.5898)
    # A step read before (another counter) is stale after it.
    assert _read_lines(["step: 40, loss: 2.0", lines[1]]).step is None
    # The tuple without the TrainState is any print of a tensor.
    assert _read_lines(["(tensor(1.5898), 3)"]).eval_loss is None


def test_an_epoch_bar_not_yet_advanced_makes_the_inner_bars_total_no_runs() -> None:
    """sentence-transformers' fit (2.x) draws ``trange(epochs, desc="Epoch")`` around
    ``trange(steps_per_epoch, desc="Iteration")``. In the first epoch the outer bar stands at
    0/5: the inner bar's 9083 is one epoch's, the run 5 x 9083, whether the copy of the log
    kept tqdm's cursor moves (nested) or not. A bar at 0 of another description (a loading
    bar) is no epoch bar: the inner bar's total stands."""
    outer = "Epoch:   {p}%|          | {e}/5 [00:00<?, ?it/s]"
    frame = "Iteration:  34%|###3      | {n}/9083 [{m:02d}:00<40:00,  2.50it/s]"

    def frames(first: int, last: int) -> str:
        return "\r".join(frame.format(n=n, m=n // 150 % 60) for n in range(first, last, 20))

    first_epoch = [outer.format(p=0, e=0), frames(3000, 3062)]
    for lines in (first_epoch, [first_epoch[0], first_epoch[1] + "\x1b[A"]):
        report = _read_lines(lines)
        assert (report.step, report.max_steps, report.total_from_bar) == (3060, 45415, False)
    second = [*first_epoch, frames(9000, 9084), outer.format(p=20, e=1), frames(0, 3062)]
    assert (_read_lines(second).step, _read_lines(second).max_steps) == (12143, 45415)
    loading = [
        "Loading checkpoint shards:   0%|          | 0/2 [00:00<?, ?it/s]",
        frames(3000, 3062),
    ]
    assert (_read_lines(loading).step, _read_lines(loading).max_steps) == (3060, 9083)


def test_a_scripts_chinese_loss_names_are_the_vocabularys() -> None:
    """A Transformer script's epoch summary (round 119): ``Epoch 30 完成 | 训练损失: 4.3711 |
    验证损失: 5.9969 | 时间: 385.5s`` (done, training loss, validation loss, time): the train
    and eval losses; the time, a key outside Prometheus' alphabet, is no metric."""
    line = "Epoch 30 完成 | 训练损失: 4.3711 | 验证损失: 5.9969 | 时间: 385.5s"
    report = _read_lines(["Epoch:  30 | Batch:  1320/ 1330 | LR: 2.18e-04 |Loss: 4.3712", line])
    assert (report.loss, report.eval_loss, report.metrics) == (4.3711, 5.9969, ())
    assert _read_lines(["step 5 | 学习率: 0.001 | 损失: 2.5"]).learning_rate == 0.001


def test_a_csv_loggers_rows_give_the_step_column_and_the_reduced_loss() -> None:
    """StableSR's metrics file from Lightning 1.x's CSV logger (round 120): a header of the
    logged names and a row per log step, its created_at a date and time (a time, never a
    value), its global_step a column among the values (the step), and train/loss_step the
    loss (Lightning names a value logged on_step and on_epoch "<name>_step" and
    "<name>_epoch"); the parts beside it (loss_simple, loss_vlb) stay custom metrics."""
    header = (
        "train/loss_simple_step,train/loss_vlb_step,train/loss_step,global_step,epoch,created_at"
    )
    row = "0.1471,0.0006,0.1471,649.0,0,2025-11-07 07:24:14.265115"
    report = _read_lines([header, row])
    assert (report.step, report.loss) == (649, 0.1471)
    assert dict(report.metrics) == {"train_loss_simple_step": 0.1471, "train_loss_vlb_step": 0.0006}
    # Words with commas and a date are no row.
    later = _read_lines([header, "written 2025-11-07 07:24:14,3 files,0.5"])
    assert (later.step, later.loss) == (None, None)
    # In the bar too: the step's value is the loss, the epoch's mean a metric of its own.
    bar = "Epoch 0: 100%|██████████| 5/5 [00:01<00:00, 4.1it/s, v_num=0, train_loss_step=0.25, train_loss_epoch=0.31]"
    in_bar = _read_lines([bar])
    assert (in_bar.loss, dict(in_bar.metrics).get("train_loss_epoch")) == (0.25, 0.31)


def test_tqdm_loggables_lines_give_exact_counts_only() -> None:
    """openpi's training (round 121) logs its bar through tqdm-loggable: ``Progress on:
    -/30000`` before its first step (0 of 30000), ``4.00it/30.0kit`` (4 exact; 30.0k rounded:
    no total), ``12.9kit/200kit`` (rounded: no step, and the step its ``Step 12800:`` line
    gave is stale). A described bar may be any loop's: not read."""
    stamp = "04:51:12.146 [I] Progress on:{desc} {n}/{total} rate:1.4it/s remaining:36:56:20 elapsed:2:48:09 postfix:- (8428:tqdm_logging.py:145)"
    first = _read_lines([stamp.format(desc="", n="-", total="30000")])
    assert (first.step, first.max_steps) == (0, 30000)
    early = _read_lines([stamp.format(desc="", n="4.00it", total="30.0kit")])
    assert (early.step, early.max_steps) == (4, None)
    step_line = "Step 12800: grad_norm=0.2181, loss=0.0112, param_norm=1382.5397"
    assert _read_lines([step_line]).step == 12800
    later = _read_lines([step_line, stamp.format(desc="", n="12.9kit", total="200kit")])
    assert (later.step, later.max_steps, later.loss) == (None, None, 0.0112)
    evaluating = _read_lines([stamp.format(desc="Evaluating", n="40.0it", total="50.0it")])
    assert evaluating.step is None


def test_gaitsets_training_complete_ends_its_run() -> None:
    """GaitSet's train.py prints ``Training COMPLETE`` once fit() returned (round 121)."""
    line = "iter 80000:, hard_loss_metric=0.16106798, full_loss_metric=0.18531343, lr=0.000100, hard or full='full'"
    assert not _read_lines([line]).final
    assert _read_lines([line, "Training COMPLETE"]).final
    assert not _read_lines([line, "Training COMPLETE for fold 1 of 5"]).final


def test_a_plural_iters_count_of_its_total_is_the_runs_step() -> None:
    """awesome-semantic-segmentation-pytorch's trainer and its forks (CIRKD, round 122):
    ``Iters: 19990/20000 || Lr: ... || Task Loss: ... || KD Loss: ...``, the run's
    iteration of max_iters; its two losses are parts of the one it optimizes (no loss)."""
    line = "2023-10-03 03:57:17,967 semantic_segmentation INFO: Iters: 19990/20000 || Lr: 0.000023 || Task Loss: 8.2226 || KD Loss: 0.3666|| Cost Time: 4:48:41 || Estimated Time: 0:00:08"
    report = _read_lines([line])
    assert (report.step, report.max_steps, report.loss) == (19990, 20000, None)


def test_a_segmentation_trainers_total_training_time_ends_it_and_detectron2s_does_not() -> None:
    """awesome-semantic-segmentation-pytorch's train.py logs ``Total training time: 4:49:16.
    701480 (0.8678s / it)`` after its loop (round 122, CIRKD): the end. detectron2 logs its
    ``Total training time: 0:41:22 (0:00:03 on hooks)`` in a finally, on the way out of an
    exception too: no end."""
    prefix = "2023-10-03 03:57:53,388 semantic_segmentation INFO: "
    assert _read_lines([prefix + "Total training time: 4:49:16.701480 (0.8678s / it)"]).final
    d2 = "[01/09 08:46:41 d2.engine.hooks]: Total training time: 0:41:22 (0:00:03 on hooks)"
    assert not _read_lines([d2]).final


def test_a_banners_spoken_max_steps_and_a_dataclass_field_are_the_runs_length() -> None:
    """A pretraining script's banner (round 123): ``Max steps               : 100,000`` (words,
    padded, grouped digits); Oumi's TrainingParams repr a field a line: ``    max_steps=1000,``
    (its epochs beside it are not read: Trainer's max_steps wins). rsl_rl's ``Total steps:
    512`` counts the environment steps so far: no length."""
    assert _read_lines(["Max steps               : 100,000"]).max_steps == 100000
    oumi = ["    gradient_accumulation_steps=1,", "    max_steps=1000,", "    num_train_epochs=3,"]
    assert (_read_lines(oumi).max_steps, _read_lines(oumi).max_epochs) == (1000, None)
    assert _read_lines(["    max_steps=-1,"]).max_steps is None
    assert _read_lines(["                            Total steps: 512 "]).max_steps is None


def test_a_rate_rounded_with_an_si_prefix_is_scaled() -> None:
    """``37.2k tok/s`` (round 123, a pretraining script) is 37,200 tokens per second: a rate
    rounded is still the rate (a rounded count is no count)."""
    line = "step   48180 | loss 14.0980 | lr 1.77e-04 | grad 0.731 | 37.2k tok/s | mfu 37.40%"
    report = _read_lines([line])
    assert (report.step, report.loss) == (48180, 14.098)
    assert dict(report.metrics)["tokens_per_second"] == 37200.0


def test_a_loggers_line_glued_after_a_bars_frame_is_read_alone() -> None:
    """TMR under Lightning (round 124): Rich's log line printed right after a validation
    bar's total-less frame, on the same line: ``Validation: |  | 0/? [00:00<?, ?it/s][13/09/24
    21:52:43] INFO   Epoch 499: v_recons 3.818e-01 ... loss 3.056e-01``. Its loss is the
    train loss the line prints, not an evaluation's (the bar's word is no part of it)."""
    frame = "\rValidation: |          | 0/? [00:00<?, ?it/s]\x1b[A"
    line = "[13/09/24 21:52:43] INFO   Epoch 499: v_recons 3.818e-01  recons 2.136e-01  loss 3.056e-01  kl 3.668e+01"
    report = _read_lines([frame + line])
    assert (report.loss, report.eval_loss) == (0.3056, None)


def test_v_prefixed_twins_are_the_validations_and_a_lone_v_loss_is_not() -> None:
    """TMR's epoch line (round 124) prints each value twice, ``v_x`` (the validation's)
    beside ``x``: ``v_loss 2.128`` is the eval loss there. A PPO line's lone ``v_loss`` beside
    its ``loss`` is the value function's loss: no eval loss."""
    line = "Epoch 499: v_recons 3.818e-01  recons 2.136e-01  v_loss 2.128e+00  loss 3.056e-01  v_kl 8.701e+01  kl 3.668e+01"
    report = _read_lines([line])
    assert (report.loss, report.eval_loss) == (0.3056, 2.128)
    ppo = _read_lines(["step 10 | loss 0.5 | pi_loss 0.1 | v_loss 0.3 | entropy 1.2"])
    assert (ppo.loss, ppo.eval_loss) == (0.5, None)


def test_basicsrs_training_statistics_give_the_runs_length() -> None:
    """BasicSR's trainer (pyiqa, round 125) logs ``Training statistics:`` and, on its last
    line, ``\\tTotal epochs: 100; iters: 11100.``: the run is 11100 iterations."""
    report = _read_lines(["\tTotal epochs: 100; iters: 11100."])
    assert (report.max_steps, report.max_epochs) == (11100, 100.0)
    assert _read_lines(["\tTotal epochs: 100; iters: 0."]).max_steps is None


def test_fast_scnns_epoch_counts_from_zero() -> None:
    """Fast-SCNN's train.py (round 127) and the trainers copied from it print ``Epoch:
    [e/E] Iter [i/n] || Time: ...`` with the epoch of ``range(start_epoch, epochs)``, 0-based,
    and the batch ``i + 1``: the last line of a 200-epoch run is epoch 199, its last batch the
    run's end, never 198 epochs and a batch."""
    line = "2025-06-13 18:31:46,139 - INFO - Epoch: [{e}/200] Iter [{i}/1487] || Time: 104436.8641 sec || lr: 0.00000000 || Loss: 1.1492"
    last = _read_lines([line.format(e=199, i=1487)])
    assert (last.step, last.max_steps, last.loss) == (297400, 297400, 1.1492)
    first = _read_lines([line.format(e="0", i="  10")])
    assert (first.step, first.max_steps) == (10, 297400)
    # Past the last epoch of a 0-based loop: no line of this shape, nothing read as a step.
    assert _read_lines([line.format(e=200, i=10)]).step is None


def test_an_epoch_bar_first_seen_mid_run_counts_epochs_from_one() -> None:
    """A tqdm bar per epoch described ``Epoch e/E train`` (round 127's wind-power trainer,
    its log read from epoch 55 on) counts its epochs from 1 as a counter line's do, where
    it states their number: 55 epochs of 2590 done, then 1695; the run is 400 of them. A
    step printed beside it that disagrees (a resumed run's) keeps the run's length unknown."""
    frame = "Epoch {e}/400 train:  {p}%|#| {n}/2590 [00:12<00:06, 138.07it/s]"
    lines = [
        frame.format(e=55, p=99, n=2580) + "\r" + frame.format(e=55, p=100, n=2590),
        "[SeqAR-Diffusion] Epoch 55/400 Train Loss: 0.0669 | Val Loss: 0.0698",
        frame.format(e=56, p=0, n=1200) + "\r" + frame.format(e=56, p=65, n=1695),
    ]
    report = _read_lines(lines)
    assert (report.step, report.max_steps) == (55 * 2590 + 1695, 400 * 2590)
    assert (report.loss, report.eval_loss) == (0.0669, 0.0698)
    printed = "Step: {s}. Epoch: 1072/2000. Iteration: {i}/35. Total loss: 0.18:  {p}%|#| {n}/35 [00:53<00:55,  2.21s/it]"
    resumed = _read_lines(
        [printed.format(s=37528, i=9, p=26, n=9), printed.format(s=37529, i=10, p=29, n=10)]
    )
    assert (resumed.step, resumed.max_steps) == (37529, None)


def test_a_launchers_failure_names_the_workers_cause() -> None:
    """torchrun ends a failed job's log with its own traceback, ``ChildFailedError`` and a
    summary box (JVrabel/LLM_KD's logs/training.log, a knowledge-distillation run on 4 GPUs
    whose workers died at ``init_process_group``): the workers' exception read before it is
    the cause, not the launcher's word that a child failed. Alone, the launcher's is."""
    worker = [
        "Traceback (most recent call last):",
        '  File "/workspace/src/train_distr.py", line 531, in <module>',
        "    main()",
        "RuntimeError: The server socket has failed to listen on any local network address."
        " useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use",
    ]
    launcher = [
        "E0210 14:23:38.250077 23456244216256 torch/distributed/elastic/multiprocessing/api.py:833]"
        " failed (exitcode: 1) local_rank: 2 (pid: 3032304) of binary: /usr/bin/python",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main',
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "src/train_distr.py FAILED",
        "Root Cause (first observed failure):",
        "  rank      : 2 (local_rank: 2)",
        "  exitcode  : 1 (pid: 3032304)",
        "============================================================",
    ]
    both = _read_lines(worker + launcher)
    assert both.failure is not None and both.failure.startswith("RuntimeError: The server socket")
    assert (both.step, both.loss) == (None, None)
    alone = _read_lines(launcher)
    assert alone.failure == "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"
    # A worker's traceback the run trained on after is no cause of a later launcher's end.
    on = _read_lines([*worker, "step 10 loss 2.0", "step 11 loss 1.9", *launcher])
    assert on.failure == "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"


def test_counts_within_epochs_first_seen_past_the_first_epoch_place_no_step() -> None:
    """MindSpore's LossMonitor (round 128) prints ``epoch: 300 step: 62, loss is ...``, the
    step within the epoch: read from epoch 294 on (the log's start rotated away, an excerpt),
    the epochs before the first one seen are not in it, so the run's step is unknown, never
    the 7 x 62 counted from there; read from epoch 1, the epochs add up."""
    line = "epoch: {e} step: 62, loss is 1.3457448482513428"
    late = _read_lines([line.format(e=e) for e in range(294, 301)])
    assert (late.step, late.loss) == (None, 1.3457448482513428)
    early = _read_lines([line.format(e=e) for e in range(1, 4)])
    assert early.step == 3 * 62


def test_a_lone_loss_named_after_its_kind_is_the_loss() -> None:
    """PaddleGAN's trainer (round 129, an RCAN run) prints its one loss as ``loss_pixel``:
    the line's only loss-named value is its loss, as a lone ``mask_loss`` is. Its costs print
    their unit apart (``0.80452 sec reader_cost``): no word of the next key. A loss's setting
    (``loss_scale``) or its time (openseg's ``Loss Time 0.029s``) is never the loss."""
    line = (
        "[11/27 01:10:47] ppgan.engine.trainer INFO: Iter: 238100/400000 lr: 6.829e-05"
        " loss_pixel: 8.124 batch_cost: 0.80452 sec reader_cost: 0.03792 sec"
        " ips: 19.88770 images/s eta: 1 day, 12:10:51"
    )
    report = _read_lines([line])
    assert (report.step, report.max_steps, report.loss) == (238100, 400000, 8.124)
    metrics = dict(report.metrics)
    assert metrics["reader_cost"] == 0.03792 and "sec_reader_cost" not in metrics
    assert _read_lines(["Iter: 100/200 loss_scale: 65536.0 lr: 1e-4"]).loss is None
    assert _read_lines(["Iter: 100/200 Loss Time 0.029s lr: 0.1"]).loss is None
    # Two parts, none of them the loss.
    assert _read_lines(["Iter: 100/200 loss_cls: 0.5 loss_bbox: 0.2"]).loss is None


def test_transunets_max_iterations_line_is_the_runs_length() -> None:
    """TransUNet's trainer, and Swin-Unet's copied from it (round 129), logs ``10 iterations
    per epoch. 1500 max iterations`` (max_epochs x len(trainloader)) after the arguments'
    Namespace, whose ``max_iterations=30000`` it overrides: the run is 1500 steps."""
    lines = [
        "[08:53:53.655] Namespace(batch_size=24, max_epochs=150, max_iterations=30000, seed=1234)",
        "[08:53:53.684] 10 iterations per epoch. 1500 max iterations ",
        "[09:03:37.756] iteration 8 : loss : 0.309317, loss_ce: 0.023067",
    ]
    report = _read_lines(lines)
    assert (report.step, report.max_steps, report.loss) == (8, 1500, 0.309317)


def test_an_epochs_summary_puts_the_step_at_that_epochs_end() -> None:
    """PaddleViT (round 131) reports its batch index every 100 of an epoch's 196
    (``Epoch[100/100], Step[0100/0196], ...``), then the epoch's summary ``----- Epoch[100/100],
    Train Loss: ...``: that epoch ended, so the run is at 100 x 196, not at the last count
    printed. A summary of an epoch the step read is not in, or before the epoch's size is
    known, moves nothing."""
    counts = [
        "2022-05-06 14:32:57,650 Epoch[100/100], Step[0000/0196], Avg Loss: 0.2471, Avg Acc: 0.9453",
        "2022-05-06 14:34:26,245 Epoch[100/100], Step[0100/0196], Avg Loss: 0.2957, Avg Acc: 0.9359",
    ]
    summary = "2022-05-06 14:35:48,191 ----- Epoch[{e}/100], Train Loss: 0.2982, Train Acc: 0.9360, time: 173.40"
    ended = _read_lines([*counts, summary.format(e=100)])
    assert (ended.step, ended.max_steps, ended.loss) == (19600, 19600, 0.2982)
    assert _read_lines(counts).step == 99 * 196 + 100
    # An earlier epoch's summary (or one far ahead) is not the epoch under way.
    assert _read_lines([*counts, summary.format(e=98)]).step == 99 * 196 + 100
    assert _read_lines([*counts, summary.format(e=103)]).step == 99 * 196 + 100
    # A summary alone: no size, no step.
    assert _read_lines([summary.format(e=100)]).step is None


def test_a_sentence_ending_in_a_length_setting_by_its_name_is_the_runs_length() -> None:
    """A script's summary that ends in the setting by its argument's name (round 133's Phi-2
    run: ``Calculated max_steps: 6,250``) is the run's length; a running total by name
    (``total_steps: 512``) or a setting of -1 is none."""
    line = "2025-09-28 20:45:04,684 - INFO - [__main__] - 📈 Calculated max_steps: {n}"
    assert _read_lines([line.format(n="6,250")]).max_steps == 6250
    assert _read_lines([line.format(n="-1")]).max_steps is None
    assert _read_lines(["Collected total_steps: 512"]).max_steps is None
    # Not a sentence's middle: the setting ends the line.
    assert _read_lines(["max_steps: 100 reached, stopping early"]).max_steps is None


def test_a_bar_whose_count_is_the_epochs_summary_number_counts_no_steps() -> None:
    """A fine-tune (round 135) draws tqdm over ``range(100)`` epochs and prints ``Epoch
    {epoch+1}, Training loss: ...`` after each frame: the bar's count is the epochs done, no
    step, so neither its 60 nor its 100 is the run's step or length; one coincidence is not
    enough (a step bar at 1 beside an epoch 1 summary stays the step)."""
    frame = " {p}%|######    | {n}/100 [31:06:49<20:43:42, 1865.56s/it]"
    summary = (
        "Epoch {e}, Training loss: 0.1338, Validation loss: 0.1227, Validation Accuracy: 0.9679"
    )
    lines = [frame.format(p=n, n=n) + summary.format(e=n + 1) for n in (57, 58, 59, 60)]
    report = _read_lines(lines)
    assert (report.step, report.max_steps) == (None, None)
    assert (report.loss, report.eval_loss) == (0.1338, 0.1227)
    # As the file holds them, each frame after a carriage return: the line glued after the
    # newest frame of a message of frames is read too.
    assert _read_lines(["\r" + line for line in lines]) == report
    once = _read_lines([frame.format(p=1, n=1) + summary.format(e=2)])
    assert (once.step, once.max_steps) == (1, 100)


def test_a_scripts_own_time_glued_to_its_count_is_a_stamp() -> None:
    """DeepLab-V1-PyTorch (round 136) writes its time and then ``iters:{:4}, loss:...`` with
    no space between: the stamp is no part of the count, and the plural ``iters:`` leading a
    script's line is its count (a setting's ``Total iterations: 5000`` is none)."""
    line = "2019-11-09 15:34:13iters:{i}, loss:0.2544, accuracy:0.896"
    report = _read_lines([line.format(i="5980"), line.format(i="6000")])
    assert (report.step, report.loss) == (6000, 0.2544)
    assert _read_lines(["2019-11-08 23:37:35iters:  20, loss:2.0569, accuracy:0.5154"]).step == 20
    assert _read_lines(["Total iterations: 5000, loss: 2.0"]).step is None


def test_hapis_evaluation_counts_its_own_batches() -> None:
    """PaddlePaddle's ``Model.fit`` (hapi's ProgBarLogger) prints ``Eval begin...``, the
    evaluation's own ``step i/n - loss: ...`` lines and ``Eval samples: N`` after each epoch
    (jm12138/Paddle-CheXNet's logs/finetune.log): their counts are the evaluation's batches and
    their loss the eval loss; ModelCheckpoint's ``save checkpoint at .../final`` ends fit."""
    epoch_one = [
        "Epoch 1/2",
        "step 10/20 - loss: 0.5000 - AUROC_avg: 0.80 - 3s/step",
        "step 20/20 - loss: 0.4000 - AUROC_avg: 0.81 - 3s/step",
        "save checkpoint at /home/aistudio/save/0",
        "Eval begin...",
        "step 5/5 - loss: 0.9000 - AUROC_avg: 0.70 - 2s/step",
        "Eval samples: 40",
    ]
    epoch_two = [
        "Epoch 2/2",
        "step 10/20 - loss: 0.3000 - AUROC_avg: 0.82 - 3s/step",
        "Predict begin...",
        "step 3/3 - 1s/step",
        "Predict samples: 12",
    ]
    read = _read_lines(epoch_one + epoch_two)
    assert (read.step, read.max_steps, read.loss, read.eval_loss) == (30, 40, 0.3, 0.9)
    assert not read.final
    end = [
        "step 20/20 - loss: 0.2000 - AUROC_avg: 0.83 - 3s/step",
        "Eval begin...",
        "step 5/5 - loss: 0.8000 - AUROC_avg: 0.72 - 2s/step",
        "Eval samples: 40",
        "save checkpoint at /home/aistudio/save/final",
    ]
    read = _read_lines(epoch_one + epoch_two + end)
    assert (read.step, read.loss, read.eval_loss, read.final) == (40, 0.2, 0.8, True)
    # An epoch's save names the epoch: no end; someone's own words about a "final" are not it.
    assert not _read_lines([*epoch_one, "MY: save checkpoint at /out/final"]).final


def test_a_scripts_counted_stages_are_no_steps() -> None:
    """A script's setup counted in brackets (Edmund-a7/longlive_modify's ``[3/6] No new LoRA
    adapter, training new layers directly...``) is no step of 6; a count in brackets with a
    named value after it is (deep-text-recognition-benchmark's ``[1/300000] Train loss:``)."""
    stages = [
        "[1/6] Initializing model...",
        "[2/6] Setting up trainable parameters...",
        "[3/6] No new LoRA adapter, training new layers directly...",
    ]
    read = _read_lines(stages)
    assert (read.step, read.max_steps) == (None, None)
    read = _read_lines([*stages, "[1/300000] Train loss: 3.63514, Valid loss: 3.57144"])
    assert (read.step, read.max_steps, read.loss) == (1, 300000, 3.63514)


def test_minimind_prints_the_epoch_and_its_batch_in_parentheses() -> None:
    """MiniMind's ``Epoch:[e/E](i/n), loss: ...`` (trainer/train_pretrain.py: the 1-based
    epoch, the batch within the epoch's n)."""
    read = _read_lines(["Epoch:[1/2](100/400), loss: 2.5000, logits_loss: 2.5000, lr: 0.0005"])
    assert (read.step, read.max_steps, read.loss) == (100, 800, 2.5)
    read = _read_lines(["Epoch:[2/2](400/400), loss: 2.1000, logits_loss: 2.1000, lr: 0.00005"])
    assert (read.step, read.max_steps) == (800, 800)


_SAVE = (
    "[2025-02-16 16:31:01,174] [INFO] [logging.py:96:log_dist] [Rank 0] [Torch] Checkpoint"
    " global_step{} is about to be saved!"
)
_READY = (
    "[2025-02-16 16:31:01,174] [INFO] [torch_checkpoint_engine.py:33:commit] [Torch]"
    " Checkpoint global_step{} is ready now!"
)


def _trainer_dicts(n: int, epoch: float) -> list[str]:
    return [f"{{'loss': 4.4, 'grad_norm': 0.07, 'epoch': {epoch + i / 100:.2f}}}" for i in range(n)]


def test_trainer_dicts_count_the_steps_after_the_last_one_printed() -> None:
    """Trainer's dicts without its bar, DeepSpeed's saves every 50 steps (CqGao112/CN-Mini-Phi3's
    sft.log): five dicts between two saves are one every 10 steps, so three after the save at
    150 are at 180. Two gaps must agree; one gap, or uneven ones, leave the step printed."""
    saves = []
    for step in (50, 100, 150):
        saves += [*_trainer_dicts(5, step / 250), _SAVE.format(step), _READY.format(step)]
    after = _trainer_dicts(3, 0.62)
    assert _read_lines(saves + after).step == 180
    assert _read_lines(saves[7:] + after).step == 150  # one gap measured: not trusted
    uneven = [*saves[:7], *_trainer_dicts(4, 0.4), _SAVE.format(150), _READY.format(150)]
    assert _read_lines(uneven + after).step == 150
    # The dict after the run's end (train_runtime, train_loss) is no step of its own.
    end = "{'train_runtime': 6311.5782, 'train_steps_per_second': 0.076, 'train_loss': 4.59, 'epoch': 0.65}"
    assert _read_lines([*saves, *after, end]).step == 180


_OCP = "2024-08-08 13:41:34 (INFO): "


def test_the_open_catalyst_projects_validation_is_an_eval_loss_and_its_runner_ends() -> None:
    """OCP's trainers (GuGroup/Finetuner_OCP's README; ocpmodels' base_trainer.validate and
    main.py): a training line is the general reader's; a validation's line (four decimals,
    the epoch last, no lr or step) gives an eval loss, not a training loss; ``Total time
    taken`` behind OCP's head ends the run, and nowhere else."""
    train = (
        "energy_mae: 1.66e+01, forces_mae: 8.61e-04, energy_forces_within_threshold: 0.00e+00,"
        " loss: 1.68e+01, lr: 2.00e-05, epoch: 9.09e-01, step: 1.00e+01"
    )
    found = parse_message(_OCP + train, NOW)
    assert [(r.parser, r.report.step, r.report.loss) for r in found] == [("progress", 10, 16.8)]
    val = (
        "energy_forces_within_threshold: 0.0000, energy_mae: 24.6883, forces_mae: 0.2271,"
        " loss: 25.2326, epoch: 0.5882"
    )
    found = parse_message(_OCP + val, NOW)
    assert [(r.parser, r.report.loss, r.report.eval_loss) for r in found] == [
        ("ocp", None, 25.2326)
    ]
    end = parse_message(_OCP + "Total time taken: 16.31741714477539", NOW)
    assert [(r.parser, r.report.final) for r in end] == [("ocp", True)]
    assert parse_message("Total time taken: 16.31741714477539", NOW) == []
    assert parse_message("2024-08-08 13:41:39 - INFO - Total time taken: 16.3", NOW) == []


def test_deepspeeds_save_as_it_starts_gives_the_step_and_no_checkpoint() -> None:
    """DeepSpeed's engines log ``create(tag)`` as a save starts (torch_checkpoint_engine.py):
    the default tag ``global_stepN`` is the run's step, and nothing is saved yet; a tag of the
    script's own says no step (CosyVoice's ``init``)."""
    found = parse_message(_SAVE.format(100), NOW)
    assert [(r.report.step, r.report.checkpoint_step) for r in found] == [(100, None)]
    assert parse_message("[Rank 0] Checkpoint init is about to be saved!", NOW) == []


def test_deepspeeds_launch_command_gives_epochs_times_steps_per_epoch() -> None:
    """DeepSpeed's runner logs the command it runs (``cmd = .../python3.10 -u -m
    deepspeed.launcher.launch ... train_ds.py --epochs=50 --steps_per_epoch=32``, LISA's): the
    run's steps are the product where both are said."""
    cmd = (
        "[2025-11-11 15:01:51,479] [INFO] [runner.py:630:main] cmd = /home/u/envs/lisa/bin/"
        "python3.10 -u -m deepspeed.launcher.launch --world_info=eyJsb2Nh --master_port=24999"
        " train_ds.py --version=llava --epochs=50 --steps_per_epoch=32 --lr=0.0003"
    )
    read = _read_lines([cmd])
    assert (read.max_steps, read.max_epochs) == (1600, 50.0)
    assert _read_lines([cmd.replace(" --steps_per_epoch=32", "")]).max_steps is None
    assert (
        _read_lines([cmd.replace("cmd = /home/u/envs/lisa/bin/python3.10", "cmd = ls")]).max_epochs
        is None
    )


def test_a_rank_prefixed_exception_is_the_failure() -> None:
    """torchrun's ``[rank0]:`` before each line of a worker's traceback
    (Edmund-a7/longlive_modify's train_output.log): its exception is the cause, not the
    launcher's ChildFailedError after it."""
    lines = [
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/z/train_opens2v.py", line 107, in <module>',
        "[rank0]:     main()",
        "[rank0]: RuntimeError: mat2 must be a matrix, got 1-D tensor",
        "Traceback (most recent call last):",
        '  File "/z/bin/torchrun", line 33, in <module>',
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    ]
    assert _read_lines(lines).failure == "RuntimeError: mat2 must be a matrix, got 1-D tensor"


def test_lavis_counts_its_inner_epochs_and_metric_loggers_loop_end_closes_one() -> None:
    """Salesforce LAVIS' iteration-based runner (dophison/Nhom11_UniMERNet's train_log.log):
    ``Start training, max_iters=200, in total 8 inner epochs.``, then MetricLogger's ``Train:
    data epoch: [0]; inner epoch [0]  [24/25]`` (the 0-based index) and, after the loop,
    ``... inner epoch [0] Total time: ...``: 25 of 200 iterations are done."""
    lines = [
        "2026-03-27 20:11:48,731 [INFO] Start training, max_iters=200, in total 8 inner epochs.",
        "Train: data epoch: [0]; inner epoch [0]  [ 0/25]  eta: 0:02:10  lr: 0.000001  loss: 2.7380"
        "  time: 5.2060  data: 0.0000  max mem: 15409",
        "Train: data epoch: [0]; inner epoch [0]  [24/25]  eta: 0:00:00  lr: 0.000048  loss: 1.2076"
        "  time: 0.1914  data: 0.0000  max mem: 22623",
    ]
    read = _read_lines(lines)
    assert (read.step, read.max_steps, read.loss) == (24, 200, 1.2076)
    end = "Train: data epoch: [0]; inner epoch [0] Total time: 0:00:09 (0.3974 s / it)"
    assert _read_lines([*lines, end]).step == 25


def test_metric_loggers_total_time_ends_its_epoch_and_the_start_line_gives_the_epochs() -> None:
    """The torchvision references' and MAE's MetricLogger print ``Epoch: [e] Total time: ...``
    once the epoch's loop is over (the 0-based epoch e is done); an evaluation's ``Test:`` says
    nothing of training. MAE's family prints ``Start training for 10 epochs`` before."""
    epoch = [
        "Start training for 10 epochs",
        "Epoch: [3]  [ 0/31]  eta: 0:01:36  lr: 0.000356  loss: 0.7109 (0.7109)  time: 3.1225",
        "Epoch: [3]  [30/31]  eta: 0:00:00  lr: 0.000356  loss: 0.6109 (0.6609)  time: 0.2225",
    ]
    read = _read_lines(epoch)
    assert (read.step, read.max_steps, read.loss) == (123, 310, 0.6109)
    ended = _read_lines([*epoch, "Epoch: [3] Total time: 0:00:08 (0.2649 s / it)"])
    assert ended.step == 124
    tested = _read_lines([*epoch, "Test: Total time: 0:00:17 (0.7803 s / it)"])
    assert tested.step == 123
    # A loop end far from the step read is no end of the epoch under way.
    assert _read_lines([*epoch, "Epoch: [7] Total time: 0:00:08 (0.2649 s / it)"]).step == 123


def test_a_loops_epoch_and_batch_after_colons_count_from_epoch_zero() -> None:
    """A text recognition trainer's ``epoch : 0 [13967/21279] Train loss: 0.06080,Valid loss:
    0.07618`` (kwon-jaehong/korea-text-recognition-pytorch): the batch within epoch 0; a later
    epoch's, of unknown base, places no step; OpenCLIP's own ``Train Epoch:`` keeps its reading."""
    line = "epoch : 0 [13967/21279] Train loss: 0.06080,Valid loss: 0.07618, time : 12.35 lr : 0.76"
    read = _read_lines([line])
    assert (read.step, read.max_steps, read.loss, read.eval_loss) == (13967, None, 0.0608, 0.07618)
    assert _read_lines([line.replace("epoch : 0", "epoch : 3")]).step is None
    clip = "Train Epoch: 14 [41/14656] [   41984/15007744 (0%)] Loss: 3.6008 (3.656)"
    assert _read_lines([clip]).step == 205225


def test_a_loops_iter_among_name_value_pairs_is_its_step() -> None:
    """Katib's StdOut shape with the loop's count under its own name (jamie0725/DLNLP-Project's
    ``iter=200,loss=15.337533,acc=0.2000``): the step where no ``step`` is said; a fraction is
    no count, and a ``step`` said beside it wins."""
    read = _read_lines(["iter=190,loss=19.110146,acc=0.1778", "iter=200,loss=15.337533,acc=0.2000"])
    assert (read.step, read.loss) == (200, 15.337533)
    assert _read_lines(["iter=1.5,loss=2.0"]).step is None
    assert _read_lines(["iter=300 step=7 loss=2.0"]).step == 7


def test_an_epoch_and_its_global_step_alone_make_a_progress_line() -> None:
    """ManiSkill's CleanRL-style PPO prints ``Epoch: 677, global_step=69222400`` at each
    iteration and no loss: two counts, the run's step; a sentence's lone global step is none."""
    lines = ["Epoch: 676, global_step=69120000", "SPS: 17432", "Epoch: 677, global_step=69222400"]
    assert _read_lines(lines).step == 69222400
    assert _read_lines(["saved the model at global_step: 100"]).step is None


def test_counts_printed_every_so_many_steps_give_no_epoch_size() -> None:
    """SAM-Med3D's train.py (teiderrems/SAM-Med3D's log): ``Epoch: 78, Step: 100, Loss: ...``
    every 20 batches of an epoch whose size it never prints: the last count is not the size
    (the epoch may hold up to 119), so once the count starts over the run's step is unknown;
    nor does one epoch's last count size the epochs a log skipped (0, then 76)."""
    line = "Epoch: {e}, Step: {s}, Loss: 1.52, Dice: 0.86"
    lines = [
        f"Epoch: {e}/199" if s == 0 else line.format(e=e, s=s) for e in (0, 1) for s in (0, 20, 40)
    ]
    assert _read_lines(lines).step is None
    assert _read_lines(lines[:3]).step == 40  # before it starts over: as printed
    skipped = ["Epoch 1", "Step 1 loss 0.5", "Step 2 loss 0.4", "Epoch 77", "Step 1 loss 0.3"]
    assert _read_lines(skipped).step is None
    every = ["Epoch 1", "Step 1 loss 0.5", "Step 2 loss 0.4", "Epoch 2", "Step 1 loss 0.3"]
    assert _read_lines(every).step == 3


def test_bare_bars_of_a_resumed_run_or_of_evaluations_passing_more_often_give_no_step() -> None:
    """A CPS trainer resumed from a checkpoint (Haiduongcable/CPS_Kaggle's log) draws each
    epoch a bare bar of 2315 batches and two bare evaluation bars of 1449: the evaluations'
    bar, advancing most, passes twice an epoch (so which bar trains is unknown), and the
    training bar's passes since ``Load checkpoint from file .../checkpoint_epoch_33.pth`` are
    not the run's epochs. One training and one evaluation pass an epoch, not resumed, read."""

    def bar(total: int, rate: str) -> str:
        frames = (
            f"  {100 * n // total}% {n}/{total} [00:{n:02d}<00:10, {rate}]"
            for n in (0, total // 2, total)
        )
        return "\r" + "\r".join(frames)

    train, test, save = (
        bar(20, "1.51it/s"),
        bar(16, "24.0it/s"),
        "Saving checkpoint to file w/ck.pth",
    )
    assert _read_lines([train, test, test, save] * 3).step is None
    assert _read_lines([train, test, save] * 3).step == 60
    resumed = "Load checkpoint from file weights/checkpoint_epoch_33.pth"
    assert _read_lines([resumed, *[train, test, save] * 3]).step is None
    assert _read_lines(["Loading checkpoint shards: 100%", *[train, test, save] * 3]).step == 60


def test_build_nanogpts_log_file_names_its_step_and_values_by_position() -> None:
    """build-nanogpt's log/log.txt (finnmattis/finn-GPT's finetune_log.txt): ``3546 train
    1.853347`` every step, ``3500 val 2.3744`` and ``3500 hella 0.2950`` every 250, each at its
    own precision; other lines of a number, a word and a number are not these."""
    read = _read_lines(
        ["3499 train 1.742698", "3500 val 2.3744", "3500 hella 0.2950", "3500 train 1.780465"]
    )
    assert (read.step, read.loss, read.eval_loss) == (3500, 1.780465, 2.3744)
    assert dict(read.metrics)["hellaswag_accuracy"] == 0.295
    assert _read_lines(["5000 train 0.8", "12 train 3"]).step is None


def test_ray_prefixes_kept_in_colour_are_taken_off() -> None:
    """A Ray job's driver log captured from a terminal keeps the prefix's colour codes
    (Bihan/dstack-configs' verl_demo.log: ``ESC[36m(TaskRunner pid=14640)ESC[0m``): taken off
    like the plain prefix, so verl's ``("Final validation metrics: {...`` is its end, and its
    ``Total training steps: 435`` its length."""
    prefix = "\x1b[36m(TaskRunner pid=14640)\x1b[0m "
    lines = [
        prefix + "Total training steps: 435",
        prefix + "step:435 - actor/pg_loss:0.064 - critic/vf_loss:0.048 - training/global_step:435",
        prefix + "(\"Final validation metrics: {'val-core/openai/gsm8k/reward/mean@1': \"",
    ]
    read = _read_lines(lines)
    assert (read.step, read.max_steps, read.loss, read.final) == (435, 435, 0.064, True)


def test_trainers_summary_in_a_json_lines_file_ends_the_run_and_its_mean_is_no_loss() -> None:
    """ms-swift's logging.jsonl keeps Trainer's summary after training (lgc-FINANCE/DeepClima-R1's:
    ``{"train_runtime": 2959.8245, ..., "train_loss": 0.28420261, "epoch": 1.0,
    "global_step/max_steps": "438/438", ...}``): the run's end; its train_loss is the whole
    run's mean, not the loss (the last step's, 0.15476817, stands). A step's dict that carries
    train_runtime beside its own loss (Unsloth's) ends nothing."""
    step = '{"loss": 0.15476817, "epoch": 0.98370031, "global_step/max_steps": "430/438"}'
    end = (
        '{"train_runtime": 2959.8245, "train_samples_per_second": 2.363, "train_loss": 0.28420261,'
        ' "epoch": 1.0, "global_step/max_steps": "438/438", "percentage": "100.00%"}'
    )
    read = _read_lines([step, end])
    assert (read.step, read.max_steps, read.loss, read.final) == (438, 438, 0.15476817, True)
    assert dict(read.metrics)["train_loss"] == 0.28420261
    unsloth = '{"loss": 0.5, "train_runtime": 12.5, "train_loss": 0.6, "epoch": 0.5, "step": 18}'
    assert not _read_lines([unsloth]).final


def test_trainer_saves_anchor_the_steps_its_dicts_count_on() -> None:
    """Trainer's own ``Saving model checkpoint to .../checkpoint-2000`` names the step it saves
    at: with its dicts every 5 steps between two saves 100 apart (LLaMA-Factory's
    running_log.txt), the dicts after a third save count on from it."""
    save = "[INFO|2024-11-27 10:23:32] trainer.py:3801 >> Saving model checkpoint to saves/lora/checkpoint-{}"
    d = "[INFO|2024-11-27 10:25:27] logging.py:157 >> {{'loss': 0.0067, 'learning_rate': 4.8e-05, 'epoch': {:.2f}}}"
    lines = []
    for n in (1900, 2000, 2100):
        lines += [d.format(n / 17 + i / 100) for i in range(20)] + [save.format(n)]
    assert _read_lines([*lines, d.format(124.0)]).step == 2105
    assert _read_lines([*lines[21:], d.format(124.0)]).step is None  # one gap: not trusted


def test_ultralytics_own_bar_since_8_3_is_read_as_its_table_row() -> None:
    """Ultralytics 8.3.2xx draws its own bar (ultralytics/utils/tqdm.py, no tqdm):
    ``    100/100      2.77G     0.7101 ... 640: 100% ━━━━━━━━━━━━ 409/409 2.4it/s 2:48``
    (JackTheProgrammer/Fine-tuned-YOLO11's training_output.txt): the 1-based epoch's row and
    409 batches, 100 x 409 done; its validation bar is no training bar."""
    header = "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size"
    row = "    {e}/100      2.77G     0.7101     0.3574     0.9531          1        640: 100% ━━━━━━━━━━━━ 409/409 2.4it/s 2:48"
    val = "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100% ━━━━━━━━━━━━ 58/58 2.8it/s 20.5s"
    lines = [line for e in (99, 100) for line in (header, row.format(e=e), val)]
    read = _read_lines(lines)
    assert (read.step, read.max_steps) == (40900, 40900)
    mid = "      1/100      2.13G      1.596      2.455      1.443          1        640: 5% ━─────────── 20/409 2.5it/s 8.0s<2:36"
    read = _read_lines([header, mid])
    assert (read.step, read.max_steps) == (20, 40900)


def test_yolov5s_validation_bar_is_no_training_bar() -> None:
    """YOLOv5 before 7.0 (and YOLOv7) describe their validation bar with the table's header,
    ``Class Images Labels P R mAP@.5 mAP@.5:.95``: the last lines of a run pasted without
    its epoch rows (yolov5-150-epochs-end in the world corpus, its last three lines) gave
    step 17 of 17, the validation batches. Now nothing; beside a training row, the row."""
    val = (
        "               Class     Images     Labels          P          R     mAP@.5 mAP@.5:.95:"
        " 100%|██████████| 17/17 [00:24<00:00,  1.47s/it]"
    )
    tail = [
        val,
        "                 all        657       2287      0.878      0.543      0.644      0.336",
    ]
    read = _read_lines([*tail, "Results saved to runs/train/exp2"])
    assert (read.step, read.max_steps) == (None, None)
    header = "     Epoch   gpu_mem       box       obj       cls    labels  img_size"
    row = "   149/149     3.32G   0.03187   0.02706  0.005085        29       640: 100%|██████████| 213/213 [01:02<00:00,  3.40it/s]"
    read = _read_lines([header, row, *tail])
    assert (read.step, read.max_steps) == (31950, 31950)


def test_a_plain_files_trainer_dicts_do_not_move_the_step_past_its_bar() -> None:
    """A log with no time of its own per line (a file read as it is: LLaMA-Factory's
    logs/train.out, Trainer's bar frames and each dict after them on one line) gives Trainer's
    dicts no time to set beside the bar's own clock: the bar's count stands (24 of 120), no
    step is guessed from the dicts' epochs (it read 25 in the plain file only)."""
    line = (
        "\r {p}%|█▉        | {a}/120 [{ta}<4:02:35, 150.06s/it]\r {q}%|██        | {b}/120"
        " [{tb}<3:59:17, 149.55s/it]\r{blank}\r{{'loss': 1.0{b}, 'grad_norm': 0.79, 'learning_rate':"
        " 4.8e-05, 'epoch': {e}}}"
    )
    times = {
        n: f"{(n * 150) // 3600}:{(n * 150) % 3600 // 60:02d}:{n * 150 % 60:02d}"
        for n in range(16, 25)
    }
    lines = [
        line.format(
            p=a * 100 // 120,
            q=(a + 1) * 100 // 120,
            a=a,
            b=a + 1,
            ta=times[a],
            tb=times[a + 1],
            blank=" " * 40,
            e=round((a + 1) / 24.75, 2),
        )
        for a in range(16, 24)
    ]
    assert _read_lines(lines).step == 24
    assert (
        _read_lines(
            [
                *lines,
                "\r 20%|██        | 24/120 [1:00:00<3:59:17, 149.55s/it][INFO|trainer.py:4021] >> ",
            ]
        ).step
        == 24
    )


def test_reid_baselines_epoch_and_iteration_and_its_epoch_done() -> None:
    """reid-strong-baseline's ignite trainer (ZhuangLii/naic2020_reid's log): its yacs config
    dump's ``  MAX_EPOCHS: 50``, ``Epoch[50] Iteration[550/593] Loss: 0.371`` (1-based epoch,
    the iteration within it) and ``Epoch 50 done. Time per batch: ...``: 50 x 593 of 50 x 593;
    before the epoch's end, 49 x 593 + 550. Not ``Iteration[550/593]`` alone as 550 of 593."""
    prefix = "2020-09-18 14:06:53,351 reid_baseline.train INFO: "
    lines = [
        "  MAX_EPOCHS: 50",
        prefix + "Epoch[50] Iteration[500/593] Loss: 0.376, Acc: 0.671, Base Lr: 6.00e-05",
        prefix + "Epoch[50] Iteration[550/593] Loss: 0.371, Acc: 0.684, Base Lr: 6.00e-05",
    ]
    read = _read_lines(lines)
    assert (read.step, read.max_steps, read.loss) == (29607, 29650, 0.371)
    done = prefix + "Epoch 50 done. Time per batch: 0.679[s] Speed: 376.9[samples/s]"
    assert _read_lines([*lines, done]).step == 29650
    assert _read_lines(["  Max_Epochs: 50"]).max_epochs is None  # only as yacs or argparse spell it


def test_an_iddpm_epoch_of_n_and_its_batch_index_after_a_colon() -> None:
    """An improved-DDPM trainer (sndnyang/iDDPM's log): ``[Epoch 302/500][   0:391]  Loss:
    0.0714`` prints the 1-based epoch of 500 and the batch's index of 391: 301 x 391 + 0."""
    read = _read_lines(
        [
            "10-04 13:24:08: iddpm_main.py[280]: [Epoch 302/500][   0:391]  Loss: 0.0714 CE: 0.0000 Dif: 0.0714"
        ]
    )
    assert (read.step, read.max_steps, read.loss) == (117691, 195500, 0.0714)


def test_a_loops_batch_index_is_its_count() -> None:
    """A GPT-2 script's ``[99.94%] batch_index=105472 loss=3.7350`` (kevin00hu/GPT_2's log):
    its enumerate's count, the step where it does not start over."""
    read = _read_lines(
        [
            "2024-10-26 10:18:46.240 | INFO     | __main__:train:58 - [99.94%] batch_index=105472 loss=3.7350",
            "2024-10-26 10:19:06.335 | INFO     | __main__:train:58 - [100.00%] batch_index=105536 loss=3.7490",
        ]
    )
    assert (read.step, read.loss) == (105536, 3.749)


def test_a_yacs_dumps_length_is_a_top_level_sections_not_a_stages() -> None:
    """yacs config dumps in capitals: reid-strong-baseline's ``SOLVER:`` then ``  MAX_EPOCHS:
    50`` is the run's epochs; CLIP-ReID's ``  STAGE1:`` then ``    MAX_EPOCHS: 120`` and ``
    STAGE2:`` ... ``60`` (hhj-hhj-hhj/CLIP-ReID-Test's log) are two stages', so none of them."""
    assert (
        _read_lines(["SOLVER:", "  OPTIMIZER_NAME: 'Ranger'", "  MAX_EPOCHS: 50"]).max_epochs == 50
    )
    stages = ["SOLVER:", "  STAGE1:", "    MAX_EPOCHS: 120", "  STAGE2:", "    MAX_EPOCHS: 60"]
    line = "2024-05-11 16:50:43,296 transreid.train INFO: Epoch[4] Iteration[50/534] Loss: 2.916, Base Lr: 2.82e-04"
    read = _read_lines([*stages, line])
    assert (read.step, read.max_steps, read.max_epochs) == (1652, None, None)


def test_caffes_parse_log_csv_names_its_iteration_numiters() -> None:
    """Caffe's tools/extra/parse_log.py writes a training CSV (luameows/amsoftmax-caffe's
    log/train.txt): ``NumIters,Seconds,LearningRate,accuracy,softmax_loss`` then a row every
    display interval, the iteration as a float: the step."""
    rows = [
        "NumIters,Seconds,LearningRate,accuracy,softmax_loss",
        "292000.0,52757.219276,1e-16,0.984375,2.97475",
        "293000.0,53013.873499,1e-16,0.960938,3.10887",
    ]
    read = _read_lines(rows)
    assert (read.step, read.loss) == (293000, 3.10887)


def test_a_real_trainer_with_no_bar_counts_on_from_its_own_saves() -> None:
    """A real Transformers 5.25 Trainer run on CPU (tests/fixtures/logs/
    transformers_5.25_no_bar_saves.py: ``disable_tqdm``, a dict every 2 steps, a save every 10,
    ``max_steps=35``): its only bars are ``Writing model shards`` at each save (work beside
    training, no step); the dicts after the third save count on from it (34, the last dict's
    step; the save at 35 follows it), of 35, and Trainer's summary ends the run."""
    text = (Path(__file__).parent / "fixtures/logs/transformers_5.25_no_bar_saves.log").read_text()
    lines = text.splitlines()
    read = _read_lines(lines)
    assert (read.step, read.max_steps, read.loss, read.final) == (34, 35, 3.886, True)
    before_last_save = lines[: next(i for i, s in enumerate(lines) if "checkpoint-35" in s)]
    assert _read_lines(before_last_save).step == 34
    # Before the third save one gap is measured: not trusted, no step.
    after_two_saves = lines[: next(i for i, s in enumerate(lines) if "checkpoint-30" in s)]
    assert _read_lines(after_two_saves).step is None


def test_an_epoch_header_with_a_loggers_level_and_the_word_started() -> None:
    """SSL-ViT's train_finetune.py (lzc452/SSL-VIT-VIDEO-ANALYTICS' logs/finetune.log): ``[INFO]
    Epoch {epoch}/{epochs} started`` heads each epoch, then ``[INFO] step={i}/{n} loss=...``
    counts the epoch's batches from 1 again: the step is the run's, 2 x 289 + 200."""
    lines = ["[INFO] Epoch 1/30 started"]
    lines += [f"[INFO] step={i}/289 loss=4.{i:04d}" for i in range(20, 289, 20)]
    lines += ["[INFO] Epoch train finished, avg_loss=4.4551, time=888.6s"]
    lines += ["[INFO] Epoch 2/30 started"]
    lines += [f"[INFO] step={i}/289 loss=4.{i:04d}" for i in range(20, 289, 20)]
    lines += ["[INFO] Epoch 3/30 started", "[INFO] step=20/289 loss=4.0946"]
    lines += ["[INFO] step=200/289 loss=3.7954"]
    read = _read_lines(lines)
    assert (read.step, read.max_steps, read.loss) == (778, 8670, 3.7954)


def test_a_batch_counted_before_its_epoch_places_a_step_only_in_epoch_zero() -> None:
    """A Chinese GPT-2 trainer (davidsongtao/Medical_QA_System_GPT2's train.py) prints
    ``当前Batch：{i}/{n} | 当前epoch:{e}/{E} | 当前损失值：{loss}``, its epoch from
    ``range(epochs)``: 当前 ("current") names nothing, 损失值 is the loss value. Epoch 0 is the
    first; a later epoch's base is not printed, so it places no step, though its loss is read."""
    first = parse_message(
        "当前Batch：1290/6035 | 当前epoch:0/50 | 当前损失值：2.9484 | 当前准确率：46.61%", 0.0
    )
    assert [(r.report.step, r.report.max_steps, r.report.loss) for r in first] == [
        (1290, 301750, 2.9484)
    ]
    later = parse_message("当前Batch：1290/6035 | 当前epoch:10/50 | 当前损失值：2.9484", 0.0)
    assert [(r.report.step, r.report.max_steps, r.report.loss) for r in later] == [
        (None, None, 2.9484)
    ]


def test_nanogpts_evaluation_with_the_word_loss_left_out() -> None:
    """tiny-shrek's train.py (arsallls/tiny-shrek's logs/finetune.log) prints ``  eval {it}:
    train {mean} | val {mean} | {bpc} bpc``, estimate_loss's means of each split, as nanoGPT's
    ``step {it}: train loss ..., val loss ...`` with "loss" left out: the step, the train
    loss and the eval loss. With accuracies on the line, no losses are guessed."""
    read = parse_message("  eval 180: train 0.8041 | val 1.0971 | 1.5828 bpc", 0.0)
    assert [(r.report.step, r.report.loss, r.report.eval_loss) for r in read] == [
        (180, 0.8041, 1.0971)
    ]
    assert parse_message("eval 3: train 0.91 | val 0.88 | acc", 0.0) == []


def test_a_json_dicts_step_of_and_a_stages_end_with_its_steps() -> None:
    """LingJie's sft.py (9178nekomc/LingJie-Chat-v2-Pro's logs/sft.log) prints ``{"step": 780,
    "of": 782, "loss_lm": ..., "loss_heads": ...}`` every 20 steps, then ``sft done, steps:
    782``: "of" beside "step" is the run's length, and the stage's end gives the steps it took.
    The optimized loss (loss_lm + loss_heads) is not printed, so no loss is read; an
    evaluation's "done, steps" counts its own batches and is not read."""
    read = _read_lines(
        [
            '{"step": 760, "of": 782, "loss_lm": 0.0716, "loss_heads": 0.4713, "tok_s": 43352.3}',
            '{"step": 780, "of": 782, "loss_lm": 0.0798, "loss_heads": 0.4755, "tok_s": 43353.2}',
            "sft done, steps: 782",
        ]
    )
    assert (read.step, read.max_steps, read.loss) == (782, 782, None)
    assert parse_message("eval done, steps: 50", 0.0) == []
    assert [r.report.max_steps for r in parse_message('{"step": 9, "of": 3}', 0.0)] == [None]


_D2_END = [
    "[08/30 23:14:51] d2.utils.events INFO:  eta: 0:00:08  iter: 1979  total_loss: 19.62"
    "  loss_ce: 0.1488  time: 0.4357  lr: 1e-07  max_mem: 15545M",
    "[08/30 23:15:00] fvcore.common.checkpoint INFO: Saving checkpoint to ./output/model_final.pth",
    "[08/30 23:15:00] d2.utils.events INFO:  eta: 0:00:00  iter: 1999  total_loss: 19.4"
    "  loss_ce: 0.1432  time: 0.4357  lr: 1e-07  max_mem: 15545M",
    "[08/30 23:15:00] d2.engine.hooks INFO: Overall training speed: 1998 iterations in 0:14:30"
    " (0.4357 s / it)",
    "[08/30 23:15:00] d2.engine.hooks INFO: Total training time: 0:14:31 (0:00:01 on hooks)",
]


def test_detectron2s_final_checkpoint_ends_the_run_and_a_new_launch_starts_over() -> None:
    """detectron2's PeriodicCheckpointer saves ``model_final`` only at iteration max_iter - 1
    (fvcore), logged before that iteration's metrics: the run's end (BUAAZhangHaonan/
    mgm_mask2former's output/log.txt). Its file logger appends the next launch to the same
    log: a step printed below the last after the end is a new attempt, no longer finished."""
    ended = _read_lines(_D2_END)
    assert (ended.step, ended.loss, ended.final) == (1999, 19.4, True)
    relaunched = _read_lines(
        [
            *_D2_END,
            "[08/30 23:20:18] d2.engine.train_loop INFO: Starting training from iteration 0",
            "[08/30 23:20:28] d2.utils.events INFO:  eta: 1:11:19  iter: 19  total_loss: 109.3"
            "  loss_ce: 2.111  time: 0.4327  lr: 1.9e-06  max_mem: 15545M",
        ]
    )
    assert (relaunched.step, relaunched.loss, relaunched.final) == (19, 109.3, False)
    periodic = "[08/30 23:00:00] fvcore.common.checkpoint INFO: Saving checkpoint to ./output/model_0000999.pth"
    assert [r.report.final for r in parse_message(periodic, 0.0)] == [False]


def test_a_real_trainer_trained_twice_in_one_process_is_unfinished_between_runs(
    tmp_path: Path,
) -> None:
    """Two real Transformers 5.25 Trainer runs in one process (a fold loop), captured here
    (tests/fixtures/logs/transformers_5.25_two_runs.py): the first run's summary dict ends it,
    and the second run's bar starting over is a new attempt, unfinished until its own end."""
    from exporter.logs.inspect import read_log

    fixture = Path(__file__).parent / "fixtures/logs/transformers_5.25_two_runs.log"
    with open(fixture, encoding="utf-8", newline="") as fh:  # the bars' carriage returns kept
        text = fh.read()
    second = text.index("fold 1")
    mid = text[: text.index("\n", text.index("'epoch': '0.375'", second)) + 1]
    read = []
    for name, part in (("mid", mid), ("whole", text)):
        path = tmp_path / f"{name}.log"
        path.write_text(part, encoding="utf-8", newline="")
        r = read_log(str(path), NOW)[0].report()
        read.append((r.step, r.max_steps, r.loss, r.final))
    assert read == [(4, 12, 3.898, False), (12, 12, 3.903, True)]


def test_nanogpt_seis_train_lines_eval_lines_and_a_duration_after_the_loss() -> None:
    """nanogpt-seis' src/train.py (ethellight565/nanogpt-seis' checkpoints/train.log): ``[train]
    iter {i}: loss {loss} {dt} ms/iter``, whose number after the loss is a duration with its
    unit (no list of losses), and ``[eval] iter {i}: train {mean} val {mean} lr ...``."""
    read = _read_lines(
        [
            "[train] iter 7990: loss 2.0802 2302 ms/iter",
            "[eval] iter 8000: train 1.9710 val 2.3993 lr 3.00e-05",
            "[train] iter 8000: loss 1.8766 3576 ms/iter",
        ]
    )
    assert (read.step, read.loss, read.eval_loss) == (8000, 1.8766, 2.3993)
    # IRNet's four loss parts after one key stay a list: no loss.
    irnet = parse_message("step:  100/ 500 loss:0.35 0.30 2.72 0.19", 0.0)
    assert [(r.report.step, r.report.loss) for r in irnet] == [(100, None)]


def test_dgcnns_train_and_test_epoch_summaries() -> None:
    """DGCNN's main.py (packyan/DGCNN-Pytorch's checkpoints/train.log): ``Train %d, loss: %.6f,
    train acc: ...`` after each epoch (0-based) and ``Test %d, loss: ..., test acc: ...``
    after its evaluation: the epoch's train loss, then the eval loss; no step."""
    read = _read_lines(
        [
            "Train 78, loss: 1.465312, train acc: 0.957736, train avg acc: 0.932717",
            "Train 79, loss: 1.461166, train acc: 0.959972, train avg acc: 0.937235",
            "Test 79, loss: 1.561166, test acc: 0.920000, test avg acc: 0.890000",
        ]
    )
    assert (read.step, read.loss, read.eval_loss) == (None, 1.461166, 1.561166)


def test_parameter_golfs_wallclock_stop_ends_the_run() -> None:
    """OpenAI Parameter Golf's train_gpt.py at its wall-clock cap logs ``stopping_early:
    wallclock_cap train_time:599635ms step:6130/20000`` and breaks out of its loop
    (lolrazh/parameter-golf's checkpoints/train.log): the steps done, of those given, ended."""
    read = _read_lines(
        [
            "step:6100/20000 train_loss:2.676640 lr_scale:0.0286 muon_mom:0.9900 "
            "train_time:594463ms step_avg:97.45ms this_step:3793.3ms mem:19155MiB swa_n:7",
            "step:6130/20000 val_loss:2.7199 val_bpb:1.1673 train_time:599635ms step_avg:97.82ms",
            "stopping_early: wallclock_cap train_time:599635ms step:6130/20000",
        ]
    )
    assert (read.step, read.max_steps, read.loss, read.final) == (6130, 20000, 2.67664, True)


def test_llamafactorys_record_of_trainers_summary_ends_the_run() -> None:
    """LLaMA-Factory's LogCallback copies each log of Trainer's into trainer_log.jsonl; the last,
    Trainer's summary after training (no loss, no learning rate), becomes a record at the last
    step with none of a step's or an evaluation's values: null in older versions
    (suzushi-tw/luojiu-7b-base), left out in newer ones (syGOAT/Mistral-v0.2-Translator-bf16).
    A step's record or an evaluation's at the last step is no end."""
    step = (
        '{"current_steps": 8660, "total_steps": 8660, "loss": 0.1333, "learning_rate": 0.0, '
        '"epoch": 4.0, "percentage": 100.0, "elapsed_time": "5:39:46", "remaining_time": "0:00:00"}'
    )
    dropped = (
        '{"current_steps": 8660, "total_steps": 8660, "epoch": 4.0, "percentage": 100.0, '
        '"elapsed_time": "5:39:46", "remaining_time": "0:00:00", "throughput": "0.00", '
        '"total_tokens": 0}'
    )
    nulls = (
        '{"current_steps": 8712, "total_steps": 8712, "loss": null, "eval_loss": null, '
        '"predict_loss": null, "reward": null, "learning_rate": null, "epoch": 3.0, '
        '"percentage": 100.0, "elapsed_time": "4 days, 7:19:52", "remaining_time": "0:00:00"}'
    )
    evaluation = (
        '{"current_steps": 8660, "total_steps": 8660, "eval_loss": 0.25, "epoch": 4.0, '
        '"percentage": 100.0, "elapsed_time": "5:40:02", "remaining_time": "0:00:00"}'
    )
    assert [r.report.final for r in parse_message(step, 0.0)] == [False]
    assert [r.report.final for r in parse_message(evaluation, 0.0)] == [False]
    assert [r.report.final for r in parse_message(dropped, 0.0)] == [True]
    assert [r.report.final for r in parse_message(nulls, 0.0)] == [True]
    read = _read_lines([step, dropped])
    assert (read.step, read.max_steps, read.loss, read.final) == (8660, 8660, 0.1333, True)


def test_passls_epoch_of_epochs_and_its_iteration() -> None:
    """PASSL's LogHook (PaddlePaddle/PASSL's outputs/log.txt), derived from mmcv's, prints
    ``Epoch [{epoch}/{epochs}][{iter}/{iters_per_epoch}]`` (both 1-based) under a config dump
    full of numbers: step 20 of 300 x 365; the loss its value before the running mean."""
    line = (
        "[10/20 12:23:16] passl.engine.trainer INFO: Epoch [1/300][20/365]\tlr: 3.559e-02, "
        "eta: 3 days, 9:12:34, time: 2.670, data_time: 2.280, loss 1.5001e+01 (1.2273e+01), "
        "acc1  1.562 ( 2.508), acc5  7.812 (13.035)"
    )
    read = [(r.report.step, r.report.max_steps, r.report.loss) for r in parse_message(line, 0.0)]
    assert read == [(20, 109500, 15.001)]
    later = parse_message("Epoch [3/300][20/365]\tlr: 1e-02, loss 1.2 (1.3)", 0.0)
    assert [(r.report.step, r.report.max_steps) for r in later] == [(750, 109500)]


def test_starting_training_for_n_steps_and_python_loggings_cookbook_prefix() -> None:
    """A build-nanoGPT-style trainer (vijay0019/GPT-From-Scratch's log/training.log) logs
    through Python logging's "%(asctime)s - %(name)s - %(levelname)s - %(message)s":
    ``Starting training for 19073 steps`` (the loop's range) is the run's length, and a lone
    ``validation loss: 10.9522`` after that prefix is the eval loss."""
    read = _read_lines(
        [
            "2026-01-17 04:38:27 - training.trainer - INFO - Starting training for 19073 steps",
            "2026-01-17 04:38:30 - training.trainer - INFO - validation loss: 10.9522",
            "2026-01-17 04:40:15 - training.trainer - INFO - step    17 | loss: 9.627371 | "
            "lr 1.5105e-05 | norm: 2.2904 | dt: 2332.05ms | tok/sec: 224818.91",
        ]
    )
    assert (read.step, read.max_steps, read.loss, read.eval_loss) == (17, 19073, 9.627371, 10.9522)
    # " - val loss" is no logger named "val": the time alone is the head, and the message
    # reads as it does bare, an eval loss (a train loss before 36287b6).
    timed = parse_message("2026-01-17 04:38:30 - val loss: 3.08", 0.0)
    assert [(r.report.loss, r.report.eval_loss) for r in timed] == [(None, 3.08)]
    assert timed == parse_message("val loss: 3.08", 0.0)


def test_lightnings_max_epochs_reached_after_a_complete_last_epoch_gives_the_steps() -> None:
    """A Lightning log read from its last epoch (Delve-ERAV1/MACHINE-TRANSLATION-English-to-
    Italian's train_logs.txt): ``Epoch 19: ... 455/455`` then "`Trainer.fit` stopped:
    `max_epochs=20` reached.": twenty whole epochs (Lightning counts from 0; only a stop by
    max_steps shortens an epoch's bar), 9100 of 9100. Without the closing line, or with the
    bar short of its total, the epochs before the first one seen stay unknown."""
    frame = (
        "Epoch 19: {pct}%|██████████| {n}/455 [03:07<00:00,  2.43it/s, v_num=2, loss=3.270, "
        "validation_cer=0.761]\r"
    )
    last = [frame.format(pct=99, n=454), frame.format(pct=100, n=455)]
    closing = "`Trainer.fit` stopped: `max_epochs=20` reached."
    read = _read_lines([*last, closing])
    assert (read.step, read.max_steps, read.loss, read.final) == (9100, 9100, 3.27, True)
    assert _read_lines(last).step is None
    assert _read_lines([frame.format(pct=99, n=454), closing]).step is None


def test_a_phases_loss_padded_with_spaces_under_the_train_loss() -> None:
    """The BERT fine-tuning tutorial's loop (Smit6/toxic-comment-classification's
    train_logs.txt) prints ``Train loss {mean}`` then ``Val   loss {mean}``, padded to line up:
    the second is the eval loss, never the train loss."""
    read = _read_lines(
        [
            "Epoch 10/10",
            "----------",
            "Train loss 0.14170783003808768",
            "Val   loss 0.13944906414391284",
        ]
    )
    assert (read.step, read.loss, read.eval_loss) == (
        None,
        0.14170783003808768,
        0.13944906414391284,
    )
    assert parse_message("Validation loss decreased (0.52 --> 0.48)", 0.0) == []


def test_rich_bar_of_a_run_bounded_by_steps_alone_reads_its_loss() -> None:
    """Lightning's RichProgressBar prints "Epoch i/{max_epochs - 1}"; a run bounded by
    ``max_steps`` alone has max_epochs -1, so its bar says "Epoch 1/-2" (a real Lightning 2.5
    run, ``max_steps=12``, loss NaN from step 5). The line is still the bar: its NaN loss is
    read, and no last epoch, epoch count or step is made from the -2 (that bar's total is the
    steps left, not the epoch's size)."""
    report = _read_lines(
        [
            "Epoch 1/-2 ━━━━━━━━━━━━━━━━━━━━ 4/4 0:00:00 • 0:00:00 958.71it/s train_loss: nan",
        ]
    )
    assert report.loss is not None and math.isnan(report.loss)
    assert (report.step, report.max_steps, report.max_epochs) == (None, None, None)
    bounded = _read_lines(
        ["Epoch 2/9  ━━━━━━━━━━━━ 4/8 0:00:01 • 0:00:01 58.71it/s train_loss: -inf v_num: 0"]
    )
    assert bounded.loss == -math.inf
    assert (bounded.step, bounded.max_steps, bounded.max_epochs) == (20, 80, 10.0)


@pytest.mark.parametrize(
    "end, final",
    [
        # nanochat's base_train, mid_train and chat_sft after their loops (rounds 179 to 181).
        ("Total training time: 170.39m", True),
        ("Minimum validation bpb: 0.8118", True),
        ("Minimum validation bpb: 0.762070", True),
        # Karpathy's autoresearch: its summary after the loop (round 177).
        ("training_seconds: 308.4", True),
        # llm.c's train_gpt2cu once its loop broke out at its last step (round 212).
        ("total average iteration time: 2509.813786 ms", True),
        ("total average iteration time: 2509.8 ms (so far)", False),
        # detectron2 logs its total time in a finally, after an exception too: no end.
        ("Total training time: 0:41:22 (0:00:03 on hooks)", False),
        # A configuration's budget, printed before training: no end.
        ("training_seconds: 300", False),
        ("Minimum validation bpb: 0.8118 (step 1200)", False),
    ],
)
def test_nanochat_and_autoresearch_print_their_own_end(end: str, final: bool) -> None:
    report = _read_lines(
        ["step 21399/21400 (100.00%) | loss: 2.719005 | lrm: 0.00 | dt: 475.63ms", end]
    )
    assert report.final is final
    assert report.step == 21399


def test_tok_sec_is_the_throughput() -> None:
    """nanochat's and autoresearch's ``tok/sec: 1,089,422`` and a nanochat-style trainer's
    ``tok-sec: 3529.88`` are tokens per second (rounds 177 to 182)."""
    nanochat = _read_lines(
        ["step 00249/21400 (1.16%) | loss: 4.074147 | dt: 479.39ms | tok/sec: 1,093,653"]
    )
    assert dict(nanochat.metrics)["tokens_per_second"] == 1093653.0
    dashed = _read_lines(["step: 00009/19073 | loss: 10.7820 | tok-sec: 4086.71 | eta: 333.1m"])
    assert dict(dashed.metrics)["tokens_per_second"] == 4086.71


def test_verl_sft_trainer_prints_its_end_plain() -> None:
    """verl's FSDP SFT trainer prints ``Final validation metrics: {...}`` unquoted before it
    returns (round 183); the PPO trainer's pprint quotes it."""
    lines = [
        "step:105 - train/loss:0.06290543079376221 - train/lr(1e-3):0.0",
        "step:105 - val/loss:0.058481086045503616",
    ]
    ended = _read_lines([*lines, "Final validation metrics: {'val/loss': 0.058481086045503616}"])
    assert (ended.final, ended.step, ended.eval_loss) == (True, 105, 0.058481086045503616)
    assert not _read_lines([*lines, "Final validation metrics are logged to wandb"]).final


_MMENGINE_TRAIN = (
    "2023/06/08 09:28:15 - mmengine - INFO - Epoch(train)  [1][  5/109]  lr: 1.0000e-03  "
    "eta: 0:12:04  time: 0.6679  data_time: 0.0913  memory: 2956  loss: 3.4052"
)


@pytest.mark.parametrize(
    "config, total",
    [
        # MMPretrain's dump, the loop on one line (round 185).
        (["train_cfg = dict(by_epoch=True, max_epochs=10, val_interval=1)"], 1090),
        # MMDetection 3's, pretty-printed a setting a line (round 186's file).
        (
            [
                "train_cfg = dict(",
                "    type='EpochBasedTrainLoop',",
                "    max_epochs=10,",
                "    val_interval=10,",
                "    dynamic_intervals=[(280, 1)])",
            ],
            1090,
        ),
        # A config file's own variable, which a child config's loop may not use: none.
        (["max_epochs = 10"], None),
    ],
)
def test_mmengine_config_dump_gives_the_loop_length(config: list[str], total: int | None) -> None:
    report = _read_lines([*config, _MMENGINE_TRAIN])
    assert (report.step, report.max_steps) == (5, total)


def test_a_save_names_the_step_of_a_log_that_prints_no_other() -> None:
    """A script that logs only its samples and saves (its loss on a tqdm bar nobody kept,
    round 193): the step its last save names is the run's; a printed step or a bar still wins
    over a save."""
    saves = [
        "2025-01-25 14:14:49,109 - INFO - Found checkpoint at 5000 steps. Loading and training"
        " for 50 more steps.",
        "2025-01-25 14:16:46,267 - INFO - Checkpoint saved at step 5050",
    ]
    assert _read_lines(saves).step == 5050
    printed = _read_lines([*saves, "step 5060 | loss 2.5"])
    assert printed.step == 5060
    before = _read_lines(["step 5070 | loss 2.5", saves[1]])
    assert before.step == 5070


def test_a_tqdm_bar_under_an_epoch_line_of_its_own_is_that_epochs_pass() -> None:
    """A loop printing ``Epoch 2/20`` on its own line, then a tqdm bar whose description names
    no epoch, seen only complete (a file keeps each bar's last frame): the line says which pass
    it is, so the run's step is the epochs before it plus the bar (round 194's BERT trainer);
    the validation bar after it counts nothing."""
    lines = []
    for epoch in (1, 2, 3):
        lines += [
            f"Epoch {epoch}/20",
            "Training: 100%|##########| 500/500 [02:52<00:00,  2.90it/s]",
            "Validating: 100%|##########| 125/125 [00:14<00:00,  8.69it/s]",
            f"Train Loss: {9 - epoch}.5, Val Loss: {8 - epoch}.25",
        ]
    report = _read_lines(lines)
    assert (report.step, report.max_steps) == (1500, 10000)
    assert (report.loss, report.eval_loss) == (6.5, 5.25)


def test_a_bar_counting_examples_is_no_training_bar() -> None:
    """datasets' ``Map`` and ``Saving the dataset`` bars count examples
    (``14732/14732 [00:00<00:00, 521240.77 examples/s]``): not the run's steps, however
    long, and Trainer's bare bar after them is (round 195); a bar counting batches
    (``tqdm(unit="batch")``) still counts steps."""
    lines = [
        "Map: 100%|##########| 14732/14732 [00:01<00:00, 7914.76 examples/s]",
        "Saving the dataset (1/1 shards): 100%|####| 14732/14732 [00:00<00:00, 521240.77 examples/s]",
        " 50%|#####     | 460/921 [3:49:10<3:49:33, 29.89s/it]",
        "{'loss': 1.6868, 'grad_norm': 3.7254672050476074, 'learning_rate': 4.99e-05, 'epoch': 0.54}",
    ]
    report = _read_lines(lines)
    assert (report.step, report.max_steps) == (460, 921)
    batches = _read_lines(["Epoch 1: 50%|#####     | 5/10 [00:01<00:01,  4.50batch/s, loss=0.3]"])
    assert batches.step == 5


_LIGHTNING_RESULTS = [
    "┏━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━┓",
    "┃      {stage} metric      ┃       DataLoader 0        ┃",
    "┡━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━┩",
    "│    val_class_accuracy     │     87.77101135253906     │",
    "│         {name}          │     5.576150417327881     │",
    "└───────────────────────────┴───────────────────────────┘",
]


@pytest.mark.parametrize(
    "stage, name, eval_loss, test_loss",
    [
        ("Validate", "val_loss", 5.576150417327881, None),
        ("Test", "test_loss", None, 5.576150417327881),
    ],
)
def test_lightnings_results_table_gives_the_eval_or_test_loss(
    stage: str, name: str, eval_loss: float | None, test_loss: float | None
) -> None:
    """Lightning's table after ``trainer.validate()`` or ``trainer.test()`` (rich installed,
    round 197): the validation's loss is the eval loss, the test's the ``test_loss`` metric;
    an accuracy row is neither."""
    bar = (
        "Epoch 39: 100%|##########| 130/130 [01:53<00:00,  1.14it/s, v_num=7, "
        "train_loss_step=5.640, val_loss=5.580]"
    )
    table = [line.format(stage=stage, name=name) for line in _LIGHTNING_RESULTS]
    report = _read_lines([bar, *table])
    assert report.eval_loss == (eval_loss if eval_loss is not None else 5.58)
    assert dict(report.metrics).get("test_loss") == test_loss


def test_trainers_bar_frame_and_its_dict_on_one_line_are_both_read() -> None:
    """A copy of Trainer's output with the bar's frame and the log dict printed after it on
    one line (InternVL's README, round 204): the bar's step and total and the dict's loss;
    frames run together before the dict still give the dict (a TRL log's last line)."""
    line = (
        " 83%|████████▎ | 5/6 [28:30<05:28, 328.42s/it] "
        "{'loss': 4.5385, 'learning_rate': 1e-05, 'epoch': 0.82}"
    )
    report = _read_lines([line])
    assert (report.step, report.max_steps, report.loss) == (5, 6, 4.5385)
    frames = "".join(
        f"100%|█████████▉| {n}/4854 [2:15:{n - 4800}<00:15,  1.70s/it]" for n in (4849, 4850)
    )
    together = _read_lines([f"{frames}      {{'loss': 1.1103, 'epoch': 3.0}}"])
    assert together.loss == 1.1103


def test_epoch_and_step_in_brackets_is_a_step_within_the_epoch() -> None:
    """A BERT pretraining benchmark's ``Epoch [0], Step [500], next_loss[...], ..., loss:
    10.93`` (round 208): the step within a 0-based epoch it never sizes, the run's in epoch 0
    only; its ``loss:`` is the loss, ``avg_loss`` the running mean."""
    line = (
        "INFO:root:Epoch [0], Step [500], next_loss[0.9829702377319336], mask_loss[9.95070552],"
        " avg_loss: 12.1177, next_avg_acc: 52.94, loss: 10.933675765991211, lr: 5.01e-06"
    )
    first = _read_lines([line])
    assert (first.step, first.loss) == (500, 10.933675765991211)
    later = _read_lines([line.replace("Epoch [0]", "Epoch [1]")])
    assert (later.step, later.loss) == (None, 10.933675765991211)


def test_a_step_rounded_in_a_bars_postfix_is_no_step() -> None:
    """tqdm formats a postfix float to three significant digits: BioNeMo's bar past step
    1000 says ``global_step=3.1e+4`` (round 216), no exact step; nor is the bar's count the
    step (34112 batches against some 31000 steps). The loss and eval loss are still read."""
    frame = (
        "Epoch 0:   3%|▎         | 34112/1100000 [5:29:03<171:22:00,  1.73it/s, loss=2.52, "
        "v_num=, reduced_train_loss=2.520, global_step=3.1e+4, consumed_samples=2.54e+8, "
        "val_loss=2.510]"
    )
    report = _read_lines([frame])
    assert (report.step, report.loss, report.eval_loss) == (None, 2.52, 2.51)
    exact = _read_lines([frame.replace("global_step=3.1e+4", "global_step=794.0")])
    assert exact.step == 794


def test_aws_fsdp_examples_batch_lines_are_its_steps() -> None:
    """AWS's FSDP example logs ``Batch 25 Loss: 7.60201, Speed: 47.38 samples/sec, lr: ...``
    behind its logger's time and place (rounds 218 to 220): the loop's batch index as printed,
    and the loss."""
    line = (
        "0: 2024-05-15 02:38:00 I [train.py:110] Batch 25 Loss: 7.60201, Speed: 47.38 "
        "samples/sec, lr: 0.000100"
    )
    report = _read_lines([line])
    assert (report.step, report.loss, report.learning_rate) == (25, 7.60201, 0.0001)


def test_a_unit_of_time_printed_apart_makes_the_value_a_duration() -> None:
    """so-vits-svc ends each epoch with ``====> Epoch: 4274, cost 7.40 s`` (round 230): "cost"
    names a loss elsewhere (Marian), but a value with a unit of time after it, apart, is a
    time; a unit word before a number is the next key ("miniE 1 s 833")."""
    step = "2023-04-18 09:48:11,453\t44k\tINFO\tLosses: [1.27, 4.04], step: 21400, lr: 5.8e-05"
    report = _read_lines(
        [step, "2023-04-18 09:48:12,646\t44k\tINFO\t====> Epoch: 4274, cost 7.40 s"]
    )
    assert (report.step, report.loss) == (21400, None)
    glued = _read_lines(["Step 10 | loss 0.5 | cost 7.40 s"])
    assert (glued.step, glued.loss) == (10, 0.5)


def test_a_reference_loss_is_not_the_sole_loss() -> None:
    """so-vits-svc sums its GAN's losses into ``reference_loss`` "for reference" (round 230),
    and DPO's reference model has losses of its own: neither is the loss trained."""
    from exporter.logs.formats.pairs import sole_loss

    assert sole_loss({"reference_loss": 30.6}) is None
    assert sole_loss({"ref_loss": 0.7}) is None
    assert sole_loss({"mask_loss": 1.55}) == 1.55


def test_a_bars_description_says_its_loss_without_a_counter() -> None:
    """RWKV-v4's trainer describes its bar as ``miniE 1 s 833 prog 20.00% : ppl ... loss
    1.687660 lr ...`` (round 229): no counter the general reader knows, its loss still read;
    each mini-epoch's bar is copied whole at its end, saying another loss, a further pass of
    which how many came before is unknown: no step (not the one pass's 833) and no total."""
    lines = [
        f"miniE {e} s {e * 833} prog {e * 20}.00% : ppl 5.4 loss {loss} lr 3.3e-04: 100%|██████████| "
        f"833/833 [03:{clock}<00:00,  4.13it/s]"
        for e, loss, clock in ((1, 1.687660, 21), (2, 1.251349, 17), (3, 1.168444, 17))
    ]
    report = _read_lines(lines)
    assert (report.step, report.max_steps, report.loss) == (None, None, 1.168444)
    # The same frame drawn again saying the same (tqdm's close redraws it) is the same pass.
    once = _read_lines([lines[0], lines[0]])
    assert (once.step, once.loss) == (833, 1.68766)


def test_a_bracketed_description_keeps_its_own_bars() -> None:
    """trlx describes its bar as ``[losses/total_loss: 1.15 | losses/policy_loss: 1.15 |
    losses/value_loss: 0.00]`` (round 233): the whole description, not its part after the
    last "|"; under the losses' own namespace, total_loss is the loss."""
    frame = (
        "[losses/total_loss: 1.15 | losses/policy_loss: 1.15 | losses/value_loss: 0.00]: "
        "100%|██████████| 128/128 [10:23<00:00,  4.87s/it]"
    )
    report = _read_lines([frame])
    assert (report.step, report.max_steps, report.loss) == (128, 128, 1.15)


def test_tqdms_right_part_alone_is_a_frame_and_a_frame_cut_after_its_rate_counts() -> None:
    """A bar drawn with ``bar_format="{r_bar}"`` (or copied with its left part wrapped away,
    round 235) is ``| 3/950 [00:02<45:10,  2.1it/s]``: its count and total. A frame cut after
    its rate, before its bracket closes (round 229), still gives its count."""
    report = _read_lines(["| 3/950 [00:02<45:10,  2.1it/s]"])
    assert (report.step, report.max_steps) == (3, 950)
    cut = _read_lines(["train: 50%|#####     | 5/10 [00:02<00:02,  2.1it/s"])
    assert (cut.step, cut.max_steps) == (5, 10)
    assert _read_lines(["| 3/950 elsewhere [x]"]).step is None


def test_yolov5_7s_bars_without_a_bracket_are_frames() -> None:
    """YOLOv5 7.0 draws its bars as ``{l_bar}{bar:10}| {n_fmt}/{total_fmt} {elapsed}`` (round
    243): no bracket, no rate. Its rows are the bars of their epochs; its data set scans
    (118287 images at ``00:00``) count items, never the training's steps."""
    lines = [
        "train: Scanning /data/coco/train2017.cache... 117266 images, 1021 backgrounds, 0 "
        "corrupt: 100%|██████████| 118287/118287 00:00",
        "      Epoch    GPU_mem   box_loss   obj_loss   cls_loss  Instances       Size",
        "        0/1      22.4G    0.07281    0.08384    0.06359        199        640:  45%|████▌"
        "     | 832/1849 06:01",
        "        0/1      22.4G    0.07281    0.08384    0.06359        199        640: 100%|█████"
        "█████| 1849/1849 13:15",
    ]
    report = _read_lines(lines)
    assert (report.step, report.max_steps) == (1849, 3698)
    assert _read_lines(lines[:1]).step is None
    assert _read_lines(["train:  45%|####      | 832/1849 06:0"]).step is None  # cut: no frame


def test_a_global_batch_index_is_the_runs_step() -> None:
    """ZipVoice (icefall's trainer) logs ``Epoch 1, batch 149, global_batch_idx: 150, ...``
    (round 246): the epoch's batch is ambiguous (icefall counts epochs from 0 or 1), the
    global index is the run's step."""
    line = (
        "2025-10-27 17:35:57,208 INFO [train_zipvoice.py:731] Epoch 1, batch 149, "
        "global_batch_idx: 150, batch size: 10, loss[loss=0.07169, over 16784.00 frames. ], "
        "tot_loss[loss=0.07307, over 1857440.30 frames. ], cur_lr: 1.00e-04, grad_scale: 65536.0"
    )
    report = _read_lines([line])
    assert (report.step, report.loss) == (150, 0.07169)


def test_values_printed_before_their_names_are_read_in_that_shape_only() -> None:
    """tinygrad's loops print ``   10 4.40 s run, 11.8750 loss, 0.000000000005 LR, 1454.57 GB
    used, 394520.83 GFLOPS``, or the same without the step (rounds 248, and the one left in
    ``unread/``): each value before its name. Only that whole shape is read; a number before
    a word elsewhere is prose."""
    lines = [
        f"{i:5d} 4.40 s run, {loss} loss, 0.000000000005 LR, 1454.57 GB used, 394520.83 GFLOPS"
        for i, loss in ((9, 11.875), (10, 11.8125))
    ]
    report = _read_lines(lines)
    assert (report.step, report.loss, report.learning_rate) == (10, 11.8125, 5e-12)
    bare = _read_lines(["9.3798 loss, 0.000058412552 LR, 124.27 GB used, 5.09 s"])
    assert (bare.step, bare.loss) == (None, 9.3798)
    assert _read_lines(["3 files, 2 folders, 1 loss, copied"]).loss is None  # no 3 named parts
    assert _read_lines(["12 files, 3 folders, 4 links"]).loss is None  # no loss named


@pytest.mark.parametrize(
    ("shape", "total"), [("described", None), ("bracketless", 50), ("r_bar", 40)]
)
def test_this_stops_bar_shapes_drawn_by_real_tqdm_are_read(
    tmp_path: Path, shape: str, total: int | None
) -> None:
    """tqdm run for real (tests/fixtures/logs/programs/tqdm_formats_of_this_stop.py) in the
    shapes rounds 229 to 243 found: a description of values with no counter (its loss read,
    its epochs counted from the frames that start over), YOLOv5 7.0's bars without a bracket
    under the table header (two epochs of 25), tqdm's right part alone. Every batch run is
    the step."""
    output, truth = _run_program(tmp_path, "tqdm_formats_of_this_stop", shape)
    report = _read_lines(output.split("\n"))
    assert (report.step, report.max_steps) == (truth["step"], total)
    assert report.loss == truth["loss"]


def test_a_bar_drawn_once_per_epoch_gives_no_run_total_without_the_number_of_epochs() -> None:
    """Keras and Lightning draw one bar per epoch: its total is one epoch's. A Keras bar
    pasted without its ``Epoch i/N`` header (round 259, the Moiré-pattern CNN's log) or a
    Lightning bar whose run never said ``max_epochs`` is the step, not the run's total."""
    frames = [f"{n:3d}/102 [=>....] - ETA: 7:40 - loss: 0.6{n:03d}" for n in (13, 14)]
    alone = _read_lines(frames)
    assert (alone.step, alone.max_steps, alone.loss) == (14, None, 0.6014)
    under_header = _read_lines(["Epoch 1/3", *frames])
    assert (under_header.step, under_header.max_steps) == (14, 306)
    lightning = _read_lines(
        [
            f"Epoch 0:  {n}%|####      | {n}/100 [00:04<00:06, 10.00it/s, loss=0.5, v_num=0]"
            for n in (39, 40)
        ]
    )
    assert (lightning.step, lightning.max_steps) == (40, None)


def test_tf_estimators_saved_dict_is_an_evaluation_at_the_step_it_names() -> None:
    """tf.estimator writes "Saving dict for global step N: ..." only after an evaluation: its
    ``loss`` is the evaluation's, at the run's step N (round 260, a TensorFlow Object
    Detection API run whose training loss was never printed)."""
    report = _read_lines(
        [
            "I0522 11:32:23.280791  1256 estimator.py:2039] Saving dict for global step 93: "
            "DetectionBoxes_Precision/mAP = 0.23755923, Loss/total_loss = 1.0476927, "
            "global_step = 93, learning_rate = 0.0003, loss = 1.0476927"
        ]
    )
    assert (report.step, report.loss, report.eval_loss) == (93, None, 1.0476927)


def test_an_epoch_header_after_a_loggers_head_takes_the_wrapped_values_under_it() -> None:
    """The legacy Colossal-AI Trainer's hook logs ``[Epoch 5 / Train]:`` and the epoch's
    mean loss, which Rich's handler wraps onto a line of its own (round 262): the header after
    the logger's ``INFO:`` is the epoch's, so the values under it are read (their step
    unknown), and they are the loss printed last, not the bar's rounded postfix before."""
    head = "                    INFO     colossalai - colossalai - INFO: "
    report = _read_lines(
        [
            "[Epoch 5 / Train]: 100%|##########| 1/1 [00:00<00:00,  2.05it/s, loss=107, lr=0.1]",
            head + "[Epoch 5 / Train]:",
            "                             Loss = 107.16 | LR = 0.00012 | Throughput = 0",
        ]
    )
    assert (report.step, report.loss) == (None, 107.16)
    from exporter.logs.parse import parse_message

    said = parse_message(head + "Epoch 5 of the run was slow", NOW)
    assert all(found.parser != "epochs" for found in said)


def test_keras_early_stopping_run_for_real_ends_the_fit(tmp_path: Path) -> None:
    """Keras 3 run for real with EarlyStopping (tests/fixtures/logs/programs/
    keras_early_stopping.py): ``Epoch 2: early stopping`` is printed in on_train_end, the fit
    is over (final), at the steps it ran of the 50 epochs planned; the evaluation's bar after
    it moves nothing; its ModelCheckpoint's saves are at their epochs' ends. PaddlePaddle
    hapi's ``Epoch 6: Early stopping.`` ends its fit alike; a sentence around the words is no
    end."""
    output, truth = _run_program(tmp_path, "keras_early_stopping", KERAS_BACKEND="torch")
    report = _read_lines(output.replace("\r", "\n").split("\n"))
    assert (report.step, report.max_steps, report.final) == (
        truth["step"],
        truth["max_steps"],
        True,
    )
    assert report.loss == pytest.approx(truth["loss"], rel=1e-3)
    assert report.eval_loss == pytest.approx(truth["eval_loss"], rel=1e-3)
    # Its saves: "Epoch 2: saving model to ..." before the epoch's last frame, at its end.
    assert report.checkpoint_step == truth["checkpoint_step"]
    assert _read_lines(["    Epoch 6: Early stopping."]).final
    assert not _read_lines(["Epoch 6: early stopping counter 3 of 10"]).final


def test_lightnings_values_logged_on_step_and_on_epoch_run_for_real(tmp_path: Path) -> None:
    """Lightning run for real, its losses logged on_step and on_epoch
    (tests/fixtures/logs/programs/lightning_step_and_epoch.py): the loss is the step's
    (``train_loss_step``), the eval loss the validation's result (``val_loss_epoch``), not its
    last batch's (``val_loss_step``); each other one is a custom metric."""
    output, truth = _run_program(tmp_path, "lightning_step_and_epoch")
    report = _read_lines(output.replace("\r", "\n").split("\n"))
    assert report.step == truth["step"]
    assert report.loss == pytest.approx(truth["loss"], abs=5e-3)  # the bar rounds to 3 places
    assert report.eval_loss == pytest.approx(truth["eval_loss"], abs=5e-3)
    assert {"train_loss_epoch", "val_loss_step"} <= dict(report.metrics).keys()


def test_a_keras_bar_without_its_header_after_a_later_epoch_gives_no_step() -> None:
    """``fit`` prints ``Epoch i/N`` before each epoch's bar when it runs more than one; a log
    whose callbacks named epoch 1365 (ModelCheckpoint) and that shows no header ran ``fit``
    with ``verbose=0``: the bar after it is ``evaluate``'s, its 26 batches no step (round 269
    read step 1 of 26). A bar under a header, or with no later epoch named, still counts."""
    checkpoint = "Epoch 1365: val_loss improved from 0.00010 to 0.00009, saving model to m.keras"
    evaluation = " 26/26 ━━━━━━━━━━━━━━━━━━━━ 0s 3ms/step"
    report = _read_lines([checkpoint, "Final Evaluation:", evaluation])
    assert (report.step, report.max_steps, report.eval_loss) == (None, None, 0.00009)
    assert _read_lines(["Final Evaluation:", evaluation]).step == 26
    fit = " 26/26 ━━━━━━━━━━━━━━━━━━━━ 0s 3ms/step - loss: 0.2000"
    assert _read_lines(["Epoch 2/3", fit, checkpoint.replace("1365", "2")]).step == 52


def test_microwakewords_status_step_and_validation_lines_are_each_their_own() -> None:
    """microWakeWord's train.py prints, after each batch with ``end="\\r"``, ``Validation Batch
    #k: ...; Loss = x; Mini-Batch #n``: training's own loss, despite its words (round 269 read
    it as the eval loss), statuses run together where the carriage returns were lost giving
    the last. ``Step #N: rate r, ..., cross entropy x`` gives the step and the training loss;
    ``Step N (nonstreaming): Validation ... loss = x`` the eval loss, never the training's."""
    status = "Validation Batch #{}: Accuracy = 0.984; Recall = 0.60{}; Precision = 0.85; Loss = {}; Mini-Batch #{}"
    glued = status.format(1, 3, "0.0547", 499) + status.format(2, 4, "0.0546", 0)
    report = _read_lines([glued])
    assert (report.step, report.loss, report.eval_loss) == (None, 0.0546, None)
    assert dict(report.metrics)["recall"] == 0.604
    step = "INFO:absl:Step #500: rate 0.001000, accuracy 98.40%, recall 60.40%, precision 85.00%, cross entropy 0.054600"
    valid = (
        "INFO:absl:Step 500 (nonstreaming): Validation accuracy = 98.10%, recall = 55.00%, "
        "ambient false positives = 3, loss = 0.06100, auc = 0.95000,"
    )
    report = _read_lines([step, valid])
    assert (report.step, report.loss, report.eval_loss) == (500, 0.0546, 0.061)
    assert report.learning_rate == 0.001


def test_an_epoch_bars_closing_frame_counts_the_passes_a_copy_did_not_show() -> None:
    """run_squad's loop draws ``trange(epochs, desc="Epoch")`` around ``tqdm(loader,
    desc="Iteration")``; a copy of its log's end shows the last pass and the outer bar
    closing at 5/5: five passes of 498 are done, not 498 (round 270 read 498)."""
    frames = [
        f"Iteration: {n * 100 // 498:3d}%|#####| {n}/498 [3:40:53<04:37, 25.27s/it]"
        for n in (496, 497)
    ]
    closing = [
        "Iteration: 100%|##########| 498/498 [3:45:36<00:00, 25.29s/it]",
        "Epoch: 100%|##########| 5/5 [17:46:37<00:00, 12922.31s/it]",
    ]
    report = _read_lines([*frames, *closing])
    assert (report.step, report.max_steps) == (2490, 2490)
    assert _read_lines(frames).step == 497


def test_a_test_named_as_the_logger_heads_last_field_is_the_test_sets() -> None:
    """``%(asctime)s | %(levelname)s | %(message)s`` with a message of sections, ``TEST |
    loss=0.3107 acc=0.8748`` after the epochs: the test set's loss, neither the training's
    (round 270 read it as the loss) nor the eval loss; fairseq's ``| valid |`` stays its
    evaluation's."""
    epoch = "2026-03-03 16:31:19,048 | INFO | Epoch 10 | train_loss=0.2474 | val_loss=0.3103"
    test = "2026-03-03 16:33:14,024 | INFO | TEST | loss=0.3107 acc=0.8748"
    report = _read_lines([epoch, test])
    assert (report.loss, report.eval_loss) == (0.2474, 0.3103)
    assert dict(report.metrics)["test_loss"] == 0.3107
    valid = "2020-07-01 10:00:00 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 9.1 | num_updates 100"
    assert (_read_lines([valid]).eval_loss, _read_lines([valid]).loss) == (9.1, None)


def test_a_callbacks_last_loss_that_is_the_runs_mean_leaves_the_last_steps() -> None:
    """A script's Trainer callback prints ``step=N | loss=x`` before each log dict, and at
    the end ``loss=`` the run's mean, which Trainer's closing summary gives as
    ``train_loss``: no step's loss; the last dict's stands (round 270 read the mean). A
    last line whose loss is not the mean stands."""
    lines = [
        "step=610 | loss=0.381029 | lr=2.237694e-09",
        "{'loss': '0.381', 'grad_norm': '0.1018', 'learning_rate': '2.238e-09', 'epoch': '0.9953'}",
        "step=613 | loss=0.649056",
        "{'train_runtime': '1360', 'train_steps_per_second': '0.451', 'train_loss': '0.6491', 'epoch': '1'}",
    ]
    report = _read_lines(lines)
    assert (report.step, report.loss, report.final) == (613, 0.381, True)
    other = [*lines[:2], "step=613 | loss=0.3702", lines[3]]
    assert _read_lines(other).loss == 0.3702


def test_frames_run_together_with_their_descriptions_give_the_last() -> None:
    """A copy that lost the carriage returns between tqdm frames whose description comes
    first (OpenJERE's losses and ``epoch: 0/50:``, YOLOv7's row) runs them into one line;
    each frame ends with its bracket of times and rate: the newest is the last (round 271
    read the second of twenty)."""
    frame = "L: {0}, L_crf: 7.0, epoch: 0/50::  22%|██▏       | {1}/1419 [02:0{2}<07:08,  2.59it/s]"
    line = "".join(frame.format(7.5 + n / 100, n, n % 10) for n in range(308, 319))
    report = _read_lines([line])
    assert (report.step, report.max_steps) == (318, 50 * 1419)


def test_a_logging_record_run_into_the_line_before_keeps_that_lines_values() -> None:
    """``g_loss: 0.69223416WARNING:tensorflow:From ...``: a copy lost the newline before
    TensorFlow's warning; the value is whole and the line's two losses stay two (round 271
    read the other as the loss). DCGAN-tensorflow's ``Epoch: [e/E] [i/n]`` counts the 0-based
    epoch and the batch's index: the batches done."""
    line = (
        "[     393 Epoch:[ 1/25] [ 119/ 273] time: 299.8392, d_loss: 1.39557624, g_loss: "
        "0.69223416WARNING:tensorflow:From /x/saver.py:963: remove_checkpoint is deprecated."
    )
    report = _read_lines([line])
    assert (report.step, report.max_steps, report.loss) == (393, 6825, None)
    assert dict(report.metrics)["g_loss"] == 0.69223416
    original = "Epoch: [ 0] [ 271/ 273] time: 12.0, d_loss: 1.2, g_loss: 0.7"
    assert _read_lines([original]).step == 272


def test_yolo_rows_without_their_header_are_placed_by_the_epochs_completed() -> None:
    """YOLOv5's and YOLOv7's rows print the 0-based epoch of epochs - 1 (``299/299`` is the
    300th), Ultralytics' the 1-based (``300/300``); without the header the row cannot tell,
    and ``300 epochs completed in 2.874 hours.`` does (round 271 read 299 epochs)."""
    row = "   {0}/{0}     11.8G   0.02137   0.01309         0   0.03446        12       640: 100%|██████████| 38/38 [00:30<00:00,  1.25it/s]"
    end = "300 epochs completed in 2.874 hours."
    assert (
        _read_lines([row.format(299), end]).step,
        _read_lines([row.format(299), end]).max_steps,
    ) == (11400, 11400)
    assert _read_lines([row.format(300), end]).step == 11400


def test_a_finished_stages_epoch_bar_does_not_count_a_later_bars_passes() -> None:
    """An ``Epoch`` bar that ran to its end before another bar began (a pretraining stage's
    five epochs, then a fine-tune's ``Iteration`` bar) counts none of the later bar's passes:
    its step is its own count, not five passes of it."""
    stage = [
        "Epoch:  80%|########  | 4/5 [10:00<02:30, 150.0s/it]",
        "Epoch: 100%|##########| 5/5 [12:30<00:00, 150.0s/it]",
    ]
    later = [
        f"Iteration:  {n}%|#    | {n}/100 [00:0{n % 10}<01:00,  1.60it/s]" for n in (10, 11, 12)
    ]
    assert _read_lines([*stage, *later]).step == 12


def test_frames_with_a_postfix_run_together_give_the_last() -> None:
    """tqdm's postfix sits inside the frame's bracket (``[00:01<00:09, 4.1it/s, loss=0.7]``);
    frames with one, run together where a copy lost their carriage returns, end there too."""
    frame = "{0}%|#         | {0}/100 [00:{0:02d}<01:00,  4.10it/s, loss=0.{0}]"
    report = _read_lines(["".join(frame.format(n) for n in (11, 12, 13))])
    assert (report.step, report.max_steps, report.loss) == (13, 100, 0.13)


def test_evaluates_bar_after_a_headless_fit_gives_no_training_loss() -> None:
    """Keras 3's ``fit(verbose=0)`` with ModelCheckpoint's messages, then ``evaluate``
    (``verbose=1``): its bar's loss is the evaluation's on the data it was given, no training
    loss (a real run read 2.8893 as the loss); the checkpoint's val_loss stays the eval loss."""
    lines = [
        "Epoch 4: val_loss improved from 3.70943 to 3.41870, saving model to /tmp/best.keras",
        "Final Evaluation:",
        "20/20 ━━━━━━━━━━━━━━━━━━━━ 0s 2ms/step - loss: 2.8893",
    ]
    report = _read_lines(lines)
    assert (report.step, report.loss, report.eval_loss) == (None, None, 3.4187)


def test_dcgan_tensorflows_lines_without_the_number_of_epochs_count_the_batches_done() -> None:
    """DCGAN-tensorflow before its PR #272 printed ``Epoch: [24] [1092/1093] time: ...,
    d_loss: ..., g_loss: ...`` (carpedm20/DCGAN-tensorflow#39, the last line of a run of 25
    epochs): the batch's index once it is done, 25 x 1093 batches, not MetricLogger's index
    of the shape alike (27324 before); a GAN's two losses, no one loss."""
    line = "Epoch: [24] [1092/1093] time: 2298.4984, d_loss: 1.39633536, g_loss: 0.64348722"
    report = _read_lines([line])
    assert (report.step, report.loss) == (25 * 1093, None)


def test_a_bar_in_epochs_counts_the_passes_of_the_batch_bar_beside_it() -> None:
    """tqdm writes ``s/epoch`` where an epochs bar is slower than one a second; beside a
    batch bar (both written through logging, so no nesting shows), its count is the passes
    done: 10 x 171 steps of 10 x 171 (a Pokémon classifier's log read 171, no total)."""
    frame = "INFO - {0}%|#########| {1}/171 [00:25<00:01, 6.54batch/s, loss=0.125]"
    lines = [frame.format(95, 170), frame.format(100, 171)]
    lines.append("INFO - 100%|##########| 10/10 [05:49<00:00, 31.42s/epoch, loss=0.125]")
    report = _read_lines(lines)
    assert (report.step, report.max_steps) == (1710, 1710)


def test_an_epochs_bar_alone_gives_epochs_not_steps() -> None:
    """Rasa's DIET draws one bar over its epochs (``Epochs: 29/100``, 231 s each): its count
    is the epochs done and its total theirs, never the run's step (read as step 29 of 100;
    its restart at 0 on a line of its own as step 100)."""
    frame = "Epochs:  {0}%|██▉       | {0}/100 [1:38:39<4:33:22, 231.03s/it, t_loss=4.{1}]"
    report = _read_lines([frame.format(28, 17), frame.format(29, 11)])
    assert (report.step, report.epoch, report.max_epochs, report.loss) == (None, 29, 100, 4.11)
    report = _read_lines([frame.format(29, 11), "Epochs:   0%|          | 0/100 [00:00<?, ?it/s]"])
    assert (report.step, report.loss) == (None, 4.11)


def test_a_bar_started_again_in_the_same_line_keeps_the_values_before() -> None:
    """Frames in one line whose newest starts the bar again (``0/100``, no values yet): the
    frame before it is read whole, as a line of its own would be, so its loss stands (the
    loss was lost where the frames were one line)."""
    line = (
        "Epochs:  29%|██▉       | 29/100 [1:38:39<4:33:22, 231.03s/it, t_loss=4.11]\r"
        "Epochs:   0%|          | 0/100 [00:00<?, ?it/s]"
    )
    assert _read_lines([line]).loss == 4.11


def test_a_line_opening_with_a_validation_value_gives_its_loss_as_the_eval_loss() -> None:
    """``[Epoch: 05] Valid acc: 0.2988 | loss: 2.0462`` after the epoch's ``Train acc``
    line: the bare loss is the validation's (it was read as the training loss)."""
    lines = [
        "18:00:47 [Epoch: 05] Train acc: 0.2490 | loss: 2.2274",
        "18:02:35 [Epoch: 05] Valid acc: 0.2988 | loss: 2.0462",
    ]
    report = _read_lines(lines)
    assert (report.loss, report.eval_loss) == (2.2274, 2.0462)


def test_t_loss_and_v_loss_are_the_loss_and_the_eval_loss() -> None:
    """``T_Loss`` beside ``V_Loss`` (a script's training and validation losses) and Rasa's
    ``t_loss`` (its total loss) are the vocabulary's."""
    line = "Epoch:   3 | T_Loss 12.66 | T_acc  0.06 | V_Loss   9.87 | V_acc.   0.1 | 🕒 6521.794"
    report = _read_lines([line])
    assert (report.loss, report.eval_loss) == (12.66, 9.87)


def test_retrains_final_test_accuracy_ends_the_run() -> None:
    """TensorFlow's retrain.py tests the trained model once its step loop is over, then
    writes the graph: ``Final test accuracy = 92.0%`` (``(N=362)`` since 2017, under
    tf.logging's prefix too) is its end; the words with anything else after them are not."""
    steps = ["2017-04-09 05:47:13.587401: Step 1499: Cross entropy = 0.568483"]
    for end in (
        "Final test accuracy = 92.0%",
        "INFO:tensorflow:Final test accuracy = 92.3% (N=362)",
    ):
        report = _read_lines([*steps, end])
        assert (report.step, report.loss, report.final) == (1499, 0.568483, True)
    assert not _read_lines([*steps, "Final test accuracy = 92.0% on fold 1"]).final


def test_pycharms_exit_code_zero_ends_the_run_and_another_does_not() -> None:
    """PyCharm's run console prints ``Process finished with exit code N`` once the process
    it ran has exited: 0 ends the run, another code is no end (the traceback says why)."""
    steps = ["[50]\ttrain's binary_logloss: 0.0762624\tvalid's binary_logloss: 0.0903136"]
    assert _read_lines([*steps, "", "Process finished with exit code 0"]).final
    assert not _read_lines([*steps, "", "Process finished with exit code 1"]).final


def test_an_evaluation_bars_running_loss_is_no_training_loss() -> None:
    """``eval: 15%| 2/13 [..., loss=0.4628, lp_real=0.6998]`` before training (a tqdm bar
    described as an evaluation and nothing else): its postfix loss is the evaluation's so
    far, not the training's (it was read as the loss); diffusers' ``Loading pipeline
    components`` bar is no training either (read as step 7)."""
    lines = [
        "Loading pipeline components...: 100%|██████████| 7/7 [00:40<00:00, 10.01s/it]",
        "eval:   8%|▊         | 1/13 [00:33<06:45, 33.82s/it, loss=0.4751, lp_real=0.6959]",
        "eval:  15%|█▌        | 2/13 [01:06<06:02, 32.98s/it, loss=0.4628, lp_real=0.6998]",
    ]
    report = _read_lines(lines)
    assert (report.step, report.loss, report.eval_loss) == (None, None, None)


def test_chinesener_splits_its_global_step_by_the_epoch() -> None:
    """zjy-ucas' ChineseNER logs ``iteration:{step // n + 1} step:{step % n}/{n}``: the
    global step is ``(iteration - 1) * n + step`` (read as 8, with the epoch's size as the
    run's total)."""
    line = "2018-10-20 15:49:05,469 - log\\train.log - INFO - iteration:7 step:8/652, NER loss: 1.525563"
    report = _read_lines([line])
    assert (report.step, report.max_steps, report.loss) == (3920, None, 1.525563)


def test_alphazero_gobangs_self_play_batches_are_its_steps() -> None:
    """AlphaZero_Gobang prints ``batch i:{i + 1}, episode_len:{n}`` after each self-play
    batch and the policy update's ``kl:..., loss:...`` on the next line (nothing was read)."""
    lines = [
        "2025-06-05 13:25:33, batch i:3000, episode_len:12",
        "kl:0.02390,lr_multiplier:0.444,loss:2.208883762359619,entropy:1.881327509880066",
    ]
    report = _read_lines(lines)
    assert (report.step, report.loss) == (3000, 2.208883762359619)


def test_a_ppo_loops_pg_loss_is_its_loss_beside_v_loss() -> None:
    """A CleanRL-style update line prints ``pg_loss`` (the policy's) beside ``v_loss`` (the
    value function's): two loss-named parts gave no loss; the policy's is the loss."""
    line = "=== upd  488/488 | step  999424 | mean_ep_len  343.3 | pg_loss -0.021 | v_loss 23.728 | ent 2.519 ==="
    report = _read_lines([line])
    assert (report.step, report.loss) == (999424, -0.021)


def test_a_summary_dicts_total_steps_are_the_steps_done() -> None:
    """A summary once training is over, ``{'total_steps': 24, 'avg_loss': ..., 'final_loss':
    ...}``: 24 steps done (it was read as the run's length, no step), the final loss the loss
    (the average was read)."""
    line = (
        "INFO - GRPO: {'epochs': 9, 'total_steps': 24, 'avg_loss': -0.0831, 'final_loss': -0.1177}"
    )
    report = _read_lines([line])
    assert (report.step, report.max_steps, report.loss) == (24, None, -0.1177)


def test_lightning_25s_results_table_names_its_stage_on_a_row_of_its_own() -> None:
    """Lightning 2.5 heads ``trainer.validate()``'s table with ``┃ Runningstage.validating ┃``
    above ``┃ metric ┃ DataLoader 0 ┃``: its loss row is the eval loss (nothing was read), the
    test table's the test loss."""
    table = [
        "┏━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━┓",
        "┃  Runningstage.{stage}  ┃                           ┃",
        "┃          metric           ┃       DataLoader 0        ┃",
        "┡━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━┩",
        "│         {split}/loss          │    {value}     │",
        "└───────────────────────────┴───────────────────────────┘",
    ]
    validating = [r.format(stage="validating", split="val", value="0.9092") for r in table]
    testing = [r.format(stage="testing", split="test", value="3.3688") for r in table]
    report = _read_lines(validating + testing)
    assert (report.eval_loss, dict(report.metrics).get("test_loss")) == (0.9092, 3.3688)


def test_a_step_named_after_an_rl_episode_is_counted_within_it() -> None:
    """A DQN's ``Episode 600 Step 238: Training Loss ...``: the step starts over with each
    episode (348, 90, 119 in turn), so it is no step of the run (it gave step 238); the
    training loss is still the loss."""
    lines = [
        "Episode 598 Step 119: Training Loss 2.7157673835754395, Return 371.0",
        "Episode 599 Step 372: Training Loss 2.231835126876831, Return 404.0",
        "Episode 600 Step 238: Training Loss 2.1800668239593506, Return 457.0",
    ]
    report = _read_lines(lines)
    assert (report.step, report.loss) == (None, 2.1800668239593506)


def _frames(total: int, counts: tuple[int, ...]) -> str:
    """One tqdm bar's frames on one line, as a file keeps them (carriage returns between)."""
    return "\r".join(
        f"{100 * n // total:3d}%|{'#' * (10 * n // total):<10}| {n}/{total} [00:0{i}<00:00, 31.80it/s]"
        for i, n in enumerate(counts)
    )


def test_a_bar_drawn_twice_from_one_epochs_summary_to_the_next_counts_no_epochs() -> None:
    """A loop drawing one undescribed bar over an epoch's training batches and again over
    its test batches (one length), each followed by the epoch's summary (``Epoch 18
    training loss: ...``, ``Epoch 18 test loss: ...``): its passes are no epochs (it gave
    step 628, four passes of 157, for two epochs); the losses are read."""
    lines = []
    for epoch in (18, 19):
        lines += [
            _frames(157, (0, 40, 80, 120, 157)),
            f"Epoch {epoch} training loss: 5.94{epoch}",
            f"Epoch {epoch} training acc : 0.969700",
            _frames(157, (0, 60, 120, 157)),
            f"Epoch {epoch} test loss: 5.93{epoch}",
            f"Epoch {epoch} test acc : 0.973400",
        ]
    report = _read_lines(lines)
    assert (report.step, report.loss, report.eval_loss) == (None, 5.9419, 5.9319)


def test_a_keras_bar_of_another_length_under_fits_last_header_is_evaluates() -> None:
    """Keras 3's ``evaluate`` after a ``fit`` that stopped short of its epochs (no early
    stopping message): its bar of 4 after epoch 2 of 3's bar of 10 is no training (its loss
    was taken for the training loss); the step is fit's."""
    frame = "{n}/{t} ━━━━━━━━━━━━━━━━━━━━ 0s 47ms/step - accuracy: 0.97 - loss: {loss}"
    lines = [
        "Epoch 2/3",
        "\r".join(frame.format(n=n, t=10, loss=f"0.06{n}") for n in (1, 5, 10))
        + " - val_accuracy: 0.95 - val_loss: 0.1462",
        "",
        "EVALUATION",
        "\r".join(frame.format(n=n, t=4, loss="0.1440") for n in (1, 2, 4)),
        "Test Accuracy: 95.48%",
    ]
    report = _read_lines(lines)
    assert (report.step, report.max_steps, report.loss, report.eval_loss) == (
        20,
        30,
        0.0610,
        0.1462,
    )


def test_a_bare_bars_first_summary_past_its_passes_shows_a_log_begun_mid_run() -> None:
    """A log read from the middle of a run (a rotated file): one pass of an undescribed bar
    of 625 after ``Epoch 14/15 | ...``, then ``Epoch 15/15 | trn_loss: ...``: fifteen epochs
    are done where one pass was drawn, so the passes are not the run's (it gave step 625 of
    9375 done); the losses are read. A bar over the whole run, summarised as it goes, keeps
    its count."""
    summary = "Epoch {e}/15 | trn_loss: 0.20{e}  trn_logloss: 0.2429 | val_loss: 0.1262  val_logloss: 0.0190"
    mid_run = [summary.format(e=14), "Train: " + _frames(625, (0, 300, 625)), summary.format(e=15)]
    report = _read_lines(mid_run)
    assert (report.step, report.loss, report.eval_loss) == (None, 0.2015, 0.1262)
    whole = []
    for e in (1, 2, 3):
        whole += [
            "Train: " + _frames(300, (100 * (e - 1), 100 * e - 50, 100 * e)),
            summary.format(e=e),
        ]
    assert _read_lines(whole).step == 300


def test_a_line_led_by_its_rl_episode_gives_its_values_and_no_step() -> None:
    """A DQN's ``Episode 3000, Avg Loss: 0.0011`` every ten episodes: an episode is no step,
    and the line's loss is read (no counter was found, so nothing was)."""
    lines = [f"Episode {e}, Avg Loss: 0.00{e // 10 % 10}1" for e in range(2980, 3010, 10)]
    report = _read_lines([*lines, "Saved q_net.pt"])
    assert (report.step, report.loss) == (None, 0.0001)
