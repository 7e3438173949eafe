"""A fault-injecting HTTP proxy on loopback, between our S3 clients and the moto server.

Each request is classed (snapshot PUT, manifest PUT, data PUT, data or metadata GET, ranged or
whole, HEAD, LIST, DELETE) and may be given a fault: 503 SlowDown, 500 before or after the
write, a connection reset before the request or after the write, a truncated body, latency.
Rules target one class at a time (the n-th matching request, every one, or a probability), so a
test can say "lose the response of the first snapshot PUT". The proxy forwards bytes as they
came (the Host header too, so signatures stay valid), listens on 127.0.0.1 only, serves at most
`max_requests` requests and stops by itself after `lifetime_s`.
"""

from __future__ import annotations

import http.client
import random
import re
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

SNAPSHOT_PUT = "snapshot-put"
HINT_PUT = "hint-put"
MANIFEST_PUT = "manifest-put"
DATA_PUT = "data-put"
DATA_GET = "data-get"
METADATA_GET = "metadata-get"
HEAD = "head"
LIST = "list"
DELETE = "delete"
OTHER = "other"
CLASSES = (
    SNAPSHOT_PUT,
    HINT_PUT,
    MANIFEST_PUT,
    DATA_PUT,
    DATA_GET,
    METADATA_GET,
    HEAD,
    LIST,
    DELETE,
    OTHER,
)

SLOW_DOWN = "503-slowdown"
ERROR_BEFORE = "500-before-write"
ERROR_AFTER = "500-after-write"
RESET_BEFORE = "reset-before-request"
RESET_AFTER = "reset-after-write"
TRUNCATED = "truncated-body"
LATENCY = "latency"
FAULTS = (SLOW_DOWN, ERROR_BEFORE, ERROR_AFTER, RESET_BEFORE, RESET_AFTER, TRUNCATED, LATENCY)
# the faults that fail a request (latency only slows it)
FAILING = FAULTS[:-1]
# faults after which the server has done the request, though the client cannot know
LANDING_FAULTS = (ERROR_AFTER, RESET_AFTER, TRUNCATED, LATENCY)

_METADATA_DIRS = ("/snapshot/", "/manifest/", "/schema/", "/tag/", "/consumer/", "/changelog/")
_HINTS = re.compile(r"/(snapshot|changelog)/(EARLIEST|LATEST)$")
_SNAPSHOT = re.compile(r"/snapshot/snapshot-\d+$")
_ERROR_BODY = (
    '<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
    "<Message>{message}</Message><Resource>{path}</Resource>"
    "<RequestId>faultproxy</RequestId></Error>"
)


def request_class(method: str, path: str, query: str) -> str:
    """What kind of request this is, by method, key and query."""
    parts = path.lstrip("/").split("/", 1)
    key = "/" + parts[1] if len(parts) > 1 else ""
    if method == "DELETE" or (method == "POST" and "delete" in query.split("&")):
        return DELETE
    if method == "GET" and (not key or "list-type" in query or "prefix=" in query):
        return LIST
    if method == "HEAD":
        return HEAD
    if method in ("PUT", "POST"):
        if _SNAPSHOT.search(key):
            return SNAPSHOT_PUT
        if _HINTS.search(key):
            return HINT_PUT
        if "/manifest/" in key:
            return MANIFEST_PUT
        return DATA_PUT if key else OTHER
    if method == "GET":
        return METADATA_GET if any(d in key for d in _METADATA_DIRS) else DATA_GET
    return OTHER


@dataclass
class Rule:
    """Give `fault` to requests of `klass` (None: any class) that match the filters.

    `nth`: only the n-th matching request (1-based); `count`: at most this many faults;
    `probability`: each matching request with this chance; `ranged`: only (not) ranged GETs;
    `key`: a regular expression the key must match.
    """

    fault: str
    klass: str | None = None
    nth: int | None = None
    count: int | None = None
    probability: float = 1.0
    ranged: bool | None = None
    key: str | None = None
    latency_s: float = 0.5
    seen: int = 0
    fired: int = 0

    def applies(self, klass: str, path: str, ranged: bool, rng: random.Random) -> bool:
        """Whether this request gets the fault; counts the match either way."""
        if self.klass is not None and klass != self.klass:
            return False
        if self.ranged is not None and ranged != self.ranged:
            return False
        if self.key is not None and not re.search(self.key, path):
            return False
        self.seen += 1
        if self.nth is not None and self.seen != self.nth:
            return False
        if self.count is not None and self.fired >= self.count:
            return False
        if self.probability < 1.0 and rng.random() >= self.probability:
            return False
        self.fired += 1
        return True


@dataclass
class Log:
    """What passed through: (class, method, path, fault or None) per request."""

    entries: list[tuple[str, str, str, str | None]] = field(default_factory=list)

    def faults(self) -> Counter[tuple[str, str]]:
        """(class, fault) counts of the faults given."""
        return Counter((c, f) for c, _, _, f in self.entries if f)

    def count(self, klass: str) -> int:
        """Requests of one class."""
        return sum(1 for c, *_ in self.entries if c == klass)


class FaultProxy:
    """The proxy's state: where it forwards, its rules, its log; rules change while it runs."""

    def __init__(self, upstream: str, *, seed: int = 0, max_requests: int = 200_000):
        parsed = urlparse(upstream)
        self.upstream = (parsed.hostname or "127.0.0.1", parsed.port or 80)
        self.rules: list[Rule] = []
        self.log = Log()
        self.rng = random.Random(seed)
        self.max_requests = max_requests
        self.lock = threading.Lock()
        self.endpoint = ""

    def add(self, rule: Rule) -> Rule:
        """Start giving a fault; returns the rule so a test can read its counters."""
        with self.lock:
            self.rules.append(rule)
        return rule

    def clear(self) -> None:
        """No more faults."""
        with self.lock:
            self.rules.clear()

    def choose(self, method: str, path: str, query: str, ranged: bool) -> tuple[str, Rule | None]:
        """The request's class and the first rule that fires on it."""
        klass = request_class(method, path, query)
        with self.lock:
            if len(self.log.entries) >= self.max_requests:
                raise RuntimeError("the fault proxy served its maximum number of requests")
            fired = next((r for r in self.rules if r.applies(klass, path, ranged, self.rng)), None)
            self.log.entries.append((klass, method, path, fired.fault if fired else None))
        return klass, fired


def _reset(sock: socket.socket) -> None:
    """Close with RST (SO_LINGER 0), as a dropped connection looks to the client."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class _Handler(BaseHTTPRequestHandler):
    """Forward one request, giving it the fault the proxy chose."""

    protocol_version = "HTTP/1.1"
    # headers and body go out as separate writes: with Nagle's algorithm each answer would wait
    # for the client's delayed ACK (40 ms)
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the proxy's log is its Log."""

    def _body(self) -> bytes:
        """The request body as it came, Content-Length or chunked."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = b""
            while True:
                size_line = self.rfile.readline()
                raw += size_line
                size = int(size_line.split(b";")[0].strip(), 16)
                chunk = self.rfile.read(size + 2)
                raw += chunk
                if size == 0:
                    while chunk not in (b"\r\n", b""):
                        chunk = self.rfile.readline()
                        raw += chunk
                    return raw
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _error(self, status: int, code: str, message: str) -> None:
        """An S3 XML error response."""
        body = _ERROR_BODY.format(code=code, message=message, path=self.path).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _forward(self, body: bytes) -> tuple[int, str, list[tuple[str, str]], bytes]:
        """The upstream's response to the request, read whole."""
        proxy = self.server.proxy
        conn = http.client.HTTPConnection(*proxy.upstream, timeout=60)
        try:
            conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():
                if name.lower() not in ("connection", "expect"):
                    conn.putheader(name, value)
            conn.endheaders(body if body else None)
            response = conn.getresponse()
            data = response.read()
            return response.status, response.reason, response.getheaders(), data
        finally:
            conn.close()

    def _handle(self) -> None:
        """Read, choose a fault, forward (or not), answer (or not)."""
        parsed = urlparse(self.path)
        ranged = "Range" in self.headers
        _, rule = self.server.proxy.choose(self.command, parsed.path, parsed.query, ranged)
        fault = rule.fault if rule else None
        body = self._body()
        if fault == RESET_BEFORE:
            self.close_connection = True
            _reset(self.connection)
            return
        if fault == SLOW_DOWN:
            self._error(503, "SlowDown", "Please reduce your request rate.")
            return
        if fault == ERROR_BEFORE:
            self._error(500, "InternalError", "We encountered an internal error.")
            return
        if fault == LATENCY:
            time.sleep(rule.latency_s)
        status, reason, headers, data = self._forward(body)
        if fault == ERROR_AFTER:
            self._error(500, "InternalError", "We encountered an internal error.")
            return
        if fault == RESET_AFTER:
            self.close_connection = True
            _reset(self.connection)
            return
        self.send_response(status, reason)
        for name, value in headers:
            if name.lower() not in ("connection", "transfer-encoding", "date", "server"):
                self.send_header(name, value)
        if not any(n.lower() == "content-length" for n, _ in headers):
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command == "HEAD":
            return
        if fault == TRUNCATED and data:
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            _reset(self.connection)
            return
        self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle


class _Server(ThreadingHTTPServer):
    """A threading server that knows its proxy."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, proxy: FaultProxy):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.proxy = proxy

    def handle_error(self, request: object, client_address: object) -> None:
        """A client hanging up on a fault is expected; say nothing."""


@contextmanager
def fault_proxy(upstream: str, *, seed: int = 0, lifetime_s: float = 900) -> Iterator[FaultProxy]:
    """A running proxy in front of `upstream`; it stops on exit or after `lifetime_s`."""
    proxy = FaultProxy(upstream, seed=seed)
    server = _Server(proxy)
    proxy.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="fault-proxy", daemon=True)
    thread.start()
    timer = threading.Timer(lifetime_s, server.shutdown)
    timer.daemon = True
    timer.start()
    try:
        yield proxy
    finally:
        timer.cancel()
        server.shutdown()
        server.server_close()


def main() -> None:
    """Serve as a process of its own (benchmarks: no GIL shared with the code measured): every
    request gets one of the failing faults with probability --rate; on SIGTERM it prints the
    number of requests and faults as JSON."""
    import argparse
    import json
    import signal
    import sys

    parser = argparse.ArgumentParser()
    parser.add_argument("upstream")
    parser.add_argument("--rate", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with fault_proxy(args.upstream, seed=args.seed, lifetime_s=3600) as proxy:
        for fault in FAILING if args.rate else ():
            proxy.add(Rule(fault, probability=args.rate / len(FAILING)))
        print(proxy.endpoint, flush=True)
        stop.wait(3600)
        faults = sum(proxy.log.faults().values())
        print(json.dumps({"requests": len(proxy.log.entries), "faults": faults}), flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
