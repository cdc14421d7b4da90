"""What makes a command behave like a Unix tool: a parser that never guesses an option, and
a quiet end when the reader of its output goes away (issue #58)."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn


class Parser(argparse.ArgumentParser):
    """An argument parser with no abbreviations (``--stall`` is no option, where argparse
    would call it ambiguous or silently take the one it starts) that answers an unknown
    option with its own usage and the option meant: ``run --stal-seconds`` gets ``run``'s
    usage and "did you mean --stall-seconds?", not the top-level usage."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            self.unknown(parsed, extra)
        return parsed

    def unknown(self, parsed: argparse.Namespace, extra: Sequence[str]) -> NoReturn:
        """Exit with the usage of the (sub)command the unknown arguments were given to and
        the nearest option each unknown one may have meant."""
        parser: argparse.ArgumentParser = self
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = str(getattr(parsed, action.dest or "", ""))
                parser = action.choices.get(chosen, self)
        options = [
            o
            for a in parser._actions
            if a.help != argparse.SUPPRESS
            for o in a.option_strings
            if o.startswith("--")
        ]
        hints = []
        for arg in extra:
            if arg.startswith("-"):
                near = difflib.get_close_matches(arg.split("=", 1)[0], options, n=1)
                hints += [f"did you mean {near[0]}?"] if near else []
        parser.error("; ".join([f"unrecognized arguments: {' '.join(extra)}", *hints]))


def quiet_on_closed_pipe(command: Callable[[], int]) -> int:
    """``command``'s exit status; when whoever reads its output goes away first
    (``inspect ... | head``), no traceback: the rest of the output is dropped and the status
    is 141, as for a tool that SIGPIPE ended (128 + 13). Not by restoring SIGPIPE's default
    action: the commands that serve would then die on a client's closed connection."""
    try:
        return command()
    except BrokenPipeError:
        # Python flushes stdout again at exit: pointing it at /dev/null keeps that quiet too.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
