"""The workbench serves person-level data: who may talk to it (:class:`Guard`).

Every request passes four checks, in this order, before any page or API code runs:

1. **Host** (DNS rebinding): the ``Host`` header must name the address the server is bound to
   (``127.0.0.1:PORT``, or ``localhost:PORT`` for a loopback address); a page of another site
   whose name was re-pointed at 127.0.0.1 sends its own name and gets 403.
2. **Session token**: a random token (``secrets.token_urlsafe(32)``) is printed in the one URL
   the command prints. The first request carrying ``?token=T`` sets an ``HttpOnly``,
   ``SameSite=Strict`` cookie and is redirected to the same address without the token (so it
   stays out of the history; the redirect stays on this server: :func:`local_path`); from then
   on the cookie is required (or, for scripts, the header ``Authorization: Bearer T``).
   Without it: 403. Tokens are compared in constant time.
3. **Origin** (CSRF): a request that changes state (POST, PUT, PATCH, DELETE) with an
   ``Origin`` (or, without one, a ``Referer``) of another origin gets 403.
4. **Headers of every answer**: a Content-Security-Policy allowing only the server's own
   scripts, styles and images (no inline script, nothing fetched elsewhere), ``nosniff``,
   ``Referrer-Policy: same-origin`` (with ``no-referrer`` a browser sends ``Origin: null`` on
   its own forms), ``no-store`` and framing by the server itself only.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "safeshare_ui"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-src 'self'; frame-ancestors 'self'; base-uri 'none'"
)
#: report.html (the release's own report, with its inline style) is shown under this policy
REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def local_path(path: str) -> str:
    """``path`` as the target of a redirect that stays on this server: one leading ``/`` (a
    browser reads ``//evil.example`` or ``/\\evil.example`` as another host: an open redirect
    once the token link was ``http://127.0.0.1:PORT//evil.example?token=T``), backslashes and
    control characters percent-encoded."""
    trimmed = "/" + path.lstrip("/\\")
    return quote(trimmed, safe="/-._~!$&'()*+,;=:@")


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    """The ``Host`` header values that name the bound address."""
    names = {host}
    if host in LOOPBACK:
        names |= {"127.0.0.1", "localhost"}
    if ":" in host and not host.startswith("["):
        names.add(f"[{host}]")
    return frozenset(f"{name}:{port}" for name in names)


def origins(host: str, port: int) -> frozenset[str]:
    return frozenset(f"http://{h}" for h in allowed_hosts(host, port))


class Guard:
    """ASGI middleware applying the checks of the module docstring."""

    def __init__(self, app: ASGIApp, token: str, host: str, port: int) -> None:
        self.app = app
        self.token = token
        self.hosts = allowed_hosts(host, port)
        self.origins = origins(host, port)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await _deny(send, "not served")
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if headers.get("host", "") not in self.hosts:
            await _deny(send, "this address is not served here (Host header)")
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
        given = query.get("token")
        if given is not None:
            if not secrets.compare_digest(given.encode(), self.token.encode()):
                await _deny(send, "wrong session token")
                return
            rest = urlencode([(k, v) for k, v in query.items() if k != "token"])
            location = local_path(scope.get("path", "/")) + (f"?{rest}" if rest else "")
            cookie = f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"
            await _send(send, 303, b"", [(b"location", location.encode()), (b"set-cookie", cookie.encode())])
            return
        if not self._authorized(headers):
            await _deny(send, "a session token is required: open the address the command printed")
            return
        if scope.get("method", "GET") in UNSAFE_METHODS and not self._same_origin(headers):
            await _deny(send, "cross-site request refused (Origin)")
            return
        report_page = scope.get("path", "").endswith("/report.html")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = [
                    (b"content-security-policy", (REPORT_CSP if report_page else CSP).encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"same-origin"),
                    (b"cache-control", b"no-store"),
                    (b"x-frame-options", b"SAMEORIGIN"),
                ]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _authorized(self, headers: dict[str, str]) -> bool:
        bearer = headers.get("authorization", "")
        if bearer.startswith("Bearer ") and secrets.compare_digest(bearer[7:].encode(), self.token.encode()):
            return True
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:
            return False
        morsel = cookie.get(COOKIE)
        return morsel is not None and secrets.compare_digest(morsel.value.encode(), self.token.encode())

    def _same_origin(self, headers: dict[str, str]) -> bool:
        origin = headers.get("origin")
        if origin is not None:
            return origin in self.origins
        referer = headers.get("referer")
        if referer:
            parts = urlsplit(referer)
            return f"{parts.scheme}://{parts.netloc}" in self.origins
        return True  # a script (curl) sends neither; it holds the token


async def _send(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _deny(send: Send, reason: str) -> None:
    await _send(send, 403, f"403 forbidden: {reason}\n".encode(), [])


__all__ = ["COOKIE", "Guard", "allowed_hosts", "new_token"]
