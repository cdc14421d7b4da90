"""Kubernetes mode: the training pods on this node (API watch or kubelet poll), what a pod
says about its run, push authorization, the API client, and the sources only a cluster has
(TrainJob status, emptyDir status files, pod logs and pod HTTP endpoints).

Nothing outside this package imports the ``kubernetes`` client; inside it, only
:mod:`.client` builds API objects, and only when Kubernetes mode (or ``kubectl progress``
without Prometheus) runs.
"""
