"""The status page: content and escaping (pure), over HTTP, and in real headless Chromium."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from exporter.commands.demo import RUNS, Demo
from exporter.core.humanize import duration
from exporter.core.model import ProgressReport, RunKey, RunMeta
from exporter.core.states import BY_NAME, severity
from exporter.core.thresholds import Thresholds
from exporter.core.tracker import Tracker, TrackerConfig
from exporter.views import runpage, statuspage

from .conftest import T0, FakeClock, http

EVIL = '<script>document.title="pwned"</script>'
CHROMIUM = shutil.which("chromium")
SCREENSHOTS = Path(tempfile.gettempdir()) / "training-progress-exporter-screenshots"


def test_index_and_detail_escape_everything() -> None:
    tracker = Tracker()
    key = RunKey("ml", f"pod{EVIL}", f"job{EVIL}")
    for i in range(10):
        tracker.apply(
            key,
            ProgressReport(step=i + 1, max_steps=10, loss=2.0 / (i + 1), metrics=(("acc", 0.5),)),
            T0 + i,
            RunMeta(framework=EVIL, gpus=1),
        )
    (snap,) = tracker.snapshot(T0 + 10, history=True)
    for page in (statuspage.index([snap], T0 + 10), runpage.run_detail(snap, T0 + 10)):
        assert EVIL not in page and "&lt;script&gt;" in page
        assert page.count("<script>") == 1  # only our own refresh script
    # The charts' data is named by a relative, quoted, escaped path (never the raw name).
    assert 'data-timeline="../../api/v1/runs/ml/pod%3Cscript%3E' in runpage.run_detail(
        snap, T0 + 10
    )


def test_pages_over_http(exporter_factory: Any) -> None:
    exp = exporter_factory()
    exp.tracker.apply(
        RunKey("ml", "bert-0", "bert"), ProgressReport(step=5, max_steps=10, loss=1.0), exp.clock()
    )
    status, body = http("GET", exp.url + "/")
    assert status == 200 and b'href="runs/ml/bert-0"' in body
    status, body = http("GET", exp.url + "/runs/ml/bert-0")
    assert status == 200 and b"ml/bert" in body
    assert http("GET", exp.url + "/runs/ml/nope")[0] == 404


def chromium(*args: str, timeout: float = 60, console: list[str] | None = None) -> str:
    """Headless Chromium's stdout for ``args``; with ``console``, its log (the page's console
    messages, Content-Security-Policy refusals among them) is appended there."""
    assert CHROMIUM
    profile = tempfile.mkdtemp(prefix="chromium-")
    logging_args = ("--enable-logging=stderr", "--v=0") if console is not None else ()
    proc = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--virtual-time-budget=3000",
            *logging_args,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    shutil.rmtree(profile, ignore_errors=True)
    if console is not None:
        console.extend(proc.stderr.splitlines())
    return proc.stdout


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is installed by the test command")
def test_status_page_in_headless_chromium() -> None:
    clock = FakeClock(T0)
    demo = Demo(listen="127.0.0.1:0", clock=clock)
    demo.exporter.start(poll_loop=False)
    demo.exporter.tracker.apply(
        RunKey("demo", f"x{EVIL}", f"evil{EVIL}"), ProgressReport(step=1), clock()
    )
    try:
        for t in range(0, 181, 2):
            clock.now = T0 + t
            demo.tick(float(t))
            demo.exporter.poll_once()
        url = demo.exporter.url + "/"
        console: list[str] = []
        dom = chromium("--dump-dom", url, console=console)
        SCREENSHOTS.mkdir(exist_ok=True)
        shot = SCREENSHOTS / "status-page.png"
        chromium(f"--screenshot={shot}", "--window-size=1400,600", url)
        detail_url = demo.exporter.url + "/runs/demo/hung-save"
        detail_dom = chromium("--dump-dom", "--window-size=1400,1000", detail_url, console=console)
        detail_shot = SCREENSHOTS / "charts-stalled.png"
        # The three run pages a user meets first: stalled, healthy, finished. Each is
        # screenshotted (for a person to look at) and measured by the browser itself.
        pages = {"stalled": detail_dom}
        for kind, name in (
            ("stalled", "hung-save"),
            ("healthy", "healthy-llm"),
            ("finished", "finished-vit"),
        ):
            page_url = f"{demo.exporter.url}/runs/demo/{name}"
            if kind not in pages:
                pages[kind] = chromium("--dump-dom", "--window-size=1400,1000", page_url)
            chromium(
                f"--screenshot={SCREENSHOTS / f'charts-{kind}.png'}",
                "--window-size=1400,1900",  # the whole page, charts included
                page_url,
            )
    finally:
        demo.stop()
    for kind, page in pages.items():
        charts = page.split('id="charts"')[1].split("</section>")[0]
        assert "data-drawn=" in charts, kind
        # No notice, caption or legend over any plot area, as the browser laid them out.
        assert 'data-text-over-plot="0"' in charts, (kind, charts[:400])
        # The state band lies below the time axis's labels, not over the plot.
        gaps = [int(g) for g in re.findall(r'data-band-gap="(-?\d+)"', charts)]
        assert len(gaps) == 2 and min(gaps) >= 20, (kind, gaps)
        assert (SCREENSHOTS / f"charts-{kind}.png").stat().st_size > 30_000
        assert "Shaded: " in page and "stalled, since its last step" in page
    # The page lists the demo's runs, each in the state it ends in, most urgent first (as
    # the browser built the DOM), each bar in its state's color.
    rows = [line for line in dom.split("<tr>") if "</a></td>" in line]
    for run in RUNS:
        row = next(line for line in rows if f">{run.name}</a>" in line)
        state = run.shows[-1]
        assert f">{state}</span>" in row, (run.name, row[:300])
        if state != "waiting":  # a run with no progress yet has no bar
            assert f' c-{state}"></span>' in row, (run.name, row)
    names = [r.name for r in RUNS]
    order = [n for row in rows for n in names if f">{n}</a>" in row]
    ends = {r.name: r.shows[-1] for r in RUNS}
    assert [severity(ends[n]) for n in order] == sorted(severity(ends[n]) for n in order)
    # An injected script is shown as text, never run.
    assert "pwned" not in dom.split("<title>")[1].split("</title>")[0]
    assert "&lt;script&gt;" in dom
    # The detail view opens, from a relative link that works behind port-forward too.
    assert 'href="runs/demo/hung-save"' in dom
    assert "demo/hung-save" in detail_dom and ">stalled</span>" in detail_dom
    assert shot.exists() and shot.stat().st_size > 10_000
    # The charts were drawn by the vendored uPlot from the timeline (the script marks the
    # section when it drew), one canvas per chart, and the stalled run's charts say so.
    charts = detail_dom.split('id="charts"')[1].split("</section>")[0]
    assert 'data-state="stalled"' in charts and "data-drawn=" in charts
    assert charts.count("<canvas") == 3, charts[:500]
    assert 'class="notice">Stalled: no step for' in charts
    assert charts.count('class="u-axis"') >= 6, "every chart has its axes"
    # Under the pages' policy (no 'unsafe-inline': the one inline style and script by their
    # hashes), Chromium refused nothing of ours.
    refused = [line for line in console if "Content Security Policy" in line]
    assert console and refused == [], refused
    assert detail_shot.exists() and detail_shot.stat().st_size > 30_000


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is installed by the test command")
def test_the_charts_format_durations_as_the_exporter_does(tmp_path: Path) -> None:
    """charts.js holds a copy of exporter.core.humanize.duration (a browser cannot call
    Python): the same text for the same seconds, at every boundary of the format."""
    values = [0, 0.9, 1, 59, 59.99, 60, 76, 107, 120, 599, 600, 601, 3599, 3600, 3661,
              86399, 86400, 90061, 999 * 86400, 1000 * 86400, 1e12, -5]  # fmt: skip
    charts_js = Path(__file__).parent.parent / "exporter" / "views" / "web" / "charts.js"
    page = tmp_path / "durations.html"
    page.write_text(
        f'<!doctype html><body><script src="{charts_js.as_uri()}"></script><script>'
        f"document.body.textContent = JSON.stringify({json.dumps(values)}.map(tpeDuration));"
        "</script></body>"
    )
    dom = chromium("--allow-file-access-from-files", "--dump-dom", page.as_uri())
    body = re.search(r"<body>(.*)</body>", dom, re.S)
    assert body is not None, dom[:300]
    shown = json.loads(html.unescape(body.group(1)))
    assert shown == [duration(v) for v in values]
    assert shown[6:8] == ["1m16s", "1m47s"]  # an ETA and its upper bound, told apart


def test_state_colors_the_bar_and_says_why_in_severity_order() -> None:
    tracker = Tracker(TrackerConfig(thresholds=Thresholds(stall_seconds=1800)))
    ok, hung = RunKey("ml", "ok-0", "ok"), RunKey("ml", "hung-0", "hung")
    for t in range(0, 3000, 60):
        tracker.apply(ok, ProgressReport(step=t, max_steps=10_000, loss=1.0), T0 + t)
        step = min(t, 300)  # froze at 300 s; its heartbeat goes on
        tracker.apply(hung, ProgressReport(step=step, max_steps=10_000, loss=1.0), T0 + t)
    now = T0 + 300 + 42 * 60
    snaps = tracker.snapshot(now)
    page = statuspage.index(snaps, now)
    # The stalled run comes first, says how long against its threshold, and its bar is red.
    assert page.index(">hung<") < page.index(">ok<")
    assert "stalled for 42m (threshold 30m)" in page
    assert ' c-stalled"></span>' in page and ' c-running"></span>' in page
    assert f".c-stalled{{background:{BY_NAME['stalled'].css_color}}}" in page
    detail = runpage.run_detail(next(s for s in snaps if s.key == hung), now)
    assert "stalled for 42m (threshold 30m)" in detail
    # How long it is stalled counts from its last step, as the reason does (not from when
    # the threshold was crossed, which read "12m ago" beside "stalled for 42m").
    assert "<dt>Stalled since its last step</dt><dd>42m ago</dd>" in detail
    # Best is a moving average: the label says so, and over how long (a tenth of the
    # default 2 h plateau window).
    assert "<dt>Best loss (smoothed over 12m)</dt>" in detail


def test_a_smoothed_best_above_the_latest_loss_says_why() -> None:
    """A short run whose loss fell from 17.9 to 0.13 in two minutes: its smoothed best
    lags. The page states the average's span and why the best is above the latest."""
    from exporter.views.runpage import _best_loss

    run = {"loss": 0.1331, "best_loss": 17.87, "thresholds": {"plateau_seconds": 7200.0}}
    label, value = _best_loss(run)
    assert label == "Best loss (smoothed over 12m)"
    assert value == "17.87 (above the latest, 0.1331: the average lags a falling loss)"
    below = _best_loss({**run, "best_loss": 0.12})
    assert below[1] == "0.12"  # no note where nothing contradicts
    evaluated = _best_loss({**run, "eval_loss": 0.2, "best_loss": 0.19})
    assert evaluated == ("Best eval loss", "0.19")


def test_detail_shows_the_eta_with_its_bounds() -> None:
    tracker = Tracker()
    key = RunKey("ml", "llm-0", "llm")
    step = 0
    for i in range(30):
        step += 20 if i % 3 else 30  # an uneven pace: the bounds differ from the ETA
        tracker.apply(key, ProgressReport(step=step, max_steps=10_000), T0 + i * 5)
    (snap,) = tracker.snapshot(T0 + 145)
    assert snap.eta_lower_seconds is not None and snap.eta_upper_seconds is not None
    assert snap.eta_lower_seconds < snap.eta_upper_seconds
    page = runpage.run_detail(snap, T0 + 145)
    bounds = f"({duration(snap.eta_lower_seconds)} to {duration(snap.eta_upper_seconds)})"
    assert f"{duration(snap.eta_seconds)} {bounds}" in page


@pytest.mark.slow
def test_the_index_shows_a_page_of_runs_with_the_totals_and_four_views_stay_small(
    exporter_factory: Any,
) -> None:
    """F7 (#56): at 10,000 runs the index is a page of runs (200 by default, ?per_page up
    to 1000), in the order asked, with the totals of all and links to the other pages; four
    views at once grow the process by a bounded amount (before: one view of 10,000 runs
    took 745 MiB, six of 2,000 runs 238 MiB)."""
    import resource
    import threading

    exp = exporter_factory(max_runs=10_000)
    for i in range(10_000):
        key = RunKey("ml", f"pod-{i:05d}", f"job-{i:05d}")
        for step in (1, 2):
            exp.tracker.apply(
                key,
                ProgressReport(step=step * (i + 1), max_steps=20_000, loss=1.0, gpus=i % 8),
                exp.clock() - 600 + step,
            )
    status, first = http("GET", exp.url + "/")
    text = first.decode()
    assert status == 200 and "10000 runs" in text and "page 1 of 50" in text
    assert text.count("<tr><td>ml</td>") == 200
    assert 'href="?page=2&amp;per_page=200&amp;sort=urgency">next</a>' in text
    by_name = http("GET", exp.url + "/?page=3&per_page=100&sort=name")[1].decode()
    rows = [r for r in by_name.split("<tr><td>ml</td>")[1:]]
    assert len(rows) == 100 and ">job-00200</a>" in rows[0] and ">job-00299</a>" in rows[-1]
    assert "page 3 of 100" in by_name and "previous</a>" in by_name
    furthest = http("GET", exp.url + "/?sort=progress&per_page=1")[1].decode()
    assert ">job-09999</a>" in furthest
    # Four views at once, each of the whole index's totals and one page.
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    answers: list[int] = []
    views = [
        threading.Thread(target=lambda: answers.append(http("GET", exp.url + "/")[0]))
        for _ in range(4)
    ]
    for v in views:
        v.start()
    for v in views:
        v.join(120)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert answers == [200] * 4
    assert grown_mib < 64, grown_mib


def test_a_run_with_no_typical_pace_yet_says_why() -> None:
    from exporter.views.runpage import _typical

    assert _typical({"state": "running", "typical_steps_per_second": 2.0}) == "2"
    assert _typical({"state": "running"}).startswith("- (not yet: it is the 90th percentile")
    assert _typical({"state": "finished"}) == "-"


def test_the_index_sorts_by_any_column_and_both_pages_sort_alike() -> None:
    """Every column's header links to the index sorted by it; the node page (snapshots)
    and the cluster page (their JSON) put runs in the same order for every column; a run
    without the value goes last; ETA bounds and the checkpoint's age are in the table."""
    from exporter.views.api import run_to_dict

    tracker = Tracker(TrackerConfig(thresholds=Thresholds()))
    now = T0 + 600
    for i, (step, gpus, loss) in enumerate([(50, 8, 2.0), (10, 1, 0.5), (90, 4, None)]):
        key = RunKey("ml", f"run-{i}", f"job-{'cab'[i]}")
        for t in range(0, 300, 30):
            tracker.apply(
                key,
                ProgressReport(
                    step=step * (t + 30) // 300, max_steps=100, loss=loss, gpus=gpus,
                    checkpoint_step=1 if i != 2 else None,
                    checkpoint_timestamp=T0 + 100 * i if i != 2 else None,
                ),
                T0 + t,
            )  # fmt: skip
    snaps = list(tracker.iter_snapshots(now))
    for order in statuspage.ORDERS:
        by_snapshot = [
            s.key.pod for s in sorted(snaps, key=lambda s: statuspage.sort_key(s, order.name))
        ]
        dicts = [run_to_dict(s) for s in snaps]
        by_dict = [
            r["pod"] for r in sorted(dicts, key=lambda r: statuspage.dict_sort_key(r, order.name))
        ]
        assert by_snapshot == by_dict, order.name
    ordered = sorted(snaps, key=lambda s: statuspage.sort_key(s, "step"))
    assert [s.step for s in ordered] == [90, 50, 10]  # furthest first
    ordered = sorted(snaps, key=lambda s: statuspage.sort_key(s, "loss"))
    assert [s.loss for s in ordered] == [0.5, 2.0, None]  # lowest first, none last
    ordered = sorted(snaps, key=lambda s: statuspage.sort_key(s, "checkpoint"))
    assert [s.key.pod for s in ordered] == ["run-0", "run-1", "run-2"]  # oldest first
    page = statuspage.Page.of("sort=gpus&per_page=50")
    html_ = statuspage.index_page(
        sorted(snaps, key=lambda s: statuspage.sort_key(s, "gpus")), now, page, 3, {}
    )
    for order in statuspage.ORDERS:
        if order.name != "node":  # the cluster page's column
            assert f'href="?page=1&amp;per_page=50&amp;sort={order.name}"' in html_, order.name
    assert "GPUs</a> &#9662;" in html_
    assert "ago</td>" in html_  # the checkpoint's age
    assert re.search(r'<td class="num">[0-9hms]+ \([0-9hms]+-[0-9hms]+\)</td>', html_)  # ETA band
    body = html_.split("<tbody>")[1]
    assert body.index(">job-c<") < body.index(">job-b<") < body.index(">job-a<")  # 8, 4, 1


def test_an_mfu_above_the_peak_is_shown_dropped_with_why() -> None:
    from exporter.views.runpage import _mfu

    run = {"tokens_per_second": 327_680.0, "model_flops_per_token": 8.35e10,
           "gpu_peak_flops": 989e12, "gpus": 8}  # fmt: skip
    assert _mfu(run).startswith("- (dropped: 3.46x its GPUs&#x27; peak")
    assert _mfu({**run, "model_flops_utilization": 0.323}) == "32.3 %"
    assert _mfu({"gpus": 8}) == "-"
