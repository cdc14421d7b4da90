"""``training-progress-exporter run|demo``: the command line.

Flags override the config file and ``TPE_*`` environment variables (docs/configuration.md).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..core.humanize import setting
from ..core.thresholds import SPECS
from ..daemon.config import MODES, Config
from .unix import Parser, quiet_on_closed_pipe

if TYPE_CHECKING:
    from ..plumbing.httpd import HTTPServer


def _parser() -> Parser:
    from .toprows import SORTS

    p = Parser(
        prog="training-progress-exporter",
        description="Prometheus exporter for ML training progress.",
    )
    p.add_argument("--version", action="version", version=__version__)
    sub = p.add_subparsers(dest="command", required=True)

    d = Config()  # every default below is read from the code, never retyped
    run = sub.add_parser(
        "run",
        help="run the exporter",
        description="Run the exporter. Durations take s, m, h or d (30s, 10m, 2h). Flags "
        "override the config file and TPE_* variables (docs/configuration.md).",
    )
    run.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help=f"address to serve on (default {':'.join(map(str, d.listen_address('standalone')))}"
        f" standalone, {':'.join(map(str, d.listen_address('kubernetes')))} in Kubernetes mode)",
    )
    run.add_argument(
        "--push-token-file",
        metavar="FILE",
        help="standalone: pushes must send Authorization: Bearer <the token in FILE>",
    )
    run.add_argument(
        "--state-file",
        metavar="FILE",
        help="save runs here (atomically, every few seconds and at SIGTERM) and restore them "
        "at start, so a restart loses nothing",
    )
    run.add_argument(
        "--mode",
        choices=list(MODES),
        help=f"auto: kubernetes inside a pod, else standalone (default {d.mode})",
    )
    run.add_argument("--config", metavar="FILE", help="YAML config file")
    run.add_argument("--status-dir", metavar="DIR", help="standalone: read every *.json in DIR")
    run.add_argument(
        "--log",
        dest="log_paths",
        action="append",
        metavar="PATH_OR_GLOB",
        help="standalone: read progress from this log file (repeatable)",
    )
    run.add_argument(
        "--namespace", help=f"standalone: namespace label for runs (default {d.namespace})"
    )
    # Each run's own thresholds (overridable per run), what its state and alerts use: one
    # flag per threshold, named as everywhere else, and its old name, accepted but not shown
    # (one spelling per option in the help).
    for spec in SPECS:
        default = getattr(d.thresholds, spec.name)
        shown = setting(default) if spec.kind == "duration" else f"{default:g}"
        run.add_argument(
            f"--{spec.name.replace('_', '-')}",
            dest=spec.name,
            metavar={"duration": "DURATION", "ratio": "RATIO"}.get(spec.kind, "GPU_HOURS"),
            help=f"{spec.help} (default {shown})",
        )
        if spec.alias != spec.name:
            run.add_argument(
                f"--{spec.alias.replace('_', '-')}", dest=spec.name, help=argparse.SUPPRESS
            )
    run.add_argument(
        "--retention",
        metavar="DURATION",
        help=f"keep a gone run's final values this long (default {setting(d.retention)})",
    )
    run.add_argument(
        "--poll-interval",
        metavar="DURATION",
        help=f"file/HTTP poll interval (default {setting(d.poll_interval)})",
    )
    run.add_argument(
        "--max-custom-metrics",
        type=int,
        metavar="N",
        help=f"per run (default {d.max_custom_metrics})",
    )

    top = sub.add_parser("top", help="a live table of training jobs")
    where = top.add_mutually_exclusive_group()
    where.add_argument(
        "--exporter", metavar="URL", help="one exporter (default http://127.0.0.1:9465)"
    )
    where.add_argument(
        "--prometheus", metavar="URL", help="Prometheus with the recording rules (cluster-wide)"
    )
    top.add_argument("--once", action="store_true", help="print one table and exit")
    top.add_argument("-o", "--output", choices=["table", "json"], default="table")
    top.add_argument("--interval", type=float, default=2.0, metavar="SECONDS")
    top.add_argument(
        "--sort",
        choices=list(SORTS),
        default="state",
        help="order of the rows (default: what needs attention first); s cycles it live",
    )

    insp = sub.add_parser(
        "inspect",
        help="show what the exporter reads from log or status files",
        description="Read each PATH as the exporter would (a status file, else a log) and "
        "print what it finds: one JSON object for one path, an array for several.",
    )
    insp.add_argument("paths", nargs="+", metavar="PATH")
    insp.add_argument(
        "-o", "--output", choices=["json", "text"], default="json", help="(default json)"
    )
    insp.add_argument(
        "--config",
        metavar="FILE",
        help="the exporter's config file, for its log_formats (default: $TPE_CONFIG)",
    )
    insp.add_argument(
        "--format",
        metavar="NAME",
        help="try the configured log format NAME first, as a pod annotated "
        "training-progress.io/log-format: NAME has it",
    )

    act = sub.add_parser(
        "act",
        help="act on the exporter's alerts from Alertmanager (opt-in; docs/act.md)",
        description="Receive Alertmanager's webhook at POST /api/v1/alerts and restart, "
        "suspend or clean up jobs that opted in. Dry-run until the config or --no-dry-run "
        "says otherwise.",
    )
    act.add_argument("--listen", metavar="HOST:PORT", default="0.0.0.0:9466")
    act.add_argument(
        "--token-file",
        metavar="FILE",
        required=True,
        help="the webhook requires Authorization: Bearer <the token in FILE>",
    )
    act.add_argument("--config", metavar="FILE", help="policy and limits (YAML; docs/act.md)")
    act.add_argument(
        "--dry-run",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="only write Events saying what would be done (default: the config's, else on)",
    )
    ha = act.add_argument_group(
        "replicas", "run more than one act: a Lease elects the one that acts (docs/act.md#replicas)"
    )
    ha.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="take part in leader election; only the leader acts, the others hand it "
        "notifications (default: off, a single act)",
    )
    ha.add_argument(
        "--leader-elect-namespace",
        metavar="NS",
        help="the Lease's and the journal's namespace (default: $POD_NAMESPACE, else the "
        "service account's)",
    )
    ha.add_argument("--leader-elect-lease-name", metavar="NAME", default="training-progress-act")
    ha.add_argument("--leader-elect-lease-duration", metavar="SECONDS", type=float, default=15.0)
    ha.add_argument("--leader-elect-renew-deadline", metavar="SECONDS", type=float, default=10.0)
    ha.add_argument("--leader-elect-retry-period", metavar="SECONDS", type=float, default=2.0)
    ha.add_argument(
        "--advertise-url",
        metavar="URL",
        help="where the other replicas reach this one's webhook (default: "
        "http://$POD_IP:<listen port>)",
    )

    cluster = sub.add_parser(
        "cluster",
        help="serve one page of every run of every node (docs/cli.md#the-cluster-page)",
        description="Find the exporters through their Service's EndpointSlices (or the "
        "--exporter URLs), merge their /api/v1/runs, and serve the cluster page.",
    )
    cluster.add_argument("--listen", metavar="HOST:PORT", default="0.0.0.0:9467")
    cluster.add_argument(
        "--namespace", help="the exporters' namespace (default: this pod's, or kubeconfig's)"
    )
    cluster.add_argument("--service", default="training-progress-exporter")
    cluster.add_argument("--port-name", default="metrics", help="the Service port to ask")
    cluster.add_argument(
        "--exporter",
        action="append",
        default=[],
        metavar="[NAME=]URL",
        help="ask this exporter instead of the EndpointSlices (repeatable; no cluster needed)",
    )
    cluster.add_argument(
        "--timeout", type=float, default=5.0, help="seconds to wait for each exporter"
    )
    cluster.add_argument(
        "--prometheus",
        metavar="URL",
        help="read every run from this Prometheus (or Thanos Query, Mimir) with the rules "
        "loaded, instead of asking each exporter (docs/cli.md#from-prometheus)",
    )
    cluster.add_argument(
        "--max-samples",
        type=int,
        default=60_000,
        metavar="N",
        help="with --prometheus: the most samples one answer may hold, counted before it is "
        "parsed (default 60000: about 4,600 runs in a 256Mi limit)",
    )

    demo = sub.add_parser("demo", help="run the exporter with simulated runs (no cluster needed)")
    demo.add_argument("--listen", metavar="HOST:PORT", default="127.0.0.1:9465")
    demo.add_argument(
        "--duration",
        type=float,
        metavar="SECONDS",
        help="stop after this long (default: until Ctrl-C)",
    )
    return p


def _on_sigterm(stop: threading.Event) -> None:
    """SIGTERM and SIGINT (Ctrl-C) set ``stop``. Installed before anything is served: a
    SIGTERM that comes as soon as the server answers must stop it cleanly, not kill it (the
    default action). SIGINT explicitly too: a process started in the background by a shell
    inherits SIGINT ignored, and Python then raises no KeyboardInterrupt for it."""
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())


def _wait(stop: threading.Event, duration: float | None) -> None:
    with contextlib.suppress(KeyboardInterrupt):
        stop.wait(duration)


def _serve_until_stopped(server: HTTPServer, what: str, path: str) -> int:
    """Serve ``server`` until SIGTERM or SIGINT, saying where first; 0 once stopped."""
    from ..plumbing.httpd import serve_in_thread

    stop = threading.Event()
    _on_sigterm(stop)
    serve_in_thread(server)
    host, port = server.server_address[:2]
    print(f"training-progress-exporter {what} serving http://{host}:{port}{path}", flush=True)
    _wait(stop, None)
    server.shutdown()
    server.server_close()
    return 0


def _run(args: argparse.Namespace) -> int:
    from ..daemon.app import Exporter
    from ..daemon.config import load
    from ..plumbing.discovery import DiscoveryError
    from ..plumbing.settings import ConfigError

    flags: dict[str, Any] = {
        k: getattr(args, k)
        for k in (
            "listen",
            "push_token_file",
            "state_file",
            "mode",
            "config",
            "status_dir",
            "log_paths",
            "namespace",
            "retention",
            "poll_interval",
            "max_custom_metrics",
            *(spec.name for spec in SPECS),
        )
    }
    stop = threading.Event()
    _on_sigterm(stop)
    try:
        config = load(flags)
        exporter = Exporter(config)
    except (ConfigError, DiscoveryError, OSError) as exc:
        print(f"training-progress-exporter: {exc}", file=sys.stderr)
        return 2
    exporter.start()
    print(
        f"training-progress-exporter {__version__} ({exporter.discovery.mode}) serving "
        f"{exporter.url}/metrics, status page {exporter.url}/",
        flush=True,
    )
    _wait(stop, None)
    exporter.stop()
    return 0


def _act(args: argparse.Namespace) -> int:
    import time
    from dataclasses import replace

    from ..act.act_config import load as load_act
    from ..act.controller import Actor
    from ..act.kube import KubernetesOps
    from ..act.webhook_server import make_server
    from ..kubernetes.client import api_client
    from ..plumbing.discovery import DiscoveryError
    from ..plumbing.settings import ConfigError

    try:
        config = load_act(args.config)
        if args.dry_run is not None:
            config = replace(config, dry_run=args.dry_run)
        with open(args.token_file, encoding="utf-8") as f:
            token = f.read().strip()
        if not token:
            raise ConfigError(f"{args.token_file} is empty: the webhook needs a token")
        host, _, port = args.listen.rpartition(":")
        ops = KubernetesOps(api_client(retries=0))
        actor = Actor(ops, config, time.time)
        elector = _elector(args, actor, ops, int(port)) if args.leader_elect else None
        server = make_server(
            host.strip("[]") or "0.0.0.0",
            int(port),
            actor,
            token,
            elector.leader_url if elector is not None else lambda: "",
        )
    except (ConfigError, DiscoveryError, OSError, ValueError) as exc:
        print(f"training-progress-exporter act: {exc}", file=sys.stderr)
        return 2
    mode = "dry run" if config.dry_run else "acting"
    if elector is None:
        return _serve_until_stopped(server, f"act {__version__} ({mode})", "/api/v1/alerts")
    stop = threading.Event()
    electing = threading.Thread(target=elector.run, args=(stop,), name="act-leader")
    electing.start()
    try:
        what = f"act {__version__} ({mode}, candidate {elector.identity})"
        return _serve_until_stopped(server, what, "/api/v1/alerts")
    finally:
        stop.set()  # the lease is released, so the other replica takes over at once
        electing.join(timeout=10)


def _elector(args: argparse.Namespace, actor: Any, ops: Any, port: int) -> Any:
    """The leader election of this act replica, wired to ``actor`` (its journal and its
    test of leadership). Raises ConfigError when a setting is missing."""
    import socket
    import time
    import uuid

    from ..act.journal import Journal
    from ..act.leader import Elector
    from ..act.lease import Timing
    from ..plumbing.settings import ConfigError

    namespace = args.leader_elect_namespace or os.environ.get("POD_NAMESPACE", "")
    if not namespace:
        try:
            with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace") as f:
                namespace = f.read().strip()
        except OSError:
            raise ConfigError("--leader-elect needs --leader-elect-namespace") from None
    url = args.advertise_url or (
        f"http://{os.environ['POD_IP']}:{port}" if os.environ.get("POD_IP") else ""
    )
    if not url.startswith(("http://", "https://")):
        raise ConfigError("--leader-elect needs --advertise-url (or $POD_IP)")
    timing = Timing(
        args.leader_elect_lease_duration,
        args.leader_elect_renew_deadline,
        args.leader_elect_retry_period,
    )
    try:
        timing.check()
    except ValueError as err:
        raise ConfigError(str(err)) from None
    name = args.leader_elect_lease_name
    actor.journal = Journal(
        ops, namespace, f"{name}-journal", actor.config.limits.remember_seconds, time.time
    )
    identity = f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
    elector = Elector(
        ops, namespace, name, identity, url, timing, time.time, on_started=actor.take_over
    )
    actor.leading = elector.is_leader
    return elector


def _cluster(args: argparse.Namespace) -> int:
    from ..plumbing.discovery import DiscoveryError
    from .cluster import ClusterView, make_server, static_endpoints

    try:
        if args.prometheus:
            from ..views.assets import load_assets
            from .cluster_prometheus import PrometheusView, prometheus_query

            if not args.prometheus.startswith(("http://", "https://")):
                raise ValueError(f"--prometheus {args.prometheus}: not an http(s) URL")
            if args.max_samples < 1:
                raise ValueError(f"--max-samples {args.max_samples}: not a positive count")
            pview = PrometheusView(
                args.prometheus,
                prometheus_query(args.prometheus, args.timeout, args.max_samples),
                assets=load_assets(),
            )
            view: Any = pview
            where = f"runs from {pview.source}"
        elif args.exporter:
            fixed = static_endpoints(args.exporter)
            view = ClusterView(lambda: fixed, timeout=args.timeout)
            where = f"{len(fixed)} exporters given"
        else:
            from ..kubernetes.client import api_client, current_namespace
            from ..kubernetes.endpoints import EndpointSliceLister

            namespace = args.namespace or current_namespace()
            lister = EndpointSliceLister(
                api_client(retries=0), namespace, args.service, args.port_name
            )
            view = ClusterView(lister, timeout=args.timeout)
            where = f"EndpointSlices of {namespace}/{args.service} port {args.port_name}"
        host, _, port = args.listen.rpartition(":")
        server = make_server(host.strip("[]") or "0.0.0.0", int(port), view)
    except (DiscoveryError, OSError, ValueError) as exc:
        print(f"training-progress-exporter cluster: {exc}", file=sys.stderr)
        return 2
    return _serve_until_stopped(server, f"cluster {__version__} ({where})", "/")


def _demo(args: argparse.Namespace) -> int:
    from .demo import Demo

    try:
        demo = Demo(listen=args.listen)
    except OSError as exc:
        print(
            f"training-progress-exporter demo: cannot listen on {args.listen}: {exc}",
            file=sys.stderr,
        )
        return 2
    stop = threading.Event()
    _on_sigterm(stop)
    try:
        demo.start()
        print(demo.banner(), flush=True)
        _wait(stop, args.duration)
    except KeyboardInterrupt:
        pass
    finally:
        demo.stop()  # removes what the demo made, on any way out
    return 0


def _top(args: argparse.Namespace) -> int:
    import shutil

    from . import top, toprows

    if args.prometheus:
        url = args.prometheus

        def source() -> list[toprows.Row]:
            return toprows.from_prometheus(url)
    else:
        url = args.exporter or os.environ.get("TPE_EXPORTER_URL", "http://127.0.0.1:9465")

        def source() -> list[toprows.Row]:
            return toprows.from_exporter(url)

    tty = sys.stdout.isatty() and os.environ.get("NO_COLOR") is None
    try:
        return top.run(
            source,
            sys.stdout,
            once=args.once,
            output=args.output,
            interval=args.interval,
            width=lambda: shutil.get_terminal_size((120, 24)).columns,
            tty=tty,
            sort=args.sort,
            keys=sys.stdin,
            height=lambda: shutil.get_terminal_size((120, 24)).lines,
        )
    except KeyboardInterrupt:
        return 0


def _logging() -> None:
    """Log lines for the commands that keep running (``run``, ``act``, ``demo``): time,
    level, where, what; on stderr, at ``TPE_LOG_LEVEL`` (default info). Without it a warning
    would reach stderr bare (Python's last resort), and an info never."""
    level = os.environ.get("TPE_LOG_LEVEL", "info").upper()
    logging.basicConfig(
        level=level if level in logging.getLevelNamesMapping() else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def _inspect(args: argparse.Namespace) -> int:
    """``inspect``: what the exporter reads from each path, with the config's log formats."""
    from ..daemon.config import load
    from ..logs.inspect import main as inspect_main
    from ..plumbing.settings import ConfigError

    try:
        config = load({"config": args.config} if args.config else {})
    except ConfigError as err:
        print(f"training-progress-exporter: {err}", file=sys.stderr)
        return 2
    return inspect_main(args.paths, config.log_formats, args.format, args.output)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command in ("run", "act", "demo", "cluster"):
        _logging()
    commands = {
        "run": _run,
        "top": _top,
        "inspect": _inspect,
        "act": _act,
        "cluster": _cluster,
        "demo": _demo,
    }
    return quiet_on_closed_pipe(lambda: commands[args.command](args))


if __name__ == "__main__":
    sys.exit(main())
