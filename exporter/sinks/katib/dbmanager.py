"""Katib's DB manager over gRPC (``ReportObservationLog``), from the ``[katib]`` extra.

``kubeflow-katib`` ships the generated API (``katib_api_pb2``, ``katib_api_pb2_grpc``), the
same that its ``report_metrics()`` uses; it and ``grpcio`` are imported only here, only when
Katib reporting is switched on.
"""

from __future__ import annotations

from typing import Any

from . import DEFAULT_ADDRESS
from .observations import MetricLog


class KatibUnavailable(RuntimeError):
    """The optional dependencies are not installed; says what to install."""


def load_api() -> tuple[Any, Any, Any]:
    """(grpc, katib_api_pb2, katib_api_pb2_grpc), or :class:`KatibUnavailable` saying why."""
    try:
        import grpc
        from kubeflow.katib import katib_api_pb2, katib_api_pb2_grpc
    except ImportError as exc:
        raise KatibUnavailable(
            f"Katib reporting needs the katib extra: pip install "
            f"'training-progress-exporter[katib]' ({exc})"
        ) from None
    return grpc, katib_api_pb2, katib_api_pb2_grpc


class DBManager:
    """A client of one Katib DB manager; thread-safe (gRPC channels are)."""

    def __init__(self, address: str = DEFAULT_ADDRESS, timeout: float = 5.0) -> None:
        grpc, self._pb, pb_grpc = load_api()
        self.address = address
        self.timeout = timeout
        # gRPC takes grpc_proxy/https_proxy from the environment; Katib's DB manager is a
        # Service of the cluster, never behind one.
        self._channel = grpc.insecure_channel(address, options=[("grpc.enable_http_proxy", 0)])
        self._stub = pb_grpc.DBManagerStub(self._channel)

    def report(self, trial: str, observations: list[MetricLog]) -> None:
        """One ``ReportObservationLog`` for ``trial``; raises on any gRPC error."""
        pb = self._pb
        request = pb.ReportObservationLogRequest(
            trial_name=trial,
            observation_log=pb.ObservationLog(
                metric_logs=[
                    pb.MetricLog(
                        time_stamp=o.time_stamp,
                        metric=pb.Metric(name=o.name, value=repr(o.value)),
                    )
                    for o in observations
                ]
            ),
        )
        self._stub.ReportObservationLog(request=request, timeout=self.timeout)

    def close(self) -> None:
        self._channel.close()
