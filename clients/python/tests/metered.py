# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""An in-process MCPServer (the real mcp from PyPI) over a keyring, metered with meter_boundary, and
MRTR rounds against it from the SDK's own Client: a first call that returns sealed request state,
then a retry that sends it back, with the same request or another one."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    RequestParamsMeta,
    TextContent,
)

from mrtr_keyring import Keyring, Metrics
from mrtr_keyring.mcp import meter_boundary, request_state_security

# The caller, as the server's bind_principal reads it: an in-process client has no authentication,
# so the tests say who calls in the request's _meta. FAIL_PRINCIPAL makes bind_principal raise.
PRINCIPAL = "test.mrtr.dev/principal"
FAIL_PRINCIPAL = "test.mrtr.dev/fail-principal"
TOOLS = ("get_weather", "get_forecast")

RESULTS = ("ok", "expired", "unknown_key", "bad_mac", "binding_mismatch", "malformed", "too_large")


def principal_from_meta(ctx: ServerRequestContext[Any, Any]) -> str | None:
    meta = ctx.meta or {}
    if meta.get(FAIL_PRINCIPAL):
        raise RuntimeError("the identity provider is down")
    p = meta.get(PRINCIPAL)
    return p if isinstance(p, str) else None


@dataclass
class Call:
    """One tools/call: the tool, its arguments and the caller (None: anonymous)."""

    tool: str = "get_weather"
    arguments: dict[str, Any] | None = None
    principal: str | None = "user:ada"
    fail_principal: bool = False

    def args(self) -> dict[str, Any]:
        return {"location": "Paris"} if self.arguments is None else self.arguments

    def meta(self) -> RequestParamsMeta:
        m: dict[str, Any] = {}
        if self.principal is not None:
            m[PRINCIPAL] = self.principal
        if self.fail_principal:
            m[FAIL_PRINCIPAL] = True
        return cast("RequestParamsMeta", m)  # extra items, which mypy cannot see through a variable key


def make_server(
    ring: Keyring,
    metrics: Metrics,
    *,
    audience: str = "weather",
    metered: bool = True,
    on_retry: Callable[[], Any] | None = None,
) -> MCPServer:
    """An MCPServer with the tools TOOLS: the first call asks for input and returns request state; the
    retry answers with it. on_retry, if given, is awaited by a retry the boundary accepted."""
    security = request_state_security(ring, audience=audience, metrics=metrics, bind_principal=principal_from_meta)
    server = MCPServer(audience, request_state_security=security)

    async def answer(tool: str, location: str, ctx: Context) -> CallToolResult | InputRequiredResult:
        if ctx.request_state is None:
            return InputRequiredResult(
                input_requests={
                    "confirm": ElicitRequest(
                        params=ElicitRequestFormParams(
                            message="Go on?", requested_schema={"type": "object", "properties": {}}
                        )
                    )
                },
                request_state=f"{tool}:{location}",
            )
        if on_retry is not None:
            await on_retry()
        return CallToolResult(content=[TextContent(type="text", text=ctx.request_state)])

    @server.tool()
    async def get_weather(location: str, ctx: Context) -> CallToolResult | InputRequiredResult:
        return await answer("get_weather", location, ctx)

    @server.tool()
    async def get_forecast(location: str, ctx: Context) -> CallToolResult | InputRequiredResult:
        return await answer("get_forecast", location, ctx)

    if metered:
        meter_boundary(server)
    return server


async def seal(client: Client, call: Call) -> str:
    """The first round of call: the request state the server sealed."""
    first = await client.session.call_tool(call.tool, call.args(), meta=call.meta(), allow_input_required=True)
    assert isinstance(first, InputRequiredResult) and first.request_state is not None, first
    return first.request_state


async def retry(client: Client, call: Call, state: str) -> bool:
    """The retry of call with state: True when the server answered, False when it refused the state."""
    try:
        result = await client.session.call_tool(
            call.tool,
            call.args(),
            meta=call.meta(),
            request_state=state,
            input_responses={"confirm": ElicitResult(action="accept", content={})},
            allow_input_required=True,
        )
    except MCPError as e:
        assert e.error.message == "Invalid or expired requestState", e
        return False
    assert isinstance(result, CallToolResult) and not result.is_error, result
    return True


async def round_trip(client: Client, first: Call, second: Call) -> bool:
    """Seals state for first and retries with it as second."""
    return await retry(client, second, await seal(client, first))


def opened(m: Metrics) -> dict[str, int]:
    """The python-sdk opens by result, leaving out the results at 0."""
    return {r: n for r in RESULTS if (n := m.opened("python-sdk", r))}


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))
