# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""The example MCP server on the official Python SDK (mcp on PyPI), a consumer of an mrtr-operator
keyring through mrtr_keyring (clients/python).

It is examples/mcp-server in Python: the same get_weather tool (round 1 asks for a GitHub login
with an elicitation and returns sealed request state; the retry, on any replica, opens it and
answers), the same GET /debug/keyring, GET /metrics (the contract's consumer metrics) and GET /healthz,
and the same flags, so that the e2e
harness runs, observes and balances it like the Go server. The SDK seals the request state
(AES-GCM, its own format) with the keyring in service: mrtr_keyring's codec swaps keyrings under
the SDK as the kubelet swaps the mounted Secret, and the reporter acknowledges each keyring on the
pod, so that the operator can rotate without a restart.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import socket
import threading
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.request_state import InvalidRequestState
from mcp_types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    TextContent,
)
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from mrtr_keyring import CONTENT_TYPE, AckReporter, KeyringWatcher, Metrics
from mrtr_keyring.mcp import KeyringCodec, meter_boundary, request_state_security

log = logging.getLogger("mrtr-example")

_DURATION = re.compile(r"(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?")


def go_duration(text: str) -> float:
    """Seconds of a Go duration of hours, minutes and seconds ("5s", "1m30s"), as the Go server's
    --token-ttl takes it."""
    m = _DURATION.fullmatch(text)
    if not text or m is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 5s or 1m30s")
    h, mi, s = (int(g or 0) for g in m.groups())
    return float(h * 3600 + mi * 60 + s)


class CountingCodec(KeyringCodec):
    """The keyring codec, counting the request states it refuses for /debug/keyring."""

    rejected = 0
    _lock = threading.Lock()

    def unseal(self, token: str) -> bytes:
        try:
            return super().unseal(token)
        except InvalidRequestState:
            with self._lock:
                self.rejected += 1
            raise


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listen", default=":8080", help="address to serve HTTP on")
    p.add_argument("--keyring-dir", required=True, help="the mounted keyring Secret")
    p.add_argument(
        "--keyring-secret",
        default=os.environ.get("MRTR_KEYRING_SECRET", ""),
        help="the keyring Secret's name, to acknowledge each keyring on the pod (empty: no acknowledgements)",
    )
    p.add_argument("--serviceaccount-dir", default=None, help="the pod's service account token and CA")
    p.add_argument(
        "--server",
        default="mrtr-example",
        help="the audience every replica binds request state to: one value for all of them",
    )
    p.add_argument(
        "--token-ttl",
        type=go_duration,
        default=None,
        help="request state lifetime; must not exceed the MRTRKeyring's tokenTTL (default: the Secret's token-ttl)",
    )
    a = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    replica = os.environ.get("POD_NAME") or socket.gethostname()
    metrics = Metrics()
    watcher = KeyringWatcher(
        a.keyring_dir, on_error=lambda e: log.warning("keyring not reloaded: %s", e), metrics=metrics
    )
    reporter: AckReporter | None = None
    if a.keyring_secret:
        reporter = AckReporter(
            a.keyring_secret,
            service_account_dir=a.serviceaccount_dir,
            on_error=lambda e: log.warning("acknowledgement: %s", e),
            metrics=metrics,
        )
        reporter.follow(watcher)
        reporter.start()
    watcher.on_change(lambda r: log.info("keyring in service: %r", r))
    watcher.start()

    stats = {"completed": 0}
    lock = threading.Lock()
    codec = CountingCodec(watcher, metrics=metrics)
    security = request_state_security(codec, audience=a.server, ttl=a.token_ttl)
    mcp = MCPServer("mrtr-example", version="0.1.0", request_state_security=security)
    # The SDK checks a token's request, audience and principal after the codec opened it: with the
    # boundary metered, a token it refuses for them counts binding_mismatch on /metrics, not ok.
    meter_boundary(mcp)

    @mcp.tool(description="Weather for a location. Asks for your GitHub login first (an elicitation), then answers.")
    def get_weather(location: str, ctx: Context) -> CallToolResult | InputRequiredResult:
        if ctx.request_state is None:
            ring = watcher.keyring
            state = json.dumps({"location": location, "sealedBy": replica, "sealKey": ring.primary.id})
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
                request_state=state,
            )
        st: dict[str, Any] = json.loads(ctx.request_state)  # the SDK verified it: the plaintext we sealed
        answer = (ctx.input_responses or {}).get("github_login")
        login = ""
        if isinstance(answer, ElicitResult) and answer.action == "accept" and answer.content:
            login = str(answer.content.get("name", ""))
        with lock:
            stats["completed"] += 1
        return CallToolResult(
            content=[TextContent(type="text", text=f"Sunny in {st['location']} for {login}")],
            structured_content={
                "location": st["location"],
                "login": login,
                "sealedBy": st["sealedBy"],
                "sealKey": st["sealKey"],
                "openedBy": replica,
            },
        )

    async def debug(_: Request) -> Response:
        ring = watcher.keyring
        with lock:
            completed = stats["completed"]
        rejected = codec.rejected
        return JSONResponse(
            {
                "replica": replica,
                "fingerprint": ring.fingerprint,
                "keyIds": list(ring.ids),
                "sealKey": ring.primary.id,
                "acknowledged": reporter.acknowledged if reporter else "",
                "completed": completed,
                "rejected": rejected,
            }
        )

    async def metrics_text(_: Request) -> Response:
        return Response(metrics.exposition(), media_type=CONTENT_TYPE)

    async def healthz(_: Request) -> Response:
        return PlainTextResponse("ok\n")

    # custom_route is an untyped decorator: called, it keeps the handlers typed.
    mcp.custom_route("/debug/keyring", methods=["GET"])(debug)
    mcp.custom_route("/metrics", methods=["GET"])(metrics_text)
    mcp.custom_route("/healthz", methods=["GET"])(healthz)

    # A pod serves on every interface of its own network namespace.
    app = mcp.streamable_http_app(stateless_http=True, json_response=True, host="0.0.0.0")  # noqa: S104
    host, _, port = a.listen.rpartition(":")
    uvicorn.run(app, host=host or "0.0.0.0", port=int(port), log_level="warning")  # noqa: S104


if __name__ == "__main__":
    main()
