"""Bind, print the one line, serve: :func:`serve`.

The server binds 127.0.0.1 unless ``--host`` says otherwise (then a warning goes to stderr:
person-level data would be reachable by whoever reaches that address and holds the token).
It binds the socket itself, so ``--port 0`` picks a free port and the printed address is the
real one, and the Host check (:mod:`safeshare.ui.security`) knows it. Stdout carries exactly
one line, ``safeshare ui: http://HOST:PORT/?token=T``; uvicorn logs only warnings and errors.
When the server stops (Ctrl-C, SIGTERM), the runs still going are cancelled.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from pathlib import Path

from safeshare.app_runner import to_json
from safeshare.errors import InputError


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (:class:`InputError` when it cannot be bound)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise InputError(
            f"--host {host} --port {port}: cannot listen there ({exc.strerror or exc})"
        ) from None
    sock.listen(64)
    sock.set_inheritable(False)
    return sock


def serve(
    workdir: Path,
    host: str,
    port: int,
    open_browser: bool,
    max_upload: int,
    *,
    quiet: bool = False,
    as_json: bool = False,
) -> None:
    """Serve the workbench until interrupted.

    The address is printed on one line (``safeshare ui: URL``; with ``as_json`` a JSON object
    ``{"url", "host", "port"}``, for scripts that start the server); ``quiet`` leaves the web
    server's own warnings out (errors are still shown)."""
    import uvicorn

    from safeshare.ui.app import Settings, create_app
    from safeshare.ui.security import new_token

    workdir = workdir.resolve()
    if not workdir.is_dir():
        raise InputError(f"--workdir {workdir}: not a directory")
    if not is_loopback(host):
        sys.stderr.write(
            f"warning: serving on {host}, not on this machine only: anyone who can reach it and holds "
            "the token can read the data; prefer the default 127.0.0.1 (with an SSH tunnel)\n"
        )
    sock = bind(host, port)
    port = sock.getsockname()[1]
    token = new_token()
    app = create_app(Settings(workdir=workdir, token=token, host=host, port=port, max_upload=max_upload))
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    url = f"http://{shown}:{port}/?token={token}"
    if as_json:
        sys.stdout.write(to_json({"url": url, "host": host, "port": port}) + "\n")
    else:
        sys.stdout.write(f"safeshare ui: {url}\n")
    sys.stdout.flush()
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    config = uvicorn.Config(
        app,
        log_level="error" if quiet else "warning",
        access_log=False,
        lifespan="off",
        server_header=False,
    )
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        app.app.state.ctx.runs.shutdown()
        sock.close()


__all__ = ["bind", "is_loopback", "serve"]
