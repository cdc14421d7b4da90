"""``act``'s own metrics, collected by client_python from the controller's counters at each
scrape (as the exporter's self-metrics are): actions by action and outcome, webhook
notifications by outcome, whether this replica leads, and whether it only says what it
would do."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .controller import Actor


class ActCollector(Collector):
    """The four families of ``act``, read from one :class:`Actor`."""

    def __init__(self, actor: Actor) -> None:
        self.actor = actor

    def collect(self) -> Iterator[Metric]:
        actions, notifications = self.actor.stats.snapshot()
        taken = CounterMetricFamily(
            "training_exporter_actions",
            "Alerts act handled, by action and outcome.",
            labels=["action", "outcome"],
        )
        for (action, outcome), n in sorted(actions.items()):
            taken.add_metric([action, outcome], n)
        yield taken
        received = CounterMetricFamily(
            "training_exporter_act_notifications",
            "Webhook notifications received, by outcome.",
            labels=["outcome"],
        )
        for outcome, n in sorted(notifications.items()):
            received.add_metric([outcome], n)
        yield received
        yield GaugeMetricFamily(
            "training_exporter_act_leader",
            "1 while this replica may act: it holds the lease (always 1 without leader "
            "election); 0 while it hands notifications to the leader.",
            value=int(self.actor.leading()),
        )
        yield GaugeMetricFamily(
            "training_exporter_act_dry_run",
            "1 while act only says what it would do.",
            value=int(self.actor.config.dry_run),
        )


def act_registry(actor: Actor) -> CollectorRegistry:
    """A registry of ``act``'s metrics alone (no process or platform collectors: the
    exporter's own registry has none either)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ActCollector(actor))
    return registry
