"""HTTP/1.1 framing on asyncio: bounded connections, read deadlines, streamed bodies.

Why not ``http.server``: it spends one thread per connection for as long as the client
likes. 9,000 clients sending a byte a second held 9,000 threads (318 MiB) and starved
``/metrics``. Here a connection that is still sending its request costs a few kilobytes on
one event loop, and only complete requests reach a worker thread:

* at most ``max_connections`` connections; a new one beyond that closes the connection that
  has waited longest for its request (answered 503), or gets 503 itself when every
  connection is being served, so a scraper that sends its request at once is always served;
* the request head must arrive within ``header_timeout`` and the body within
  ``body_timeout``; an idle keep-alive connection is closed after ``idle_timeout``;
* requests run in two small thread pools (``scrape`` for the views, ``push`` for reports),
  each with a bounded queue (503 beyond it), so heavy scrapes never hold up pushes and six
  concurrent scrapes never render six times in parallel;
* a streamed response (``/metrics``) is produced chunk by chunk in its worker and written
  with backpressure, so a body is never held whole in memory;
* a client that goes away is one counted line, not a traceback.

What each path answers is not decided here: :class:`HTTPServer` calls ``handler``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from email.utils import formatdate
from typing import Any

from .httpmessages import (
    ConnectionLimits,
    HttpError,
    Request,
    Response,
    content_length,
    parse_head,
    response_head,
)

log = logging.getLogger(__name__)

POOL_SCRAPE = "scrape"
POOL_PUSH = "push"
POOL_FORWARD = "forward"  # pushes that wait on another server: apart, so they hold no other
POOL_INLINE = "inline"  # answered on the event loop: must be cheap and never block
# Connections the kernel queues until they are accepted (asyncio would set 100; a burst of
# clients beyond the queue waits a second for its SYN to be retried).
BACKLOG = 1024
LINGER_SECONDS = 1.0  # how long a refused client's request bytes are read and discarded
# A connection may be closed to make room for a new one once it has waited this long for
# its request (a scraper's request arrives within milliseconds).
EVICT_AFTER = 0.25
WRITE_PIECE = 256 * 1024  # a large answer is handed to the transport this much at a time


class HTTPStats:
    """Connection counters, read by the self-metrics collector. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.open = 0
        self.rejected: dict[str, int] = {}
        self.disconnects = 0
        self._last_log = 0.0
        self._unlogged = 0

    def reject(self, reason: str) -> None:
        with self._lock:
            self.rejected[reason] = self.rejected.get(reason, 0) + 1

    def disconnected(self, client: str, during: str) -> None:
        """Count a client that went away, and log it: one line, at most one a second (the
        line says how many more there were)."""
        now = time.monotonic()
        with self._lock:
            self.disconnects += 1
            if now - self._last_log < 1.0:
                self._unlogged += 1
                return
            more, self._unlogged, self._last_log = self._unlogged, 0, now
        extra = f" ({more} more since the last such line)" if more else ""
        log.info("client %s disconnected during %s%s", client, during, extra)

    def snapshot(self) -> tuple[int, dict[str, int], int]:
        with self._lock:
            return self.open, dict(self.rejected), self.disconnects


class _Conn:
    """A connection's bookkeeping: evictable while it waits for a request."""

    __slots__ = ("client", "evicted", "reader", "since", "task", "waiting", "writer")

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        task: asyncio.Task[None] | None,
        client: str,
        now: float,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.task = task
        self.client = client
        self.since = now
        self.waiting = True
        self.evicted = False


class HTTPServer:
    """An HTTP/1.1 server on its own event loop; the API mirrors ``socketserver``'s
    (``server_address``, ``serve_forever``, ``shutdown``, ``server_close``).

    ``handler`` answers a complete request and runs in the pool ``pool_of(request)`` names.
    """

    def __init__(
        self,
        host: str,
        port: int,
        handler: Callable[[Request], Response],
        pool_of: Callable[[Request], str],
        limits: ConnectionLimits | None = None,
        stats: HTTPStats | None = None,
        server_name: str = "training-progress-exporter",
    ) -> None:
        self.limits = limits or ConnectionLimits()
        self.stats = stats or HTTPStats()
        self.handler = handler
        self.pool_of = pool_of
        self.server_name = server_name
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.create_server((host, port), family=family, backlog=BACKLOG)
        self.server_address: tuple[str, int] = self.socket.getsockname()[:2]
        self._workers = {
            POOL_SCRAPE: self.limits.scrape_workers,
            POOL_PUSH: self.limits.push_workers,
            POOL_FORWARD: self.limits.forward_workers,
        }
        self._pools = {
            name: ThreadPoolExecutor(workers, f"http-{name}")
            for name, workers in self._workers.items()
        }
        self._queued = dict.fromkeys(self._pools, 0)  # in a worker or waiting for one
        self._views = asyncio.Semaphore(self.limits.max_views)
        # client address -> [its view semaphore, how many of its requests use it]
        self._per_client_views: dict[str, list[Any]] = {}
        self._conns: dict[_Conn, None] = {}  # insertion-ordered: oldest first
        self._tasks: set[asyncio.Task[None]] = set()  # connection tasks, cancelled at stop
        self._lingering = 0  # closed connections whose last bytes are being discarded
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._stopped = threading.Event()
        self._stopped.set()

    # -- lifecycle ---------------------------------------------------------------------------

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Serve until :meth:`shutdown` (``poll_interval`` is accepted for compatibility)."""
        self._stopped.clear()
        try:
            asyncio.run(self._serve())
        finally:
            self._stopped.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(
            self._connection, sock=self.socket, limit=self.limits.max_line_bytes, backlog=BACKLOG
        )
        async with server:
            await self._stop.wait()
            server.close()
            for conn in list(self._conns):
                conn.writer.transport.abort()
            tasks = [t for t in self._tasks if not t.done()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for pool in self._pools.values():
            pool.shutdown(wait=False, cancel_futures=True)

    def shutdown(self) -> None:
        """Stop serving and wait until :meth:`serve_forever` has returned."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed in the meantime
                loop.call_soon_threadsafe(stop.set)
        self._stopped.wait(10)

    def server_close(self) -> None:
        self.socket.close()

    # -- connections ---------------------------------------------------------------------------

    def _admit(self, conn: _Conn) -> bool:
        """Make room for ``conn``: evict the oldest connection that has waited at least
        :data:`EVICT_AFTER` for its request, or refuse ``conn`` when there is none (every
        connection is being served, or is new: in a burst, a client whose request is in
        flight is not cut in favour of the next one)."""
        oldest = conn.since - EVICT_AFTER
        mine = [c for c in self._conns if c.client == conn.client]
        if len(mine) >= self.limits.max_connections_per_client:
            # This address is at its share: it makes room among its own, or waits.
            return self._evict(
                mine, oldest, "client_over_capacity", "too many connections from this address"
            )
        if len(self._conns) < self.limits.max_connections:
            return True
        return self._evict(
            self._conns,
            oldest,
            "over_capacity",
            "server busy: connection limit reached, oldest request closed",
        )

    def _evict(self, among: Iterable[_Conn], oldest: float, refused: str, told: str) -> bool:
        """Close the first of ``among`` still waiting for its request since ``oldest`` or
        before, telling it ``told`` (503); False, counted as ``refused``, when none is."""
        victim = next((c for c in among if c.waiting and c.since <= oldest), None)
        if victim is None:
            self.stats.reject(refused)
            return False
        self.stats.reject("evicted")
        self._drop(victim, 503, told)
        return True

    def _drop(self, conn: _Conn, status: int, message: str) -> None:
        """Answer ``conn`` (still waiting for its request) and end it: its task is cancelled
        and closes the connection on the way out."""
        conn.evicted = True
        self._conns.pop(conn, None)
        self._write_error(conn.writer, status, message, "1.1")
        if conn.task is not None:
            conn.task.cancel()

    def _close_after_answer(self, conn: _Conn) -> None:
        """Close once the answer is out. Closing a socket with unread request bytes would
        send a reset that can destroy the answer before the client reads it, so the
        connection is half-closed and the client's bytes discarded for a moment first."""
        transport = conn.writer.transport
        if transport.is_closing():
            return
        if conn.reader.at_eof() or self._lingering >= self.limits.max_connections:
            # Nothing left unread (the client closed first), or a flood: no more lingering
            # connections than open ones.
            transport.close()
            return
        with contextlib.suppress(OSError, RuntimeError):
            if transport.can_write_eof():
                transport.write_eof()
        self._lingering += 1
        task = asyncio.get_running_loop().create_task(self._discard(conn.reader, transport))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _discard(
        self, reader: asyncio.StreamReader, transport: asyncio.BaseTransport
    ) -> None:
        try:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(LINGER_SECONDS):
                    while await reader.read(65536):
                        pass
            transport.close()
        finally:
            self._lingering -= 1

    def _write_error(
        self, writer: asyncio.StreamWriter, status: int, message: str, version: str
    ) -> None:
        body = (message + "\n").encode()
        headers = {
            "Server": self.server_name,
            "Date": formatdate(usegmt=True),
            "Content-Type": "text/plain; charset=utf-8",
            "Content-Length": str(len(body)),
            "Connection": "close",
        }
        if status == 503:
            headers["Retry-After"] = "1"
        with contextlib.suppress(ConnectionError, RuntimeError):
            writer.write(response_head(status, version, headers) + body)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        client = str(peer[0]) if peer else "?"
        task = asyncio.current_task()
        conn = _Conn(reader, writer, task, client, time.monotonic())
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        if not self._admit(conn):
            self._write_error(writer, 503, "server busy: connection limit reached", "1.1")
            self._close_after_answer(conn)
            return
        self._conns[conn] = None
        self.stats.open = len(self._conns)
        try:
            await self._serve_connection(conn)
        except asyncio.CancelledError:
            if not conn.evicted:
                raise  # shutting down
        except (ConnectionError, asyncio.IncompleteReadError):
            if not conn.evicted:
                self.stats.disconnected(client, "a request")
        except Exception:  # one connection never takes the server down
            log.exception("HTTP connection from %s failed", client)
        finally:
            self._conns.pop(conn, None)
            self.stats.open = len(self._conns)
            self._close_after_answer(conn)

    async def _serve_connection(self, conn: _Conn) -> None:
        first = True
        while not conn.evicted:
            conn.waiting, conn.since = True, time.monotonic()
            try:
                request = await self._read_request(conn, first)
            except HttpError as e:
                self.stats.reject(e.reason)
                self._write_error(conn.writer, e.status, str(e), "1.1")
                return
            if request is None or conn.evicted:  # clean close, deadline, or evicted
                return
            first = False
            conn.waiting = False
            keep = await self._respond(conn, request)
            if not keep:
                return

    async def _read_request(self, conn: _Conn, first: bool) -> Request | None:
        """The next request, or None when the client closed or missed a deadline."""
        limits = self.limits
        reader = conn.reader
        started = time.monotonic()
        # asyncio.timeout, not wait_for: wait_for wraps each read in a new task, and a
        # request is a dozen reads (this halved the CPU a push costs).
        try:
            # A reused connection may sit idle; a new one must send its request promptly.
            async with asyncio.timeout(limits.header_timeout if first else limits.idle_timeout):
                line = await reader.readline()
            if not line:
                return None
            if not first:
                started = time.monotonic()
            lines = [line]
            async with asyncio.timeout_at(
                asyncio.get_running_loop().time()
                + limits.header_timeout
                - (time.monotonic() - started)
            ):
                size = len(line)
                while True:
                    line = await reader.readline()
                    if not line.endswith(b"\n"):
                        return None  # the client closed mid-head
                    if line == b"\r\n":
                        break
                    if line == b"\n":
                        raise HttpError(400, "bad_line_end", "the head must end with CRLF")
                    lines.append(line)
                    size += len(line)
                    if len(lines) > limits.max_headers + 1:
                        raise HttpError(431, "too_many_headers", "too many header lines")
                    if size > limits.max_head_bytes:
                        raise HttpError(431, "head_too_large", "request head too large")
        except TimeoutError:
            self.stats.reject("header_timeout")
            return None
        except ValueError:  # a line over the StreamReader limit
            raise HttpError(431, "line_too_long", "request line or header too long") from None
        method, target, version, headers = parse_head(lines, limits)
        if "transfer-encoding" in headers:
            # Bodies here are small and clients send a length; refusing chunked bodies keeps
            # one framing rule (RFC 9112: a server may answer 411).
            raise HttpError(411, "length_required", "Content-Length is required")
        length = content_length(headers.get("content-length", []))
        flat = {k: v[-1] for k, v in headers.items()}
        if length > limits.max_body_bytes:
            return Request(method, target, version, flat, b"", conn.client, body_too_large=True)
        body = b""
        if length:
            if flat.get("expect", "").lower() == "100-continue":
                conn.writer.write(f"HTTP/{version} 100 Continue\r\n\r\n".encode())
            try:
                async with asyncio.timeout(limits.body_timeout):
                    body = await reader.readexactly(length)
            except TimeoutError:
                self.stats.reject("body_timeout")
                return None
        return Request(method, target, version, flat, body, conn.client)

    async def _respond(self, conn: _Conn, request: Request) -> bool:
        """Run the handler, send its answer; True if the connection may serve another.

        A view's answer can be megabytes: at most ``max_views`` are built or being sent at
        once (the others wait their turn, holding nothing), and each must be read within
        ``response_timeout``, so clients that do not read cannot pile answers up in memory.
        """
        pool = self.pool_of(request)
        if pool != POOL_SCRAPE:
            return await self._answer(conn, request, pool)
        # The address's own share first, then a server-wide slot: a client that asks for
        # views and does not read them holds at most its share.
        async with self._client_views(conn.client), self._views:
            try:
                async with asyncio.timeout(self.limits.response_timeout):
                    return await self._answer(conn, request, pool)
            except TimeoutError:
                self.stats.reject("response_timeout")
                conn.writer.transport.abort()
                return False

    @contextlib.asynccontextmanager
    async def _client_views(self, client: str) -> AsyncIterator[None]:
        """At most ``max_views_per_client`` views of one address at once; the semaphore is
        dropped when nobody of that address uses it."""
        entry = self._per_client_views.get(client)
        if entry is None:
            entry = [asyncio.Semaphore(self.limits.max_views_per_client), 0]
            self._per_client_views[client] = entry
        entry[1] += 1
        try:
            async with entry[0]:
                yield
        finally:
            entry[1] -= 1
            if entry[1] == 0:
                del self._per_client_views[client]

    async def _answer(self, conn: _Conn, request: Request, pool: str) -> bool:
        version = request.version
        connection = request.headers.get("connection", "").lower()
        keep = (version == "1.1" and "close" not in connection) or (
            version == "1.0" and "keep-alive" in connection
        )
        if request.body_too_large:
            keep = False  # the unread body is still on the wire
        try:
            response = await self._call(pool, request)
        except HttpError as e:
            self.stats.reject(e.reason)
            self._write_error(conn.writer, e.status, str(e), version)
            return False
        except Exception:  # a bug in a route answers 500; the server goes on
            log.exception("%s %s failed", request.method, request.path)
            self.stats.reject("handler_error")
            self._write_error(conn.writer, 500, "internal error (logged)", version)
            return False
        headers = {
            "Server": self.server_name,
            "Date": formatdate(usegmt=True),
            "Content-Type": response.content_type,
            **response.headers,
        }
        body = response.body
        stream = not isinstance(body, bytes)
        if not stream:
            assert isinstance(body, bytes)
            headers["Content-Length"] = str(len(body))
        elif version == "1.1":
            headers["Transfer-Encoding"] = "chunked"
        else:
            keep = False  # an HTTP/1.0 client reads a streamed body until the connection closes
        if not keep:
            headers["Connection"] = "close"
        elif version == "1.0":
            headers["Connection"] = "keep-alive"
        head = response_head(response.status, version, headers)
        writer = conn.writer
        if request.method == "HEAD":
            if stream:
                assert not isinstance(body, bytes)
                close = getattr(body, "close", None)
                if close is not None:
                    close()
            writer.write(head)
            await self._drain(conn, "a response")
            return keep
        if not stream:
            assert isinstance(body, bytes)
            if len(body) <= WRITE_PIECE:
                writer.write(head + body)
                return await self._drain(conn, "a response") and keep
            writer.write(head)
            view = memoryview(body)
            for lo in range(0, len(body), WRITE_PIECE):  # the transport holds one piece
                writer.write(view[lo : lo + WRITE_PIECE])
                if not await self._drain(conn, "a response"):
                    return False
            return keep
        assert not isinstance(body, bytes)
        writer.write(head)
        return await self._stream(conn, pool, body, chunked=version == "1.1") and keep

    async def _call(self, pool: str, request: Request) -> Response:
        if pool == POOL_INLINE:
            return self.handler(request)
        if self._queued[pool] >= self._workers[pool] + self.limits.max_queued:
            raise HttpError(503, "queue_full", f"server busy: {pool} queue full")
        self._queued[pool] += 1
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._pools[pool], self.handler, request)
        finally:
            self._queued[pool] -= 1

    async def _stream(self, conn: _Conn, pool: str, chunks: Iterator[bytes], chunked: bool) -> bool:
        """Send ``chunks`` as they are produced (each produced in the worker pool)."""
        loop = asyncio.get_running_loop()
        executor = self._pools.get(pool)
        try:
            while True:
                chunk = await loop.run_in_executor(executor, next, chunks, None)
                if chunk is None:
                    break
                if not chunk:
                    continue
                if chunked:
                    conn.writer.write(b"%x\r\n%b\r\n" % (len(chunk), chunk))
                else:
                    conn.writer.write(chunk)
                if not await self._drain(conn, "a streamed response"):
                    return False
            if chunked:
                conn.writer.write(b"0\r\n\r\n")
            return await self._drain(conn, "a streamed response")
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                await loop.run_in_executor(executor, close)

    async def _drain(self, conn: _Conn, during: str) -> bool:
        """Wait until the client took what was written; False (and counted) if it left or
        stopped reading for ``write_timeout``."""
        try:
            if conn.writer.transport.get_write_buffer_size():
                async with asyncio.timeout(self.limits.write_timeout):
                    await conn.writer.drain()
            elif conn.writer.transport.is_closing():
                raise ConnectionResetError("closed")
            return True
        except TimeoutError:
            self.stats.reject("write_timeout")
            conn.writer.transport.abort()
            return False
        except ConnectionError:
            self.stats.disconnected(conn.client, during)
            conn.evicted = True  # counted here; not again on the way out
            return False


def serve_in_thread(server: HTTPServer) -> threading.Thread:
    """Run ``server`` on a daemon thread and return the thread."""
    thread = threading.Thread(target=server.serve_forever, name="http-server", daemon=True)
    thread.start()
    return thread
