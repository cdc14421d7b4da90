"""What every page of the exporter and of the cluster page is made of: the one style sheet
and refresh script (allowed by their hashes, CONTENT_SECURITY_POLICY), the page's shell and
headers, and how one value of a run is written (a number, a state, a bar, an ETA).

Every helper reads a run in its JSON form and takes nothing on trust: the cluster page renders
what other exporters sent, so a string where a number belongs is shown as unknown and every
text is escaped with :func:`html.escape`.
"""

from __future__ import annotations

import base64
import hashlib
import math
import time
from html import escape
from typing import Any
from urllib.parse import quote

from ..core.humanize import duration
from ..core.states import BY_NAME, STATES

_UNKNOWN_COLOR = "#6e7781"
_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1f2328}
h1{font-size:1.3em;margin:0 0 .2em} .sub{color:#6e7781;margin:0 0 1em}
table{border-collapse:collapse;width:100%}
th,td{padding:.35em .6em;text-align:left;border-bottom:1px solid #d0d7de}
th{font-weight:600;background:#f6f8fa} td.num{text-align:right;font-variant-numeric:tabular-nums}
.state{color:#fff;border-radius:1em;padding:.1em .6em;font-size:.85em;white-space:nowrap}
.bar{background:#eaeef2;border-radius:3px;width:12em;height:.9em;display:inline-block;vertical-align:middle}
.fill{display:block;height:100%;border-radius:3px} svg{vertical-align:middle}
.why{color:#57606a;font-size:.85em}
.stuck{border-left:4px solid #d1242f;background:#fff5f5;padding:.5em .8em;margin:.8em 0}
.stuck table{margin:.4em 0}
td.progress{white-space:nowrap}
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1.5em} dt{color:#6e7781}
a{color:#0969da;text-decoration:none}
.failures{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;
 padding:.5em 1em;margin:0 0 1em}
.failures li{margin:.2em 0}
#charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:1em;margin:1em 0}
#charts figure{margin:0;position:relative;border:1px solid #d0d7de;border-radius:6px;padding:.5em}
#charts figcaption{font-weight:600;margin:0 0 .3em}
.notice{margin:0 0 .4em;color:#1f2328;background:#fff8c5;border:1px solid #d4a72c;
 border-radius:4px;padding:.3em .6em;font-size:.9em}
.k-stall{background:rgba(207,34,46,.25)} .k-eta{background:rgba(130,80,223,.25)}
.legend-states span{display:inline-block;margin-right:1em;font-size:.85em}
.legend-states i{display:inline-block;width:.8em;height:.8em;border-radius:2px;
 margin-right:.3em;vertical-align:middle}
"""
# Colours and bar widths are classes, never style attributes: the pages' policy allows no
# inline style but the one <style> element, by its hash.
_CSS += "".join(f".c-{d.name}{{background:{d.css_color}}}" for d in STATES)
_CSS += f".c-unknown{{background:{_UNKNOWN_COLOR}}}\n"
_CSS += "".join(f".w{n}{{width:{n}%}}" for n in range(101)) + "\n"
# Reload the data in place every 5 s, without losing the scroll position.
_SCRIPT = """
setInterval(async () => {
  try {
    const r = await fetch(location.href, {headers: {Accept: 'text/html'}});
    if (!r.ok) return;
    const doc = new DOMParser().parseFromString(await r.text(), 'text/html');
    document.querySelector('main').replaceWith(doc.querySelector('main'));
  } catch (e) { /* the exporter restarting: try again next time */ }
}, 5000);
"""


def number(value: Any) -> float | int | None:
    """``value`` if it is a number, else None: the cluster page renders what other
    exporters sent, and a string where a number belongs is shown as unknown."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def num(value: Any, fmt: str = "{:.4g}") -> str:
    value = number(value)
    if value is None:
        return "-"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return fmt.format(value)


def _hash_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


# What the pages may load and run: their own files, and of inline code only the one <style>
# and the one <script> above, by their hashes. No 'unsafe-inline': a page an exporter sends
# through the cluster page's proxy runs no script of its own (#56 F6).
CONTENT_SECURITY_POLICY = (
    f"default-src 'self'; script-src 'self' {_hash_source(_SCRIPT)}; "
    f"style-src 'self' {_hash_source(_CSS)}; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def page_headers() -> dict[str, str]:
    """The headers every page goes out with (the exporter's and the cluster page's)."""
    return {
        "Content-Security-Policy": CONTENT_SECURITY_POLICY,
        "X-Content-Type-Options": "nosniff",
    }


def color(state: str) -> str:
    """The CSS class of ``state``'s colour (an unknown state, from another exporter: grey)."""
    return f"c-{state}" if state in BY_NAME else "c-unknown"


def progress_bar(p: Any, state: str) -> str:
    """A bar in the state's color: a stalled run's bar is red, not a promising green."""
    p = number(p)
    if p is None or math.isnan(p):
        return "-"
    pct = min(1.0, max(0.0, p)) * 100
    return (
        f'<span class="bar" title="{pct:.1f}%">'
        f'<span class="fill w{round(pct)} {color(state)}"></span></span> {pct:.0f}%'
    )


def state_badge(state: str, why: str = "") -> str:
    badge = f'<span class="state {color(state)}">{escape(state)}</span>'
    return badge + (f' <span class="why">{escape(why)}</span>' if why else "")


def run_path(namespace: str, pod: str) -> str:
    """Relative link from the index to a run's detail view."""
    return f"runs/{quote(namespace, safe='')}/{quote(pod, safe='')}"


def html_page(title: str, body: str, tail: str = "") -> str:
    """A whole page: ``body`` goes in ``<main>``, which the refresh script replaces every
    5 s; ``tail`` (the charts) stays outside it and refreshes itself."""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<main>{body}</main>{tail}<script>{_SCRIPT}</script></body></html>"
    )


def stamp(now: float) -> str:
    """``now`` as the pages print it."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(now))


def eta_text(run: dict[str, Any], short: bool = False) -> str:
    """The ETA, with its bounds when the exporter has them: ``4m (3m to 6m)``, or in a
    table cell (``short``) ``4m (3m-6m)``, as ``top`` shows it."""
    eta = number(run.get("eta_seconds"))
    text = duration(eta)
    lower, upper = number(run.get("eta_lower_seconds")), number(run.get("eta_upper_seconds"))
    if eta is not None and lower is not None and upper is not None:
        text += (
            f" ({duration(lower)}-{duration(upper)})"
            if short
            else (f" ({duration(lower)} to {duration(upper)})")
        )
    return text


def checkpoint_age(run: dict[str, Any], now: float) -> str:
    """How long ago the run's last checkpoint was (``-`` where none was seen)."""
    at = number(run.get("last_checkpoint_timestamp_seconds"))
    return "-" if at is None else f"{duration(now - at)} ago"


def mapping(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (a node's answer may lie)."""
    return value if isinstance(value, dict) else {}
