"""How the exporter reads the world's logs: each excerpt of a corpus (tests/fixtures/world/
or its held-out part) read as a plain file, as containerd writes it and as CRI-O writes it,
scored against its truth file.

    python -m bench.world_logs                 # the held-out set (tests/fixtures/world/heldout)
    python -m bench.world_logs --corpus tests/fixtures/world

An excerpt reads right when its step, its total (where its truth has one) and its train loss
(likewise) are what the truth says in all three forms. A value that differs from the truth,
or any value where the truth says the log does not state one, is wrong; so is a finish the
truth does not have. Missing values (unknown where the truth has one) are neither: the
excerpt does not read right. Prints a table and a summary line; exits 0 either way: it
measures, the corpus test (tests/test_world_logs.py) asserts.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.worldlogs import FORMS, NON_FINITE, Excerpt, excerpts, read, same_non_finite

HELD_OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "world" / "heldout"
SCORED = ("step", "max_steps", "loss")


def _same(got: Any, want: Any) -> bool:
    if want in NON_FINITE:
        return same_non_finite(got, want)
    if isinstance(want, bool):
        return got is want
    return isinstance(got, int | float) and math.isclose(float(got), float(want), rel_tol=1e-6)


def score(e: Excerpt, tmp: Path) -> dict[str, Any]:
    """What each form read of ``e``: right, and the wrong and missing fields."""
    wrong: set[str] = set()
    missing: set[str] = set()
    for form, write in FORMS.items():
        path = tmp / f"{e.name}.{form}.log"
        path.write_text(write(e.text), encoding="utf-8", newline="")
        report = read(path)
        for key, want in e.expect.items():
            got = report.final if key == "final" else getattr(report, key, None)
            if got is None and hasattr(report, "metrics"):
                got = dict(report.metrics).get(key)
            if key == "final":
                if got and not want:
                    wrong.add(f"final ({form})")
                continue
            if want is None:
                if got is not None:
                    wrong.add(f"{key}={got!r} ({form})")
            elif got is None:
                missing.add(key)
            elif not _same(got, want):
                wrong.add(f"{key}={got!r}, not {want!r} ({form})")
    right = not wrong and not (missing & {k for k in SCORED if e.expect.get(k) is not None})
    return {"name": e.name, "tool": e.tool, "right": right, "wrong": sorted(wrong),
            "missing": sorted(missing)}  # fmt: skip


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=HELD_OUT)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        rows = [score(e, Path(tmp)) for e in excerpts(args.corpus)]
    right = sum(r["right"] for r in rows)
    wrong = sum(bool(r["wrong"]) for r in rows)
    finishes = sum(any(w.startswith("final") for w in r["wrong"]) for r in rows)
    summary = {
        "corpus": str(args.corpus),
        "excerpts": len(rows),
        "tools": len({r["tool"].split(" (")[0] for r in rows}),
        "read_right": right,
        "read_right_percent": round(100 * right / len(rows), 1) if rows else 0.0,
        "with_wrong_values": wrong,
        "false_finishes": finishes,
    }
    if args.json:
        print(json.dumps({"summary": summary, "rows": rows}, indent=2))
        return 0
    for r in rows:
        mark = "right" if r["right"] else ("WRONG" if r["wrong"] else "missing")
        detail = "; ".join(r["wrong"]) or ", ".join(r["missing"])
        print(f"{mark:8} {r['name']:32} {detail}")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
