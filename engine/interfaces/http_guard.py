"""What the HTTP service checks before a request reaches FastAPI, and before it binds.

- ``check_exposure``: ``tollgate serve`` on a non-loopback address needs an API token
  (closed by default); the settings already refuse an empty token.
- ``BodyGuard`` (ASGI middleware) for requests with a body: a JSON ``Content-Type`` or
  415; a ``Content-Length`` that is a number (400) within ``max_bytes`` (413); the body
  read whole within ``timeout_s`` (408), cut off as soon as it passes ``max_bytes``
  (413) however it is framed; valid UTF-8 or 400 naming the byte; then handed to the
  app as one message.

>>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("localhost"), is_loopback("0.0.0.0")
(True, True, True, False)
>>> json_content_type("application/json; charset=utf-8"), json_content_type("text/plain")
(True, False)
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from collections.abc import Awaitable, Callable
from typing import Any

from engine.settings import HttpSettings

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class InsecureExposure(ValueError):
    """The service would listen beyond this host without a token."""


def is_loopback(host: str) -> bool:
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def check_exposure(host: str, http: HttpSettings) -> None:
    """Raise ``InsecureExposure`` when ``host`` is not loopback and no token is set."""
    if http.api_token is None and not is_loopback(host):
        raise InsecureExposure(
            f"refusing to serve on {host} without an API token: anyone who reaches it could score events. "
            "Set TOLLGATE_HTTP__API_TOKEN (callers send Authorization: Bearer <token>), or bind 127.0.0.1 "
            "(docs/security.md)")


def json_content_type(value: str | None) -> bool:
    """``application/json``, optionally with ``charset=utf-8`` (JSON is UTF-8 by RFC 8259)."""
    if not value:
        return False
    media, _, params = value.partition(";")
    if media.strip().lower() != "application/json":
        return False
    for param in params.split(";"):
        name, _, val = param.partition("=")
        if name.strip().lower() == "charset" and val.strip().strip('"').lower() not in ("utf-8", "utf8"):
            return False
    return True


async def _respond(send: Send, status: int, detail: str, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": body})


class BodyGuard:
    """ASGI middleware: content type, size and read timeout of request bodies."""

    METHODS = frozenset({"POST", "PUT", "PATCH"})

    def __init__(self, app: ASGIApp, max_bytes: int, timeout_s: float):
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in self.METHODS:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        content_type = headers.get("content-type")
        if not json_content_type(content_type):
            got = f"Content-Type {content_type!r}" if content_type else "no Content-Type"
            await _respond(send, 415, f"the body must be JSON: send Content-Type: application/json (got {got})")
            return
        declared = headers.get("content-length")
        if declared is not None:
            if not declared.isdigit():
                await _respond(send, 400, "Content-Length is not a number")
                return
            if int(declared) > self.max_bytes:
                await _respond(send, 413, f"request body larger than {self.max_bytes} bytes")
                return
        try:
            body = await asyncio.wait_for(self._read(receive), self.timeout_s)
        except TimeoutError:
            await _respond(send, 408, f"the request body did not arrive whole within {self.timeout_s:g} s",
                           headers=((b"connection", b"close"),))
            return
        except _TooLarge:
            await _respond(send, 413, f"request body larger than {self.max_bytes} bytes")
            return
        except _Disconnected:
            return
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            await _respond(send, 400, f"the body is not valid UTF-8: byte {exc.start + 1} ({body[exc.start:exc.start + 1]!r})"
                                      f" {exc.reason}")
            return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: only http.disconnect can come

        await self.app(scope, replay, send)

    async def _read(self, receive: Receive) -> bytes:
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Disconnected
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                raise _TooLarge
            parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts)


class _TooLarge(Exception):
    pass


class _Disconnected(Exception):
    pass


__all__ = ["BodyGuard", "InsecureExposure", "check_exposure", "is_loopback", "json_content_type"]
