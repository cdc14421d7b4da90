"""A logger's head before a message (exporter.logs.heads), and lines read behind it."""

from __future__ import annotations

import pytest

from exporter.logs.heads import split_head
from exporter.logs.parse import parse_message

# Each head as its logger writes it (the library's default or documented format), and the
# message after it.
HEADS = [
    ("INFO:__main__:", "Epoch 1/10"),  # logging.basicConfig()
    ("WARNING:root:", "Epoch 1/10"),
    ("2024-05-01 10:00:00,123 - INFO - ", "Epoch 1/10"),
    ("2024-05-01 10:00:00,123 - __main__ - INFO - ", "650 | loss 5.3185"),
    ("2024-05-01 10:00:00.123 | INFO     | __main__:train:42 - ", "Epoch 1/10"),  # loguru
    ("[2024-05-01 10:00:00,123][__main__][INFO] - ", "Epoch 1/10"),  # Hydra
    ("[2024-05-01 10:00:00,123] [INFO] [engine.py:219:step] ", "step=10, skipped=0"),
    ("12/07 10:00:00 - mmengine - INFO - ", "Epoch(train) [1][10/100]  lr: 1e-4"),
    ("2024/06/16 20:02:03 - mmengine - INFO - ", "Epoch(val) [10][4000/4809]    eta: 0:06:54"),
    ("[12/07 10:00:00 d2.utils.events]: ", " eta: 0:01:00  iter: 19  total_loss: 1.2"),
    ("[NeMo I 2024-05-01 10:00:00 nemo_logging:349] ", "Epoch 1"),
    ("[INFO|trainer.py:2128] 2024-05-01 10:00:00,123 >> ", "***** Running training *****"),
    ("I0501 10:00:00.123456 140234 train.py:123] ", "step 10 loss 1.5"),  # absl, glog
    ("INFO 04-24 17:49:20 __init__.py:183] ", "Automatically detected platform cuda."),
    ("2024-05-01 10:00:00 | INFO | fairseq_cli.train | ", "epoch 001: 3200 / 160368 loss=10.278"),
    ("Dec 07 13:22:48 node-1 python3[1234]: ", "Epoch 1/10"),  # journald, syslog
    ("Dec 07 13:22:48 ", "Epoch 1/10"),  # moreutils ts
    ("2022-07-21 04:20:03,677 - INFO: ", "===> Epoch 222 Complete: Avg. Loss: 0.013878"),  # MST
    ("INFO: ", "`Trainer.fit` stopped: `max_epochs=3` reached."),  # Lightning 2's handler
    ("[2024-05-01 10:00:00] ", "iteration 10/100"),
    ("2024-05-01 10:00:00,123 - INFO - ", "  train_loss               = 0.5822"),  # indent kept
    ("INFO     ", "Epoch 1/10"),  # "%(levelname)-8s %(message)s"
    ("WARNING  ", "Epoch 1/10"),
    ("2024-05-01 10:00:00,123 INFO ", "Epoch 1/10"),  # "%(asctime)s %(levelname)s ..."
    ("2024-05-01 10:00:00,123:INFO:__main__:", "Epoch 1/10"),  # colons
    ("2023-02-17 11:43:14,405:INFO:", "epoch: [1/10] step: [10/85], loss: 1.487435"),  # MindOCR
    ("INFO transformers.trainer: ", "Epoch 1/10"),  # "%(levelname)s %(name)s: ..."
    ("| INFO     | __main__:train:82 - ", "Epoch 1/10"),  # loguru's format without its time
]


@pytest.mark.parametrize(("head", "message"), HEADS, ids=[h for h, _ in HEADS])
def test_a_loggers_head_is_told_from_its_message(head: str, message: str) -> None:
    assert split_head(head + message) == (head, message)


def test_rich_handlers_head_and_the_place_at_the_right_are_no_message() -> None:
    line = "[12/07/24 10:00:00] INFO     step 10 loss 0.5                    train.py:42"
    assert split_head(line)[1] == "step 10 loss 0.5"  # type: ignore[index]
    # The time left blank where it repeats the line before's.
    line = " " * 20 + "INFO       Iter  Train Loss       train.py:42"
    assert split_head(line)[1] == "  Iter  Train Loss"  # type: ignore[index]


def test_colours_around_a_heads_fields_are_taken_off() -> None:
    line = (
        "\x1b[32m2024-05-01 10:00:00.123\x1b[0m | \x1b[1mINFO    \x1b[0m | \x1b[36m__main__\x1b[0m:"
        "\x1b[36mtrain\x1b[0m:\x1b[36m42\x1b[0m - \x1b[1mEpoch 1/10\x1b[0m"
    )
    assert split_head(line)[1] == "Epoch 1/10"  # type: ignore[index]


@pytest.mark.parametrize(
    "line",
    [
        "Epoch 1/10",
        "[1/10] loss 0.5",  # a counter in brackets
        "[TRAIN] epoch: 1, iter: 20/500, loss: 2.0859",  # a phase
        "[Epoch 5 / Train]: Loss = 107.16",
        "Epoch 5 | loss 0.4",
        "step:1 - actor/pg_loss:0.5",
        "650 | loss 5.3185",
        "Dec 07 13:22:48",  # nothing after it
    ],
)
def test_a_line_without_a_loggers_head_has_none(line: str) -> None:
    assert split_head(line) is None


def test_a_counter_after_a_level_is_no_loggers_name() -> None:
    """``step:1`` after ``- INFO -`` is verl's counter, not a logger's name: it stays."""
    found = split_head("2024-05-01 10:00:00,123 - INFO - step:1 - actor/pg_loss:0.5")
    assert found is not None and found[1] == "step:1 - actor/pg_loss:0.5"


def test_a_time_before_a_framed_tables_row_keeps_the_rows_frame() -> None:
    found = split_head("Dec 07 13:22:48 |    total_timesteps      | 3584        |")
    assert found is not None and found[1] == "|    total_timesteps      | 3584        |"


def test_a_levels_padding_is_the_heads_and_an_indent_past_it_the_messages() -> None:
    assert split_head("INFO     Epoch 1/10") == ("INFO     ", "Epoch 1/10")
    assert split_head("INFO       train_loss = 0.58") == ("INFO     ", "  train_loss = 0.58")
    # Fewer spaces than the padding: "%(levelname)s %(message)s" and the message's indent.
    line = "2024-05-01 10:00:00,123 INFO   train_loss = 0.58"
    assert split_head(line) == ("2024-05-01 10:00:00,123 INFO ", "  train_loss = 0.58")


def test_a_bar_after_a_time_and_a_level_spaces_separate_is_the_messages_frame() -> None:
    """The "|" is the row's: stable-baselines' table and the word language model's lines
    after "%(asctime)s %(levelname)s "; loguru's and fairseq's heads keep theirs."""
    line = "2024-05-01 10:00:00,123 INFO |    total_timesteps      | 3584        |"
    assert split_head(line) == (
        "2024-05-01 10:00:00,123 INFO ",
        "|    total_timesteps      | 3584        |",
    )
    line = "2024-05-01 10:00:00,123 INFO | epoch   6 |   200/ 2983 batches | loss  4.67"
    assert split_head(line)[1] == "| epoch   6 |   200/ 2983 batches | loss  4.67"  # type: ignore[index]
    line = "2024-05-01 10:00:00 | INFO | fairseq_cli.train | done training"
    assert split_head(line)[1] == "done training"  # type: ignore[index]


def test_lightnings_and_deepspeeds_rank_labels_are_dropped() -> None:
    """Lightning's rank_prefixed_message (``[rank: 0] ``) and DeepSpeed's log_dist
    (``[Rank 0] `` after its head): the message after them reads as bare."""
    assert _read("[rank: 0] Epoch 3/10") == _read("Epoch 3/10")
    line = "[2024-05-01 10:00:00,123] [INFO] [logging.py:96:log_dist] [Rank 0] Epoch 3/10"
    assert _read(line) == _read("Epoch 3/10") == [("keras", None, None, False)]


def _read(line: str) -> list[tuple[str, int | None, float | None, bool]]:
    return [
        (r.parser, r.report.step, r.report.loss, r.report.final) for r in parse_message(line, 0.0)
    ]


@pytest.mark.parametrize(
    "bare",
    [
        "     2           1.2814            7.82m",  # scikit-learn's table row
        "650 | loss 5.3185 | lr 4.986305e-05 | 9852.73ms | mfu 0.19%",  # llama2.c
        "Epoch 3/10",  # Keras' header
        "  train_loss               = 700461828.3886",  # Trainer's metrics block, indented
    ],
)
def test_a_line_behind_a_loggers_head_reads_as_the_bare_line(bare: str) -> None:
    for head, _ in HEADS[:-1]:
        assert _read(head + bare) == _read(bare), head


def test_a_format_named_by_the_loggers_head_still_reads_through_it() -> None:
    """AllenNLP's metrics table is read only behind its logger's name, which is in the head."""
    line = (
        "2022-06-30 12:07:25,479 - INFO - allennlp.training.tensorboard_writer - loss"
        "                        |  -137.582  |  -145.318"
    )
    assert _read(line) == [("allennlp-table", None, -137.582, False)]


def test_a_line_the_bare_reader_leaves_is_not_read_for_its_head() -> None:
    """Megatron's ``> working on iteration: 60`` counts an evaluation's batches: bare it is
    not read, and a time before it changes nothing."""
    assert _read("> working on iteration: 60") == []
    assert _read("Dec 07 13:22:48 > working on iteration: 60") == []


def test_a_loops_batch_index_after_its_percent_is_its_step() -> None:
    """A GPT-2 script's loguru message ``[0.06%] batch_index=64 loss=11.0210`` (kevin00hu/GPT_2,
    log/train_log.txt): read bare as behind its head."""
    assert _read("[0.06%] batch_index=64 loss=11.0210") == [("progress", 64, 11.021, False)]


def test_a_launchers_label_before_a_loggers_head_reads_through_both() -> None:
    """srun's ``--label`` before a Keras header the script logged: the header, as bare."""
    assert _read("0: 2024-05-01 10:00:00,123 - INFO - Epoch 3/10") == _read("Epoch 3/10")
    assert _read("Epoch 3/10") == [("keras", None, None, False)]
