"""``training-progress-exporter top``: a live table of training jobs in the terminal.

Data comes from one exporter's ``/api/v1/runs`` (one node, or standalone) or from Prometheus
(the whole cluster, through the recording rules). Collecting rows is I/O; turning them into
a table is pure (:func:`render`), so tests check widths and colors without a terminal.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TextIO

from ..core.humanize import duration, format_loss
from ..core.model import json_safe
from ..core.states import STATES, severity
from .toprows import SORTS, Row, sort_rows

_BOLD, _RESET = "\x1b[1m", "\x1b[0m"
STATE_COLOR = {d.name: f"\x1b[{d.ansi}m" for d in STATES}
# States whose reason line would only repeat the state's name.
QUIET_STATES = ("running", "finished")
ARROWS = {"down": "↓", "up": "↑", "flat": "→", None: " "}
SHORT_STATES = {"finished-but-running": "fin-running"}


def bar(progress: float | None, width: int) -> str:
    """A progress bar with its percentage, exactly ``width`` characters wide."""
    if progress is None:
        return "-".ljust(width)
    p = min(1.0, max(0.0, progress))
    label = f"{p * 100:3.0f}%"
    cells = max(0, width - len(label) - 1)
    full = int(p * cells)
    return "█" * full + "░" * (cells - full) + " " + label


@dataclass(frozen=True)
class Column:
    """A table column: header, its text for a row, and when it goes as the terminal narrows
    (``drop`` order: 1 goes first; 0 never)."""

    header: str
    text: Callable[[Row], str]
    drop: int
    right: bool = False  # numbers align right


def _step(r: Row) -> str:
    if r.step is None:
        return "-"
    return f"{r.step}/{r.max_steps}" if r.max_steps else str(r.step)


def _rate(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if value < 1000 else f"{value:.0f}"


def eta_text(r: Row) -> str:
    """The ETA and its 80 % band: "1h20m (55m-2h10m)"; the ETA alone where it has none."""
    text = duration(r.eta_seconds)
    if r.eta_seconds is not None and None not in (r.eta_lower_seconds, r.eta_upper_seconds):
        text += f" ({duration(r.eta_lower_seconds)}-{duration(r.eta_upper_seconds)})"
    return text


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _hours(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


PROGRESS = "PROGRESS"
COLUMNS = (
    Column("NAMESPACE", lambda r: r.namespace, 10),
    Column("JOB", lambda r: r.job_name, 0),
    Column("STATE", lambda r: r.state, 0),
    Column(PROGRESS, lambda r: "", 0),
    Column("STEP", _step, 5, right=True),
    Column("STEPS/S", lambda r: _rate(r.steps_per_second), 11, right=True),
    Column("ETA", lambda r: eta_text(r), 13, right=True),
    Column("AGE", lambda r: duration(r.age_seconds), 9, right=True),
    Column("LOSS", lambda r: f"{format_loss(r.loss)} {ARROWS[r.loss_trend]}", 12, right=True),
    Column("GPUS", lambda r: "-" if r.gpus is None else f"{r.gpus:g}", 8, right=True),
    Column("GPU-H", lambda r: _hours(r.gpu_hours), 6, right=True),
    # Where the width allows (they go first as it narrows), and only where some job has
    # them: tokens, utilization, the last checkpoint's age and the work it leaves at risk.
    Column("TOK/S", lambda r: _rate(r.tokens_per_second), 4, right=True),
    Column("MFU", lambda r: _percent(r.mfu), 3, right=True),
    Column("CKPT", lambda r: duration(r.checkpoint_age_seconds), 2, right=True),
    Column("RISK-GPU-H", lambda r: _hours(r.at_risk_gpu_hours), 1, right=True),
)
# Shown only where some row has a value: a fleet that counts no tokens gives them no room.
WHEN_KNOWN = frozenset({"TOK/S", "MFU", "CKPT", "RISK-GPU-H"})
MIN_BAR, MAX_BAR = 10, 30
NAME_ROOM = 40  # a job name of up to this many characters is never cut while a column can go


def summary(rows: list[Row]) -> str:
    """One line above the table, like htop's: jobs by state (most urgent first), GPUs held
    by jobs still training, and GPU-hours wasted stalled."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.state] = counts.get(r.state, 0) + 1
    states = ", ".join(
        f"{n} {SHORT_STATES.get(state, state)}"
        for state, n in sorted(counts.items(), key=lambda kv: severity(kv[0]))
    )
    busy = sum(r.gpus or 0.0 for r in rows if r.state not in ("finished", "gone", "failed"))
    wasted = sum(r.wasted_gpu_hours or 0.0 for r in rows)
    jobs = f"{len(rows)} job{'s' if len(rows) != 1 else ''}"
    # The totals first: on a narrow terminal the line is cut at its end.
    return f"{jobs} | {busy:g} GPUs held | {wasted:.1f} GPU-h wasted stalled | {states}"


def _layout(widths: dict[str, int], width: int) -> tuple[list[Column], int, int]:
    """The columns that fit ``width``, the progress bar's width and the job names' width.
    Names get the room: optional columns go, in their ``drop`` order, until a name of up to
    NAME_ROOM characters fits whole; only then is a name cut."""
    shown = [c for c in COLUMNS if c.header not in WHEN_KNOWN or widths.get(c.header)]

    def need(name_width: int) -> int:
        others = sum(widths[c.header] for c in shown if c.header not in ("JOB", PROGRESS))
        return others + name_width + MIN_BAR + 2 * (len(shown) - 1)

    room = min(widths["JOB"], NAME_ROOM)
    for column in sorted((c for c in shown if c.drop), key=lambda c: c.drop):
        if need(room) <= width:
            break
        shown.remove(column)
    name = max(3, min(widths["JOB"], width - need(0)))
    bar_width = max(MIN_BAR, min(MAX_BAR, width - need(name) + MIN_BAR))
    return shown, bar_width, name


def render(rows: list[Row], width: int = 120, color: bool = False, now: float | None = None) -> str:
    """The table as text fitting ``width`` columns: the job names get the room, the other
    columns go by priority as the terminal narrows, the progress bar takes what is left.
    ``now``: what deadlines are counted from (default: the clock)."""
    header, body = table(rows, width, color, now)
    lines = [header, *(line for block in body for line in block)]
    return "\n".join(lines) + "\n"


def _fit(text: str, w: int) -> str:
    return text if len(text) <= w else text[: w - 1] + "…"


def table(
    rows: list[Row], width: int, color: bool = False, now: float | None = None
) -> tuple[str, list[list[str]]]:
    """The header line and, per row, its lines (the row, and under it why it needs
    attention and which rank is stuck), each fitting ``width``."""
    short = width < 100  # the one long state name takes a short form on narrow terminals
    texts = [
        {
            c.header: (SHORT_STATES.get(r.state, r.state) if short else r.state)
            if c.header == "STATE"
            else c.text(r)
            for c in COLUMNS
        }
        for r in rows
    ]
    widths = {c.header: max([len(c.header)] + [len(t[c.header]) for t in texts]) for c in COLUMNS}
    # A column of dashes only says nothing: those that show only when known get no room.
    for header in WHEN_KNOWN:
        if all(t[header] == "-" for t in texts):
            widths[header] = 0
    shown, bar_width, name_width = _layout(widths, width)
    widths[PROGRESS], widths["JOB"] = bar_width, name_width

    def cell(c: Column, text: str) -> str:
        text = _fit(text, widths[c.header])
        return text.rjust(widths[c.header]) if c.right else text.ljust(widths[c.header])

    header = "  ".join(cell(c, c.header) for c in shown).rstrip()
    blocks: list[list[str]] = []
    for r, t in zip(rows, texts, strict=True):
        parts = []
        for c in shown:
            text = bar(r.progress, bar_width) if c.header == PROGRESS else cell(c, t[c.header])
            if color and c.header in ("STATE", PROGRESS):  # the state and its bar share a color
                text = STATE_COLOR.get(r.state, "") + text + _RESET
            parts.append(text)
        block = ["  ".join(parts).rstrip()]
        if r.reason and r.state not in QUIET_STATES:
            block.append(_fit("  └ " + r.reason, width))
        if r.stuck_rank:
            block.append(_fit("  └ stuck: " + r.stuck_rank, width))
        if r.why:
            block.append(_fit("  └ why: " + r.why, width))
        if r.deadlines and r.state not in ("finished", "failed", "gone"):
            at = time.time() if now is None else now
            block.append(_fit("  └ " + "; ".join(d.text(at) for d in r.deadlines), width))
        blocks.append(block)
    if not rows:
        blocks.append(["(no training jobs)"])
    return (_BOLD + header + _RESET if color else header), blocks


# Keys that scroll a live top, as a terminal sends them: arrows, j/k, PgUp/PgDn, Home/End
# (xterm and VT220 forms).
SCROLL_KEYS = {
    "\x1b[A": -1, "k": -1, "\x1b[B": 1, "j": 1,
    "\x1b[5~": "page_up", "\x1b[6~": "page_down", " ": "page_down",
    "\x1b[H": "home", "\x1bOH": "home", "\x1b[1~": "home", "g": "home",
    "\x1b[F": "end", "\x1bOF": "end", "\x1b[4~": "end", "G": "end",
}  # fmt: skip


def scroll(offset: int, key: str, rows: int, page: int) -> int:
    """The first row shown after ``key``, of ``rows``, with ``page`` rows on the screen now
    (a page down starts at the first row not shown: none skipped, none repeated); unchanged
    for any other key."""
    move = SCROLL_KEYS.get(key)
    if move is None:
        return offset
    if isinstance(move, int):
        offset += move
    elif move == "page_up":
        offset -= max(1, page)
    elif move == "page_down":
        offset += max(1, page)
    elif move == "home":
        offset = 0
    else:
        offset = rows
    return max(0, min(offset, rows - 1))


def screen(
    title: str,
    rows: list[Row],
    width: int,
    height: int,
    offset: int,
    color: bool = False,
) -> tuple[str, int, int]:
    """A live top's whole screen, ``height`` lines: the title (clock, sort, keys), the
    summary and the header always; then the rows from ``offset`` (the most urgent first,
    at offset 0) that fit whole, each with its reason lines; the last line says how many
    rows are above and below. Returns the text, the offset used (kept within range, and
    never past the point where the last rows fill the screen) and how many rows it shows."""
    header, blocks = table(rows, width, color)
    fixed = [_fit(title, width), _fit(summary(rows), width), header]
    room = max(1, height - len(fixed) - 1)  # one line for "N more below"
    # The furthest offset that still fills the screen: the last rows' blocks, from the end.
    used, last = 0, len(blocks)
    while last > 0 and used + len(blocks[last - 1]) <= room:
        last -= 1
        used += len(blocks[last])
    offset = max(0, min(offset, last))
    body: list[str] = []
    shown = 0
    for block in blocks[offset:]:
        if len(body) + len(block) > room:
            break
        body += block
        shown += 1
    below = len(blocks) - offset - shown
    if rows and (offset or below):
        where = f"rows {offset + 1}-{offset + shown} of {len(rows)}"
        more = f"; {below} more below" if below else ""
        status = f"{where}{more} (j/k, arrows, PgUp/PgDn, Home/End)"
    else:
        status = ""
    lines = fixed + body + [""] * (room - len(body)) + [_fit(status, width)]
    return "\n".join(lines), offset, shown


def as_json(rows: list[Row]) -> str:
    return json.dumps(json_safe([asdict(r) for r in rows]), indent=2, allow_nan=False) + "\n"


def run(
    source: Callable[[], list[Row]],
    out: TextIO,
    *,
    once: bool,
    output: str,
    interval: float,
    width: Callable[[], int],
    tty: bool,
    sort: str = "state",
    keys: TextIO | None = None,
    height: Callable[[], int] = lambda: 24,
) -> int:
    """Print the table once, or redraw it every ``interval`` seconds until ``q`` (read from
    ``keys``, the terminal) or Ctrl-C. ``s`` cycles the sort key. Live on a terminal, the
    table is drawn on the alternate screen, like htop: the clock, the summary and the header
    always in view, the rows scrolled with j/k, the arrows, PgUp/PgDn and Home/End (the
    most urgent first), and the terminal restored on exit."""
    live = tty and not once
    reader = _Keys(keys) if live and keys is not None and keys.isatty() else None
    if live:
        out.write("\x1b[?1049h\x1b[?25l")  # alternate screen, cursor hidden
    offset, shown = 0, 1
    rows: list[Row] = []
    try:
        while True:
            error = ""
            try:
                rows = sort_rows(source(), sort)
            except (OSError, RuntimeError, ValueError) as exc:
                if once:
                    print(f"training-progress-exporter top: {exc}", file=sys.stderr)
                    return 1
                error = f"error: {exc}"
            if live:
                title = f"{time.strftime('%H:%M:%S')} training jobs, sorted by {sort}"
                help_ = "q quit  s sort  j/k scroll"
                top_line = title + help_.rjust(max(1, width() - len(title)))
                if error:
                    text = top_line[: width()] + "\n" + error
                else:
                    text, offset, shown = screen(
                        top_line, rows, width(), height(), offset, color=tty
                    )
                out.write("\x1b[H\x1b[2J" + text)
            elif error:
                out.write(error + "\n")
            else:
                out.write(as_json(rows) if output == "json" else render(rows, width(), color=tty))
            out.flush()
            if once:
                return 0
            key = reader.wait(interval) if reader is not None else _sleep(interval)
            if key in ("q", "Q"):
                return 0
            if key == "s":
                names = list(SORTS)
                sort = names[(names.index(sort) + 1) % len(names)]
            offset = scroll(offset, key, len(rows), page=shown)
    finally:
        if reader is not None:
            reader.restore()
        if live:
            out.write("\x1b[?25h\x1b[?1049l")
            out.flush()


def _sleep(seconds: float) -> str:
    time.sleep(seconds)
    return ""


class _Keys:
    """Single key presses from a terminal, without echo or Enter (cbreak mode); the
    terminal's mode is restored by :meth:`restore`."""

    def __init__(self, stream: TextIO) -> None:
        import termios
        import tty as tty_mode

        self.fd = stream.fileno()
        self.saved = termios.tcgetattr(self.fd)
        tty_mode.setcbreak(self.fd)

    def wait(self, timeout: float) -> str:
        """The key pressed within ``timeout`` seconds, or "": one character, or a whole
        escape sequence (an arrow sends three bytes, PgDn four)."""
        import os
        import select

        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return ""
        key = os.read(self.fd, 1)
        if key == b"\x1b":
            # The rest of the sequence is already there; a lone Esc is not followed.
            while len(key) < 8 and select.select([self.fd], [], [], 0.02)[0]:
                key += os.read(self.fd, 1)
                if len(key) >= 3 and (key[-1:].isalpha() or key[-1:] == b"~"):
                    break
        return key.decode(errors="replace")

    def restore(self) -> None:
        import termios

        termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)
