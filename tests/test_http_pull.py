"""HTTP pulls: a total deadline however slowly a target sends, a body cap,
and no redirects followed."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from exporter.core.model import ReportError
from exporter.plumbing.fetch import get as fetch_url

BODY = b'{"currentStep": 5, "totalSteps": 100}'


class _Pod(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        _Pod.hits.append(self.path)
        try:
            if self.path == "/trickle":  # headers at once, then a byte every 0.3 s
                self.send_response(200)
                self.send_header("Content-Length", str(len(BODY)))
                self.end_headers()
                for i in range(len(BODY)):
                    self.wfile.write(BODY[i : i + 1])
                    self.wfile.flush()
                    time.sleep(0.3)
            elif self.path == "/slow-headers":  # the status line itself at a byte a time
                for ch in b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}":
                    self.wfile.write(bytes([ch]))
                    self.wfile.flush()
                    time.sleep(0.3)
            elif self.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", "ftp://127.0.0.1/evil.json")
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self.path == "/redirect-http":
                self.send_response(301)
                self.send_header("Location", "/ok")
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self.path == "/big-declared":
                self.send_response(200)
                self.send_header("Content-Length", str(10 * 1024 * 1024))
                self.end_headers()
            elif self.path == "/big-undeclared":
                self.send_response(200)
                self.end_headers()  # no length: the body runs until the connection closes
                self.wfile.write(b"x" * 200_000)
                self.close_connection = True
            else:
                self.send_response(200)
                self.send_header("Content-Length", str(len(BODY)))
                self.end_headers()
                self.wfile.write(BODY)
        except OSError:
            return


@pytest.fixture(scope="module")
def pod() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pod)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _fails(url: str, timeout: float = 1.5, max_bytes: int = 65536) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(ReportError) as err:
        fetch_url(url, timeout, max_bytes)
    return err.value.reason, time.monotonic() - started


@pytest.mark.slow
def test_a_body_at_a_byte_every_0_3_s_hits_the_total_deadline(pod: str) -> None:
    reason, took = _fails(pod + "/trickle")  # 38 bytes: 11 s without a total deadline
    assert reason == "timeout" and took < 2.5, took


@pytest.mark.slow
def test_headers_at_a_byte_every_0_3_s_hit_the_total_deadline(pod: str) -> None:
    reason, took = _fails(pod + "/slow-headers")
    assert reason == "timeout" and took < 2.5, took


def test_redirects_are_not_followed(pod: str) -> None:
    _Pod.hits.clear()
    assert _fails(pod + "/redirect")[0] == "http_status"
    assert _fails(pod + "/redirect-http")[0] == "http_status"
    assert _Pod.hits == ["/redirect", "/redirect-http"]  # /ok was never asked for


def test_bodies_over_the_cap_are_refused(pod: str) -> None:
    assert _fails(pod + "/big-declared")[0] == "oversize"
    assert _fails(pod + "/big-undeclared", max_bytes=65536)[0] == "oversize"


def test_a_good_target_and_bad_urls(pod: str) -> None:
    assert fetch_url(pod + "/ok", 2.0, 65536) == BODY
    assert _fails("ftp://127.0.0.1/x.json")[0] == "invalid_url"
    assert _fails("http://127.0.0.1:99999/x")[0] == "invalid_url"
    assert _fails("http://127.0.0.1:1/x")[0] == "unreachable"
