"""``kubeflow-marker``: ``[trainer.kubeflow.org/v1alpha1/trainjob/trainerStatus] {json}``, the
Kubeflow KEP's log convention (also what our reporter prints to stdout).
"""

from __future__ import annotations

import json

from training_progress_reporter import KUBEFLOW_MARKER

from ...core.model import ReportError
from ...core.wire import parse_kubeflow
from ..lines import Format, LineReport


def parse_kubeflow_marker(msg: str, now: float) -> LineReport | None:
    i = msg.find(KUBEFLOW_MARKER)
    if i < 0:
        return None
    try:
        parsed = parse_kubeflow(json.loads(msg[i + len(KUBEFLOW_MARKER) :]), now)
    except (ValueError, ReportError):
        return None
    return LineReport("kubeflow-marker", parsed.report)


FORMAT = Format("kubeflow-marker", (KUBEFLOW_MARKER,), parse_kubeflow_marker)
