"""The requests of one connection to `s3bulk serve`, read with llhttp (httptools' HttpRequestParser,
the parser under uvloop and Node.js) instead of by hand.

A hand-written reader split requests at the first blank line, so a GET carrying a body had its body
read as the next request (and the real next request answered as garbage), and a head over its
buffer's limit was cut off with a reset. llhttp knows where every request ends: Content-Length and
chunked bodies are read past (and dropped: no request here needs one), pipelined requests come out
one by one in order, and keep-alive follows the version and the Connection header.

What llhttp does not bound, this does, so that a client can make a server process hold only so much:

- a head (request line and fields) over MAX_HEAD bytes, or with more than MAX_FIELDS fields: 431;
- a request target over MAX_TARGET bytes: 414;
- a request llhttp cannot parse: 400 (501 when it is a well-formed request line whose method
  llhttp does not know, if that line began the read; 505 for a version other than 1.x).

A refusal is the last thing read from a connection: llhttp cannot go on after an error, and the
server closes after answering it. A field is handed over by httptools only once complete, so a
field that never ends is bounded here by counting the bytes of every read that leaves the head
still open: the parser holds at most one read beyond MAX_HEAD.
"""

from __future__ import annotations

import re
from typing import Callable

import httptools

MAX_HEAD = 64 * 1024     # bytes of request line and fields together (nginx's default is 8-32 KiB)
MAX_FIELDS = 100         # header fields in one request (Node.js's default is 2000, Go's none: 1 MiB)
MAX_TARGET = 16 * 1024   # bytes of the request target: a 4 KiB path percent-encoded is 12 KiB

KEEP, CLOSE, KEEP_ALIVE = 0, 1, 2  # what to do after the answer: stay open; close; stay open, saying so (HTTP/1.0)

# a request line whose method is a token llhttp does not know (RFC 9110 5.6.2, 9112 3)
_UNKNOWN_METHOD = re.compile(rb"(?:\r\n)*[!#$%&'*+.^_`|~0-9A-Za-z-]+ [^ \r\n]+ HTTP/1\.[01]\r\n")


class _Refused(Exception):
    """Raised from a parser callback to stop llhttp at a limit."""

    def __init__(self, status: int, message: bytes) -> None:
        super().__init__(status)
        self.status, self.message = status, message


OnRequest = Callable[[bytes, bytes, "bytes | None", int], None]
OnRefusal = Callable[[int, bytes], None]


class RequestReader:
    """Feeds a connection's bytes to llhttp and hands out what it finds, in order: each complete
    request as on_request(method, target, range header or None, KEEP/CLOSE/KEEP_ALIVE), and at most
    one refusal as on_refusal(status, one-line message), after which nothing more is read. A request
    to close (Connection: close, HTTP/1.0, an Upgrade ignored) also ends the reading.

    Only the fields the server uses are kept (Range, Connection, Upgrade): the others are counted
    and dropped, so a request costs a few Python calls beyond llhttp's C."""

    __slots__ = ("parser", "on_request", "on_refusal", "stopped", "target", "size", "fields", "range",
                 "keep_alive", "upgrade", "in_head", "idle", "begun", "pending")

    def __init__(self, on_request: OnRequest, on_refusal: OnRefusal) -> None:
        self.parser = httptools.HttpRequestParser(self)
        self.on_request, self.on_refusal = on_request, on_refusal
        self.stopped = False  # a refusal or a closing request was handed out: the rest is not read
        self.target = b""
        self.size = self.fields = 0
        self.range: bytes | None = None
        self.keep_alive = self.upgrade = False  # the request asked for keep-alive / an upgrade
        self.in_head = False  # a request began and its head is not complete yet
        self.idle = True  # between requests (not in a head or a body)
        self.begun = 0  # requests begun, to tell whether a read started a new one
        self.pending = 0  # bytes of the open head in reads that neither began nor completed it

    def feed(self, data: bytes) -> None:
        """Read `data`; every request and refusal it completes is handed out before this returns."""
        if self.stopped:
            return  # after a refusal or a close the server only drains what the client still sends
        in_head, idle, begun = self.in_head, self.idle, self.begun
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            cause = exc.__context__
            if not isinstance(cause, _Refused):
                raise (cause or exc)  # the server's own callback failed: not the client's doing
            self.refuse(cause.status, cause.message)
        except httptools.HttpParserInvalidMethodError:
            if not self.stopped:
                # llhttp knows methods by name, so "BREW / HTTP/1.1" and garbage fail alike; a request
                # line that is well formed but for its method is told 501, when the read began with it
                if idle and self.begun == begun + 1 and _UNKNOWN_METHOD.match(data):
                    self.refuse(501, b"method not implemented\n")
                else:
                    self.refuse(400, b"malformed request line\n")
        except httptools.HttpParserError as exc:
            if not self.stopped:  # (bytes after a closing request are an error to llhttp: not read)
                self.refuse(400, f"malformed request: {exc}\n".encode())
        except httptools.HttpParserUpgrade:
            pass  # the upgrade was not made: that request was answered with a close, nothing more is read
        else:
            if self.in_head and in_head and self.begun == begun:
                # this whole read was inside one head: httptools holds a field until it is complete
                self.pending += len(data)
                if self.pending > MAX_HEAD:
                    self.refuse(431, b"request head too large\n")

    def refuse(self, status: int, message: bytes) -> None:
        """Hand out a refusal and read no more."""
        if not self.stopped:
            self.stopped = True
            self.on_refusal(status, message)

    def stop(self) -> None:
        """Read no more (the server is closing the connection)."""
        self.stopped = True

    # llhttp's callbacks (httptools looks them up by name)

    def on_message_begin(self) -> None:
        self.target = b""
        self.size = self.fields = self.pending = 0
        self.range = None
        self.keep_alive = self.upgrade = self.idle = False
        self.in_head = True
        self.begun += 1

    def on_url(self, piece: bytes) -> None:  # the target, in as many pieces as it arrived in reads
        self.target += piece
        if len(self.target) > MAX_TARGET:
            raise _Refused(414, b"request target too long\n")
        self.size += len(piece)

    def on_header(self, name: bytes, value: bytes) -> None:
        self.fields += 1
        self.size += len(name) + len(value) + 4
        if self.size > MAX_HEAD or self.fields > MAX_FIELDS:
            raise _Refused(431, b"request head too large\n" if self.size > MAX_HEAD else b"too many header fields\n")
        n = len(name)
        if n == 5:
            if name.lower() == b"range":
                self.range = value
        elif n == 10:
            if name.lower() == b"connection" and b"keep-alive" in value.lower():
                self.keep_alive = True
        elif n == 7 and name.lower() == b"upgrade":
            self.upgrade = True

    def on_headers_complete(self) -> None:
        self.in_head = False

    def on_message_complete(self) -> None:
        self.idle = True
        if self.stopped:  # the server closed while llhttp was still reading this read
            return
        parser = self.parser
        method = parser.get_method()
        if parser.should_keep_alive():
            conn = KEEP_ALIVE if self.keep_alive else KEEP
            if self.upgrade or method == b"CONNECT":
                conn = CLOSE  # not switched to: llhttp reads nothing after an upgrade or CONNECT
        else:
            if not parser.get_http_version().startswith("1."):
                raise _Refused(505, b"HTTP version not supported\n")
            conn = CLOSE
        if conn == CLOSE:
            self.stopped = True
        self.on_request(method, self.target, self.range, conn)
