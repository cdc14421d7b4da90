"""Parsing and validation of every accepted JSON format, including bad input."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.core.model import (
    FORMAT_KUBEFLOW,
    FORMAT_NATIVE,
    FORMAT_OPENDATAHUB,
    MAX_CLOCK_SKEW_SECONDS,
    ReportError,
    clean_label,
)
from exporter.core.wire import (
    decode_json,
    detect_format,
    parse_any,
    parse_bytes,
    parse_kubeflow,
    parse_native,
    parse_opendatahub,
)

from .conftest import T0, kubeflow_fixture_bodies

NOW = 1_796_000_000.0  # after the fixtures' 2026-11-29 timestamps


def test_transformers_kubeflow_bodies_parse_as_recorded() -> None:
    first, middle, last = (parse_bytes(b, NOW) for b in kubeflow_fixture_bodies())
    assert first.report.max_steps == 50
    assert first.report.progress == 0.0
    assert first.report.step is None

    r = middle.report
    assert (r.step, r.max_steps, r.progress, r.eta_seconds) == (20, 50, 0.4, 7.0)
    assert r.loss == pytest.approx(6.905783081054688)
    assert r.grad_norm == pytest.approx(1.0872821807861328)
    assert r.learning_rate == pytest.approx(3.6e-05)
    # current_epoch is the precise one; the rounded "epoch" metric must not override it.
    assert r.epoch == pytest.approx(0.4)
    assert r.timestamp == pytest.approx(1795976459.640431)
    assert not r.final
    assert middle.problems == ()

    r = last.report
    assert r.step is None  # the final report carries no step: merging keeps the last one
    assert r.final and r.progress == 1.0 and r.eta_seconds == 0.0
    assert dict(r.metrics)["train_loss"] == pytest.approx(6.902395248413086)
    assert dict(r.metrics)["total_flos"] == pytest.approx(970771660800.0)
    assert r.format == FORMAT_KUBEFLOW


def test_kubeflow_without_trainer_status_is_an_empty_report() -> None:
    assert parse_kubeflow({}, NOW).report.step is None


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ([], "invalid_type"),
        ({"trainerStatus": []}, "invalid_type"),
        ({"trainerStatus": {"progressPercentage": 101}}, "invalid_progress"),
        ({"trainerStatus": {"progressPercentage": -1}}, "invalid_progress"),
        ({"trainerStatus": {"progressPercentage": "40"}}, "invalid_progress"),
        ({"trainerStatus": {"estimatedRemainingSeconds": -5}}, "invalid_eta"),
        ({"trainerStatus": {"metrics": {"loss": "1"}}}, "invalid_type"),
        ({"trainerStatus": {"metrics": ["loss"]}}, "invalid_type"),
        ({"trainerStatus": {"metrics": [{"name": "loss", "value": 1.5}]}}, "invalid_metric_value"),
        ({"trainerStatus": {"metrics": [{"name": "", "value": "1"}]}}, "invalid_metric_name"),
        ({"trainerStatus": {"metrics": [{"name": "x" * 65, "value": "1"}]}}, "invalid_metric_name"),
        (
            {"trainerStatus": {"metrics": [{"name": "a", "value": "1" * 65}]}},
            "invalid_metric_value",
        ),
        (
            {"trainerStatus": {"metrics": [{"name": f"m{i}", "value": "1"} for i in range(257)]}},
            "too_many_metrics",
        ),
    ],
)
def test_kubeflow_schema_violations_are_rejected_like_upstream(body: object, reason: str) -> None:
    with pytest.raises(ReportError) as exc:
        parse_kubeflow(body, NOW)
    assert exc.value.reason == reason
    assert exc.value.message


def test_kubeflow_unusable_values_are_dropped_with_reasons_not_fatal() -> None:
    body = {
        "trainerStatus": {
            "metrics": [
                {"name": "current_step", "value": "-3"},
                {"name": "total_steps", "value": "2e15"},
                {"name": "accuracy", "value": "high"},
                {"name": 'bad"name', "value": "1"},
                {"name": "na\nme", "value": "1"},
                {"name": "verlust_ä", "value": "1"},
                {"name": "loss", "value": "0.5"},
            ]
        }
    }
    parsed = parse_kubeflow(body, NOW)
    assert parsed.report.step is None and parsed.report.max_steps is None
    assert parsed.report.loss == 0.5
    assert parsed.report.metrics == ()
    assert sorted(parsed.problems) == sorted(
        [
            "invalid_step",
            "max_steps_out_of_range",
            "non_numeric_metric",
            "invalid_metric_name",
            "invalid_metric_name",
            "invalid_metric_name",
        ]
    )


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "Infinity"])
def test_non_finite_loss_is_kept_as_the_divergence_signal(value: str) -> None:
    body = {"trainerStatus": {"metrics": [{"name": "loss", "value": value}]}}
    loss = parse_kubeflow(body, NOW).report.loss
    assert loss is not None and not math.isfinite(loss)


def test_future_timestamp_is_clamped_and_counted() -> None:
    future = NOW + MAX_CLOCK_SKEW_SECONDS + 3600
    parsed = parse_native({"step": 1, "timestamp": future}, NOW)
    assert parsed.report.timestamp == NOW
    assert parsed.problems == ("future_timestamp",)
    near = parse_native({"step": 1, "timestamp": NOW + 10}, NOW)
    assert near.report.timestamp == NOW + 10 and near.problems == ()


def test_opendatahub_progression_json() -> None:
    doc = {
        "progressPercentage": 45,
        "estimatedRemainingSeconds": 795,
        "currentStep": 450,
        "totalSteps": 1000,
        "currentEpoch": 1.5,
        "totalEpochs": 3,
        "trainMetrics": {"loss": 0.2347, "learning_rate": 1e-5, "grad_norm": 0.9, "accuracy": 0.98},
        "evalMetrics": {"eval_loss": 0.2451, "eval_accuracy": "0.97"},
    }
    assert detect_format(doc) == FORMAT_OPENDATAHUB
    r = parse_any(doc, NOW).report
    assert (r.step, r.max_steps, r.epoch, r.max_epochs) == (450, 1000, 1.5, 3.0)
    assert (r.progress, r.eta_seconds) == (0.45, 795.0)
    assert (r.loss, r.eval_loss, r.learning_rate, r.grad_norm) == (0.2347, 0.2451, 1e-5, 0.9)
    assert dict(r.metrics) == {"accuracy": 0.98, "eval_accuracy": 0.97}
    assert not r.final


def test_opendatahub_progress_over_100_is_clamped_not_rejected() -> None:
    parsed = parse_opendatahub({"progressPercentage": 180}, NOW)
    assert parsed.report.progress == 1.0
    assert parsed.problems == ("progress_clamped",)


def test_native_report_every_field() -> None:
    doc = {
        "step": 120,
        "max_steps": 1000,
        "epoch": 0.5,
        "max_epochs": 2,
        "progress": 0.12,
        "eta_seconds": 600,
        "loss": 1.25,
        "eval_loss": 1.5,
        "learning_rate": 3e-4,
        "grad_norm": 0.7,
        "metrics": {"tokens_per_second": 5400.5, "mfu": 0.41},
        "eval_metrics": {"eval_accuracy": 0.6},
        "gpus": 8,
        "final": False,
        "framework": "jax",
        "timestamp": NOW - 1,
        "thresholds": {"stall_seconds": "90", "divergence_ratio": 5},
        "deadline": "2027-01-01T00:00:00Z",
        "gpu_hours_budget": 500,
    }
    assert detect_format(doc) == FORMAT_NATIVE
    parsed = parse_any(doc, NOW)
    r = parsed.report
    assert parsed.problems == ()
    assert (r.step, r.max_steps, r.epoch, r.max_epochs, r.progress) == (120, 1000, 0.5, 2.0, 0.12)
    assert (r.loss, r.eval_loss, r.learning_rate, r.grad_norm) == (1.25, 1.5, 3e-4, 0.7)
    assert dict(r.metrics) == {"tokens_per_second": 5400.5, "mfu": 0.41, "eval_accuracy": 0.6}
    assert r.thresholds == (("divergence_ratio", 5.0), ("stall_seconds", 90.0))
    assert (r.deadline_timestamp, r.gpu_hours_budget) == (1798761600.0, 500.0)
    assert (r.gpus, r.final, r.framework, r.eta_seconds, r.timestamp) == (
        8.0,
        False,
        "jax",
        600.0,
        NOW - 1,
    )


@pytest.mark.parametrize(
    ("doc", "problem"),
    [
        ({"step": "ten"}, "invalid_step"),
        ({"step": True}, "invalid_step"),
        ({"step": -1}, "invalid_step"),
        ({"step": 1e18}, "step_out_of_range"),
        ({"max_steps": float("inf")}, "invalid_max_steps"),
        ({"epoch": -0.5}, "invalid_epoch"),
        ({"progress": 1.7}, "progress_clamped"),
        ({"progress": "half"}, "invalid_progress"),
        ({"eta_seconds": 1e12}, "eta_clamped"),
        ({"gpus": -2}, "invalid_gpus"),
        ({"gpus": 1e9}, "invalid_gpus"),
        ({"final": "yes"}, "invalid_final"),
        ({"metrics": "loss=1"}, "invalid_metrics"),
        ({"metrics": {"good": 1, "<script>": 2}}, "invalid_metric_name"),
        ({"timestamp": "yesterday"}, "invalid_timestamp"),
        ({"thresholds": [60]}, "invalid_thresholds"),
        ({"thresholds": {"stall_seconds": 1}}, "invalid_threshold"),
        ({"thresholds": {"stall_seconds": "never"}}, "invalid_threshold"),
        ({"thresholds": {"divergence_ratio": float("nan")}}, "invalid_threshold"),
        ({"thresholds": {"bogus": 5}}, "unknown_threshold"),
        ({"deadline": "soon"}, "invalid_deadline"),
        ({"deadline": -1}, "invalid_deadline"),
        ({"gpu_hours_budget": 0}, "invalid_gpu_hours_budget"),
        ({"gpu_hours_budget": "lots"}, "invalid_gpu_hours_budget"),
    ],
)
def test_native_bad_values_are_dropped_or_clamped_with_a_reason(
    doc: dict[str, object], problem: str
) -> None:
    parsed = parse_native(doc, NOW)
    assert problem in parsed.problems


def test_wrong_top_level_types_are_rejected() -> None:
    for parser in (parse_native, parse_opendatahub, parse_kubeflow):
        with pytest.raises(ReportError) as exc:
            parser([1, 2, 3], NOW)
        assert exc.value.reason == "invalid_type"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{not json", "invalid_json"),
        (b"", "invalid_json"),
        (b"\xff\xfe\x00garbage", "invalid_json"),
        (b'{"step": 1', "invalid_json"),  # a half-written file
        (b"[" * 60_000, "invalid_json"),  # deep nesting must not crash the parser
        (b" " * (64 * 1024 + 1), "oversize"),
    ],
    ids=["syntax", "empty", "binary", "truncated", "deep-nesting", "oversize"],
)
def test_decode_json_rejects_garbage(body: bytes, reason: str) -> None:
    with pytest.raises(ReportError) as exc:
        decode_json(body)
    assert exc.value.reason == reason


def test_too_many_native_metrics_in_one_report_is_rejected() -> None:
    with pytest.raises(ReportError) as exc:
        parse_native({"metrics": {f"m{i}": i for i in range(10_000)}}, NOW)
    assert exc.value.reason == "too_many_metrics"


def test_clean_label_bounds_and_sanitizes() -> None:
    assert clean_label("ok-label") == "ok-label"
    assert clean_label('a\nb"c') == 'a_b"c'
    assert clean_label("ü" * 500) == "_" * 128
    assert clean_label(5) is None
    assert clean_label("") is None


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=70),
        lambda children: (
            st.lists(children, max_size=5)
            | st.dictionaries(st.text(max_size=20), children, max_size=6)
        ),
        max_leaves=30,
    )
)
@pytest.mark.slow
def test_any_json_value_parses_or_raises_report_error(doc: object) -> None:
    """Fuzz: arbitrary JSON never escapes as anything but ReportError, in every format."""
    for wrapped in (
        doc,
        {"trainerStatus": doc},
        {"trainerStatus": {"metrics": doc}},
        {"step": doc, "metrics": doc},
        {"currentStep": doc, "trainMetrics": doc},
    ):
        try:
            parsed = parse_any(wrapped, T0)
        except ReportError as err:
            assert err.reason
            continue
        r = parsed.report
        assert r.step is None or 0 <= r.step <= 10**15
        assert r.progress is None or 0.0 <= r.progress <= 1.0
        assert len(r.metrics) <= 256
        json.dumps(parsed.problems)


def test_parse_native_reads_past_its_values_only_the_keys_it_checks_for() -> None:
    """parse_native returns after the values and metrics when none of ``_NATIVE_REST`` is
    in the report (the shape of every log line): a key read after that return and missing
    from the set would be ignored in such reports."""
    import inspect
    import re

    from exporter.core import wire
    from exporter.core.model import CHECKPOINT_FIELDS, NATIVE_FIELDS

    source = inspect.getsource(wire.parse_native)
    rest = source[source.index("_NATIVE_REST.isdisjoint") :]
    read = set(re.findall(r'obj(?:\.get\(|\[)"(\w+)"', rest))
    assert read and read <= wire._NATIVE_REST
    head = set(re.findall(r'obj(?:\.get\(|\[)"(\w+)"', source[: len(source) - len(rest)]))
    assert head <= {"metrics", "eval_metrics"}
    assert not wire._NATIVE_REST & {*NATIVE_FIELDS, *CHECKPOINT_FIELDS}
    # Either way a report reads the same.
    values = {"step": 3, "loss": "2.5", "metrics": {"tps": 10}}
    assert parse_native(values, NOW) == parse_native({**values, "final": False}, NOW)
