"""HTTP framing under hostile and unlucky clients, on loopback.

Slow clients that never finish their request, more connections than the bound, clients
that leave mid-answer, and ambiguous ``Content-Length`` headers: the exporter stays up,
``/metrics`` and the probes answer, and each refusal is counted.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from exporter.plumbing.httpd import (
    EVICT_AFTER,
    POOL_INLINE,
    POOL_PUSH,
    POOL_SCRAPE,
    HTTPServer,
    HTTPStats,
    serve_in_thread,
)
from exporter.plumbing.httpmessages import (
    ConnectionLimits,
    HttpError,
    Request,
    Response,
    content_length,
)

from .conftest import http


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def _exchange(port: int, raw: bytes) -> bytes:
    """Send ``raw`` and read until the server closes (or 5 s)."""
    with _connect(port) as sock:
        sock.sendall(raw)
        chunks = []
        try:
            while data := sock.recv(65536):
                chunks.append(data)
        except TimeoutError:
            pass
    return b"".join(chunks)


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else 0


class Gate:
    """A handler whose ``/block`` requests wait until released: 'being served' on demand."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Semaphore(0)
        self.big_made = 0

    def __call__(self, request: Request) -> Response:
        if request.path == "/big":
            self.big_made += 1
            return Response(200, b"x" * (8 << 20))
        if request.path == "/block":
            self.entered.release()
            self.release.wait(10)
        if request.path == "/stream":
            return Response(200, (b"x" * 65536 for _ in range(400)))
        return Response(200, b"ok:" + request.body)


def _pool(request: Request) -> str:
    if request.path == "/big":
        return POOL_SCRAPE
    return POOL_INLINE if request.path == "/healthz" else POOL_PUSH


def _start(**overrides: Any) -> tuple[HTTPServer, Gate, threading.Thread]:
    gate = Gate()
    settings: dict[str, Any] = {
        "max_connections": 8,
        "header_timeout": 0.5,
        "body_timeout": 0.5,
        "idle_timeout": 2.0,
        "write_timeout": 1.0,
        "push_workers": 4,
        "max_queued": 2,
    }
    limits = ConnectionLimits(**(settings | overrides))
    server = HTTPServer("127.0.0.1", 0, gate, _pool, limits, HTTPStats())
    return server, gate, serve_in_thread(server)


@pytest.fixture
def gate_server() -> Iterator[tuple[HTTPServer, Gate]]:
    server, gate, thread = _start()
    yield server, gate
    gate.release.set()
    server.shutdown()
    server.server_close()
    thread.join(5)


# -- Content-Length: one length or 400 ------------------------------------------------------


@pytest.mark.parametrize("values", [["1_1"], ["+2"], [" -1"], ["0x10"], ["5", "6"], ["5, 6"], [""]])
def test_ambiguous_content_length_is_refused(values: list[str]) -> None:
    with pytest.raises(HttpError) as err:
        content_length(values)
    assert err.value.status == 400


def test_repeated_identical_content_length_is_one_length() -> None:
    assert content_length(["5", "5"]) == 5
    assert content_length(["5, 5"]) == 5
    assert content_length([]) == 0


@pytest.mark.parametrize(
    "headers",
    [
        b"Content-Length: 2\r\nContent-Length: 3\r\n",
        b"Content-Length: 1_1\r\n",
        b"Content-Length: +2\r\n",
        b"Content-Length : 2\r\n",  # space before the colon
        b"X-A: 1\r\n folded\r\n",  # obsolete line folding
    ],
)
def test_smuggling_shapes_get_400_over_the_wire(
    gate_server: tuple[HTTPServer, Gate], headers: bytes
) -> None:
    server, _ = gate_server
    answer = _exchange(
        server.server_address[1], b"POST /p HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\nab"
    )
    assert _status(answer) == 400, answer
    assert b"Connection: close" in answer


@pytest.mark.parametrize(
    "raw",
    [
        b"GET /p HTTP/1.1\nHost: x\r\n\r\n",  # a bare LF ends the request line
        b"GET /p HTTP/1.1\r\nHost: x\n\r\n",  # ... a header
        b"GET /p HTTP/1.1\r\nHost: x\r\n\n",  # ... the head
        b"GET /p HTTP/1.1\r\nX-A: 1\rX-B: 2\r\n\r\n",  # a bare CR inside a header line
        b"GET /p HTTP/1.1\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n",
    ],
    ids=["lf-request-line", "lf-header", "lf-end-of-head", "bare-cr", "two-authorizations"],
)
def test_line_ends_and_credentials_that_two_parsers_could_read_apart_get_400(
    gate_server: tuple[HTTPServer, Gate], raw: bytes
) -> None:
    server, _ = gate_server
    answer = _exchange(server.server_address[1], raw)
    assert _status(answer) == 400, answer
    assert server.stats.snapshot()[1], "the refusal is counted"


@pytest.mark.slow
def test_a_head_past_16_kib_gets_431_however_its_lines_are_cut(
    gate_server: tuple[HTTPServer, Gate],
) -> None:
    """Twenty 1 KiB headers pass the per-line and per-count caps; their total does not."""
    server, _ = gate_server
    headers = b"".join(b"X-%d: %s\r\n" % (i, b"a" * 1000) for i in range(20))
    answer = _exchange(server.server_address[1], b"GET /p HTTP/1.1\r\n" + headers + b"\r\n")
    assert _status(answer) == 431, answer
    small = b"".join(b"X-%d: %s\r\n" % (i, b"a" * 1000) for i in range(10))
    assert (
        _status(_exchange(server.server_address[1], b"GET /p HTTP/1.1\r\n" + small + b"\r\n"))
        != 431
    )


def test_chunked_request_body_gets_411(gate_server: tuple[HTTPServer, Gate]) -> None:
    server, _ = gate_server
    raw = b"POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n"
    assert _status(_exchange(server.server_address[1], raw)) == 411


# -- deadlines ----------------------------------------------------------------------------------


def test_a_client_that_sends_nothing_is_closed_at_the_header_deadline(
    gate_server: tuple[HTTPServer, Gate],
) -> None:
    server, _ = gate_server
    with _connect(server.server_address[1]) as sock:
        sock.sendall(b"GET /x HTTP/1.1\r\nHost")  # and then nothing
        started = time.monotonic()
        assert sock.recv(100) == b""  # closed by the server
        took = time.monotonic() - started
    assert 0.3 < took < 2.0
    assert server.stats.snapshot()[1].get("header_timeout") == 1


def test_a_body_that_trickles_is_cut_at_the_body_deadline(
    gate_server: tuple[HTTPServer, Gate],
) -> None:
    server, _ = gate_server
    with _connect(server.server_address[1]) as sock:
        sock.sendall(b"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123")
        started = time.monotonic()
        for _ in range(3):  # a byte every 0.2 s never completes 100 bytes in time
            time.sleep(0.2)
            try:
                sock.sendall(b"x")
            except OSError:
                break
        assert sock.recv(100) == b""
        took = time.monotonic() - started
    assert took < 2.0
    assert server.stats.snapshot()[1].get("body_timeout") == 1


def test_keep_alive_serves_several_requests_and_http10_is_closed(
    gate_server: tuple[HTTPServer, Gate],
) -> None:
    server, _ = gate_server
    port = server.server_address[1]
    with _connect(port) as sock:
        for body in (b"a", b"bc"):
            sock.sendall(
                b"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%b" % (len(body), body)
            )
            answer = sock.recv(4096)
            assert _status(answer) == 200 and answer.endswith(b"ok:" + body)
    answer = _exchange(port, b"GET /healthz HTTP/1.0\r\n\r\n")
    assert _status(answer) == 200 and answer.startswith(b"HTTP/1.0 200")


def test_expect_100_continue_is_answered(gate_server: tuple[HTTPServer, Gate]) -> None:
    server, _ = gate_server
    with _connect(server.server_address[1]) as sock:
        sock.sendall(
            b"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n"
        )
        assert sock.recv(100).startswith(b"HTTP/1.1 100 Continue")
        sock.sendall(b"abc")
        assert sock.recv(4096).endswith(b"ok:abc")


# -- the connection bound -----------------------------------------------------------------------


def test_beyond_the_bound_the_oldest_waiting_connection_makes_room(
    gate_server: tuple[HTTPServer, Gate],
) -> None:
    server, _ = gate_server
    port = server.server_address[1]
    slow = [_connect(port) for _ in range(8)]  # the bound: 8, all still sending their request
    for sock in slow:
        sock.sendall(b"GET /x HTTP/1.1\r\n")
    # A ninth client while they are all new is refused: in a burst, no connection whose
    # request may be in flight is cut for the next one.
    assert _status(_exchange(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")) == 503
    assert server.stats.snapshot()[1] == {"over_capacity": 1}
    time.sleep(0.4)  # now they have waited longer than EVICT_AFTER
    # A client that sends its request at once is served...
    status, body = http("GET", f"http://127.0.0.1:{port}/healthz")
    assert (status, body) == (200, b"ok:")
    # ...and the oldest slow one was answered 503 and closed to make room for it.
    first = slow[0].recv(4096)
    assert _status(first) == 503 and b"Retry-After: 1" in first
    assert server.stats.snapshot()[1] == {"over_capacity": 1, "evicted": 1}
    for sock in slow:
        sock.close()


def test_when_every_connection_is_being_served_a_new_one_gets_503() -> None:
    server, gate, thread = _start(max_queued=4)
    port = server.server_address[1]
    busy = [_connect(port) for _ in range(8)]
    try:
        for sock in busy:
            sock.sendall(b"GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
        for _ in range(4):  # four workers are in the handler, four requests queue
            assert gate.entered.acquire(timeout=5)
        time.sleep(0.1)
        answer = _exchange(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _status(answer) == 503 and b"Retry-After" in answer
        assert server.stats.snapshot()[1] == {"over_capacity": 1}
        gate.release.set()
        assert [_status(sock.recv(4096)) for sock in busy] == [200] * 8
    finally:
        gate.release.set()
        for sock in busy:
            sock.close()
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_a_full_worker_queue_answers_503(gate_server: tuple[HTTPServer, Gate]) -> None:
    server, gate = gate_server
    port = server.server_address[1]
    busy = [_connect(port) for _ in range(8)]
    for sock in busy:
        sock.sendall(b"GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
    for _ in range(4):
        assert gate.entered.acquire(timeout=5)
    time.sleep(0.1)
    gate.release.set()
    # Four in the workers and two queued were served; two more than that were refused.
    statuses = sorted(_status(sock.recv(4096)) for sock in busy)
    assert statuses == [200] * 6 + [503] * 2
    assert server.stats.snapshot()[1] == {"queue_full": 2}
    for sock in busy:
        sock.close()


# -- streamed answers and clients that leave ----------------------------------------------------


def test_a_streamed_body_is_chunked_and_read_whole_by_urllib(
    gate_server: tuple[HTTPServer, Gate],
) -> None:
    server, _ = gate_server
    with urllib.request.urlopen(f"http://127.0.0.1:{server.server_address[1]}/stream") as resp:
        assert resp.headers["Transfer-Encoding"] == "chunked"
        assert len(resp.read()) == 400 * 65536


def test_a_client_that_leaves_mid_answer_is_one_counted_line(
    gate_server: tuple[HTTPServer, Gate], caplog: pytest.LogCaptureFixture
) -> None:
    server, _ = gate_server
    caplog.set_level(logging.INFO, logger="exporter.plumbing.httpd")
    for _ in range(3):
        sock = _connect(server.server_address[1])
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.recv(1000)
        # RST instead of FIN: the server's next write fails at once.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
        sock.close()
    deadline = time.monotonic() + 5
    while server.stats.snapshot()[2] < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.stats.snapshot()[2] == 3
    lines = [r for r in caplog.records if "disconnected" in r.getMessage()]
    assert 1 <= len(lines) <= 3  # at most one a second
    assert all(r.exc_info is None for r in caplog.records)  # no traceback
    # and the server still answers
    assert http("GET", f"http://127.0.0.1:{server.server_address[1]}/healthz")[0] == 200


# -- the exporter under a slow-client flood (scaled to loopback) ----------------------------


def test_metrics_and_probes_answer_while_slow_clients_flood_the_exporter(
    exporter_factory: Any,
) -> None:
    exp = exporter_factory(http_max_connections=64, http_read_timeout=3.0)
    port = int(exp.url.rsplit(":", 1)[1])
    threads_before = threading.active_count()
    slow: list[socket.socket] = []
    for i in range(300):  # many more than the bound, each sending a body a byte at a time
        sock = _connect(port)
        sock.sendall(
            b"POST /api/v1/namespaces/ml/runs/r%d/report HTTP/1.1\r\nHost: x\r\n"
            b"Content-Length: 1000\r\n\r\n{" % i
        )
        slow.append(sock)
    # A flood that lasts, not the first instant of a burst: once the server has taken in all
    # 300 (each beyond the bound evicted another or was refused), its connections wait past
    # EVICT_AFTER. A fixed pause instead raced a loaded machine still taking in the burst,
    # where a probe is refused by design (a connection in flight is not cut for the next).
    refused = ("evicted", "over_capacity", "client_over_capacity")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        rejected = exp.http_stats.snapshot()[1]
        if sum(rejected.get(reason, 0) for reason in refused) >= 300 - 64:
            break
        time.sleep(0.05)
    time.sleep(2 * EVICT_AFTER)
    worst = 0.0
    for path in ("/metrics", "/healthz", "/readyz", "/metrics"):
        started = time.monotonic()
        status, _ = http("GET", exp.url + path)
        worst = max(worst, time.monotonic() - started)
        assert status in (200, 503 if path == "/readyz" else 200)
    assert worst < 1.0
    assert threading.active_count() <= threads_before + 8  # no thread per connection
    assert exp.http_stats.snapshot()[0] <= 64
    rejected = exp.http_stats.snapshot()[1]
    assert sum(rejected.get(reason, 0) for reason in refused) >= 300 - 64
    for sock in slow:
        sock.close()
    # After they leave, /metrics answers at once and says what happened.
    status, body = http("GET", exp.url + "/metrics")
    assert status == 200
    assert b'training_exporter_http_rejected_total{reason="evicted"}' in body


def test_metrics_streams_to_http11_chunked_and_http10_until_close(exporter_factory: Any) -> None:
    exp = exporter_factory()
    port = int(exp.url.rsplit(":", 1)[1])
    body = b'{"step": 3, "max_steps": 10}'
    assert http("POST", exp.url + "/api/v1/namespaces/ml/runs/r/report", body)[0] == 200
    with urllib.request.urlopen(exp.url + "/metrics") as resp:
        chunked = resp.read()
        assert resp.headers["Transfer-Encoding"] == "chunked"
    answer = _exchange(port, b"GET /metrics HTTP/1.0\r\n\r\n")
    head, _, plain = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200") and b"Connection: close" in head
    assert b"Transfer-Encoding" not in head and b"Content-Length" not in head

    # The same series either way (the self metrics' values may differ between scrapes).
    def series(text: bytes) -> set[bytes]:
        return {
            line.split(b" ")[0] for line in text.splitlines() if line.startswith(b"training_step")
        }

    expected = {b'training_step{job_name="r",namespace="ml",pod="r"}'}
    assert series(chunked) == series(plain) == expected
    head_only = _exchange(port, b"HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert head_only.startswith(b"HTTP/1.1 200") and head_only.endswith(b"\r\n\r\n")


@pytest.mark.slow
def test_clients_that_do_not_read_cannot_pile_answers_up() -> None:
    """Six clients ask for an 8 MiB view and never read it: at most ``max_views`` answers
    exist at once, each is cut at ``response_timeout``, and probes answer throughout."""
    server, gate, thread = _start(max_views=2, response_timeout=1.0, write_timeout=0.5)
    port = server.server_address[1]
    stuck = []
    try:
        for _ in range(6):
            sock = _connect(port)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
            stuck.append(sock)
        time.sleep(0.3)
        assert gate.big_made == 2  # the other four wait their turn, holding nothing
        assert http("GET", f"http://127.0.0.1:{port}/healthz")[0] == 200
        deadline = time.monotonic() + 10
        while gate.big_made < 6 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert gate.big_made == 6
        rejected = server.stats.snapshot()[1]
        cut = rejected.get("write_timeout", 0) + rejected.get("response_timeout", 0)
        assert cut >= 4
    finally:
        for sock in stuck:
            sock.close()
        server.shutdown()
        server.server_close()
        thread.join(5)
