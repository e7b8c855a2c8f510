# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""The example MCP server of examples/mcp-server, on python-sdk: a stateless streamable-HTTP
MCPServer whose get_weather tool asks for the caller's GitHub login (an MRTR round trip) before it
answers, its request state sealed with the mounted keyring (needs the extra "mcp").

    python -m mrtr_keyring.example --listen :8080 --keyring-dir /etc/mrtr --keyring-secret weather \\
        --server weather

It serves /mcp (every response carries the Mrtr-Replica, Mrtr-Keyring-Fingerprint and
Mrtr-Seal-Key headers), GET /debug/keyring (what it has loaded and acknowledged, and its round
trips completed and rejected; never key bytes) and GET /healthz. With --keyring-secret it
acknowledges every keyring it loads on its own Pod. It refuses to start without a valid keyring.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import sys
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    TextContent,
)
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from ._ack import AckReporter
from ._watch import KeyringWatcher
from .mcp import request_state_security

HEADER_REPLICA = "Mrtr-Replica"
HEADER_FINGERPRINT = "Mrtr-Keyring-Fingerprint"
HEADER_SEAL_KEY = "Mrtr-Seal-Key"

log = logging.getLogger("mrtr_keyring.example")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]


class _Counters(logging.Handler):
    """Counts the SDK's rejections of request state: its boundary logs each one (the reason stays
    in the log, the client only sees -32602)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.mu = threading.Lock()
        self.completed = 0
        self.rejected = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("requestState rejected"):
            with self.mu:
                self.rejected += 1

    def complete(self) -> None:
        with self.mu:
            self.completed += 1


def build(
    watcher: KeyringWatcher,
    *,
    server: str,
    replica: str,
    reporter: AckReporter | None = None,
    token_ttl: float | None = None,
) -> tuple[MCPServer, _Counters]:
    """The MCPServer with get_weather, /debug/keyring and /healthz, and its counters."""
    counters = _Counters()
    logging.getLogger("mcp.server.request_state").addHandler(counters)
    security = request_state_security(watcher, audience=server, ttl=token_ttl)
    mcp = MCPServer("mrtr-example", request_state_security=security, log_level="WARNING")

    @mcp.tool()
    async def get_weather(location: str, ctx: Context) -> CallToolResult | InputRequiredResult:
        """Weather for a location. Asks for your GitHub login first (an elicitation), then answers."""
        if ctx.request_state is None:
            # The key id is read apart from the seal, so during a reload it may name the previous
            # primary: it is for display only, the token itself names the key that sealed it.
            state = {"location": location, "sealedBy": replica, "sealKey": watcher.keyring.primary.id}
            return InputRequiredResult(
                input_requests={
                    "github_login": ElicitRequest(
                        params=ElicitRequestFormParams(
                            message="Your GitHub username?",
                            requested_schema={
                                "type": "object",
                                "properties": {"name": {"type": "string"}},
                                "required": ["name"],
                            },
                        )
                    )
                },
                request_state=json.dumps(state),
            )
        st = json.loads(ctx.request_state)  # the plaintext the SDK's boundary unsealed and checked
        login = (ctx.input_responses or {}).get("github_login")
        if getattr(login, "action", None) != "accept":
            return CallToolResult(content=[TextContent(type="text", text="No login, no weather.")])
        name = (getattr(login, "content", None) or {}).get("name")
        counters.complete()
        text = (
            f"Sunny in {st['location']} for {name} (state sealed by {st['sealedBy']} with key {st['sealKey']}, "
            f"opened by {replica})"
        )
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content={
                "location": st["location"],
                "sealedBy": st["sealedBy"],
                "sealKey": st["sealKey"],
                "openedBy": replica,
            },
        )

    @mcp.custom_route("/debug/keyring", methods=["GET"])  # type: ignore[untyped-decorator]
    async def debug(request: Request) -> Response:
        ring = watcher.keyring
        with counters.mu:
            completed, rejected = counters.completed, counters.rejected
        return JSONResponse(
            {
                "replica": replica,
                "fingerprint": ring.fingerprint,
                "keyIds": list(ring.ids),
                "sealKey": ring.primary.id,
                "pythonKids": {k.id: k.python_kid for k in ring.keys},
                "tokenTTLSeconds": ring.token_ttl,
                "acknowledged": reporter.acknowledged if reporter is not None else "",
                "completed": completed,
                "rejected": rejected,
            }
        )

    @mcp.custom_route("/healthz", methods=["GET"])  # type: ignore[untyped-decorator]
    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok\n")

    return mcp, counters


def with_keyring_headers(app: ASGIApp, watcher: KeyringWatcher, replica: str) -> ASGIApp:
    """Tag every /mcp response with the replica and the keyring in service when the request came."""

    async def wrapped(
        scope: Scope, receive: Callable[[], Awaitable[Message]], send: Callable[[Message], Awaitable[None]]
    ) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith("/mcp"):
            await app(scope, receive, send)
            return
        ring = watcher.keyring
        extra = [
            (HEADER_REPLICA.lower().encode(), replica.encode()),
            (HEADER_FINGERPRINT.lower().encode(), ring.fingerprint.encode()),
            (HEADER_SEAL_KEY.lower().encode(), ring.primary.id.encode()),
        ]

        async def tagged(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await app(scope, receive, tagged)

    return wrapped


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mrtr_keyring.example", description=__doc__.split("\n\n")[0])
    p.add_argument("--listen", default=":8080", help="address to serve HTTP on (host:port)")
    p.add_argument("--keyring-dir", required=True, help="folder of the mounted keyring Secret, followed as it changes")
    p.add_argument(
        "--keyring-secret",
        default=os.environ.get("MRTR_KEYRING_SECRET", ""),
        help="the keyring Secret's name: acknowledge each keyring on the pod's own Pod (default $MRTR_KEYRING_SECRET)",
    )
    p.add_argument("--serviceaccount-dir", default=None, help="the service account's token and ca.crt")
    p.add_argument(
        "--server", default="mrtr-example", help="the audience bound into every state: the same on every replica"
    )
    p.add_argument(
        "--token-ttl", type=float, default=None, help="state lifetime in seconds (never above the Secret's token-ttl)"
    )
    p.add_argument("--replica", default=os.environ.get("POD_NAME") or socket.gethostname(), help="name in headers")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    def warn(err: Exception) -> None:
        log.warning("%s", err)

    try:
        watcher = KeyringWatcher(args.keyring_dir, on_error=warn)
        reporter = (
            AckReporter(args.keyring_secret, service_account_dir=args.serviceaccount_dir, on_error=warn)
            if args.keyring_secret
            else None
        )
    except Exception as e:
        log.error("not starting: %s", e)
        return 1
    ring = watcher.keyring
    log.info(
        "keyring loaded: fingerprint %s, key ids %s, seal key %s", ring.fingerprint, list(ring.ids), ring.primary.id
    )
    watcher.on_change(
        lambda r: log.info(
            "keyring changed: fingerprint %s, key ids %s, seal key %s", r.fingerprint, list(r.ids), r.primary.id
        )
    )
    watcher.start()
    if reporter is not None:
        reporter.follow(watcher)
        reporter.start()
    mcp, _ = build(watcher, server=args.server, replica=args.replica, reporter=reporter, token_ttl=args.token_ttl)
    app = mcp.streamable_http_app(stateless_http=True, json_response=True, host="0.0.0.0")  # noqa: S104
    host, _, port = args.listen.rpartition(":")
    uvicorn.run(
        with_keyring_headers(app, watcher, args.replica),
        host=host or "0.0.0.0",  # noqa: S104 (a server in a pod listens on every address)
        port=int(port),
        log_level="warning",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
