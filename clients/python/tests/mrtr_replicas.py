# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""Replicas of a stateless streamable-HTTP MCPServer sealing MRTR state with the mounted keyring,
served by uvicorn on real sockets, and a client-side balancer that sends each request to the next."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

from mrtr_keyring import AckReporter, KeyringWatcher
from mrtr_keyring.mcp import request_state_security

AUDIENCE = "weather"


@dataclass
class Replica:
    name: str
    watcher: KeyringWatcher
    reporter: AckReporter
    server: MCPServer
    port: int = 0
    # (sealer, opener) of every completed round trip: the replica that minted the state, this one.
    rounds: list[tuple[str, str]] = field(default_factory=list)


def make_replica(name: str, volume: Path, reporter: AckReporter) -> Replica:
    watcher = KeyringWatcher(volume, poll_interval=0.02)
    # Each replica has its own server name: only the shared audience lets them open each other's state.
    server = MCPServer(f"weather-{name}", request_state_security=request_state_security(watcher, audience=AUDIENCE))
    replica = Replica(name, watcher, reporter, server)

    @server.tool()
    async def weather(location: str, ctx: Context) -> str | InputRequiredResult:
        """The weather, for a signed-in user: asks who they are first (one MRTR round trip)."""
        if ctx.request_state is None:
            return InputRequiredResult(
                input_requests={
                    "login": ElicitRequest(
                        params=ElicitRequestFormParams(
                            message="Your GitHub username?",
                            requested_schema={"type": "object", "properties": {"name": {"type": "string"}}},
                        )
                    )
                },
                request_state=json.dumps({"sealer": name, "location": location}),
            )
        state = json.loads(ctx.request_state)  # the plaintext this server's boundary unsealed
        assert state["location"] == location
        login = (ctx.input_responses or {}).get("login")
        user = getattr(login, "content", None) or {}
        replica.rounds.append((state["sealer"], name))
        return f"sunny in {location} for {user.get('name')} ({state['sealer']}->{name})"

    return replica


class RoundRobin(httpx2.AsyncBaseTransport):
    """Sends each request to the next replica's port, and records every sealed requestState seen."""

    def __init__(self, ports: list[int]) -> None:
        self._ports = itertools.cycle(ports)
        self._inner = httpx2.AsyncHTTPTransport()
        self.tokens: list[str] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.url = request.url.copy_with(port=next(self._ports))
        response = await self._inner.handle_async_request(request)
        body = await response.aread()
        if response.headers.get("content-type", "").startswith("application/json") and body:
            doc = json.loads(body)
            result = doc.get("result") if isinstance(doc, dict) else None
            if isinstance(result, dict) and isinstance(result.get("requestState"), str):
                self.tokens.append(result["requestState"])
        return httpx2.Response(response.status_code, headers=response.headers, content=body, request=request)

    async def aclose(self) -> None:
        await self._inner.aclose()


@asynccontextmanager
async def serving(replicas: list[Replica]) -> AsyncIterator[None]:
    """Serve every replica's streamable-HTTP app (stateless, JSON answers) on its own socket."""
    servers: list[uvicorn.Server] = []
    tasks: list[asyncio.Task[None]] = []
    for r in replicas:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        r.port = sock.getsockname()[1]
        app = r.server.streamable_http_app(stateless_http=True, json_response=True)
        srv = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        servers.append(srv)
        tasks.append(asyncio.create_task(srv.serve(sockets=[sock])))
    try:
        while not all(s.started for s in servers):
            await asyncio.sleep(0.01)
        yield
    finally:
        for s in servers:
            s.should_exit = True
        await asyncio.gather(*tasks)
