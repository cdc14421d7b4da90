"""``training-progress-exporter act``: an opt-in controller that acts on the exporter's
alerts, routed to it by Alertmanager (docs/act.md).

Pure parts (the webhook payload, the policy, the guard, owners) are separate from the
Kubernetes calls (``exporter.act.kube``) and from the HTTP front (``server``);
``controller`` joins them.
"""
