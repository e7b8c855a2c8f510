# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""The Python consumer's server for the MCP project's conformance suite (@modelcontextprotocol/conformance).

The official SDK's MCPServer, stateless streamable HTTP, with the suite's multi round-trip test tools
(test_input_required_result_*) and prompt. The SDK seals the request state with the keyring of a
mounted folder through mrtr_keyring (KeyringWatcher, request_state_security), with the contract's
metrics on GET /metrics and the SDK's boundary metered (meter_boundary), as the example server runs
it: the suite's scenarios then go through the two middlewares meter_boundary puts around the boundary.
test/mcpconformance runs replicas of it behind a round-robin balancer while it rotates the keyring.

    python server.py --listen 127.0.0.1:8080 --keyring-dir DIR --token-ttl 3
"""

from __future__ import annotations

import argparse
import json
import logging

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import Message, UserMessage
from mcp_types import (
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequest,
    InputRequiredResult,
    InputResponses,
    ListRootsRequest,
    ListRootsResult,
    SamplingMessage,
    TextContent,
)
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mrtr_keyring import CONTENT_TYPE, KeyringWatcher, Metrics
from mrtr_keyring.mcp import meter_boundary, request_state_security

log = logging.getLogger("mrtr-conformance")

# Every replica binds its request state to this audience, so that any of them opens the others'.
AUDIENCE = "mrtr-conformance"


def elicit(message: str, field: str, kind: str = "string") -> ElicitRequest:
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


def sample(text: str, max_tokens: int) -> CreateMessageRequest:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=text))
    return CreateMessageRequest(params=CreateMessageRequestParams(messages=[message], max_tokens=max_tokens))


def text(s: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=s)])


def accepted(responses: InputResponses | None, key: str) -> dict[str, object] | None:
    """The content of the accepted elicitation answering key, or None."""
    r = (responses or {}).get(key)
    if isinstance(r, ElicitResult) and r.action == "accept":
        return dict(r.content or {})
    return None


def opened(ctx: Context, tool: str, want: int) -> dict[str, object]:
    """The state of a retry, which the SDK has unsealed: it must have been sealed by tool at step want."""
    state = json.loads(ctx.request_state or "null")
    if not isinstance(state, dict) or state.get("tool") != tool or state.get("step") != want:
        raise ValueError(f"the request state is not {tool}'s step {want}")
    return state


def sealed(tool: str, step: int, inputs: dict[str, InputRequest], **extra: str) -> InputRequiredResult:
    """Asks for inputs with a state that the SDK seals with the keyring in service."""
    return InputRequiredResult(input_requests=inputs, request_state=json.dumps({"tool": tool, "step": step, **extra}))


def build(watcher: KeyringWatcher, ttl: float, metrics: Metrics) -> MCPServer:
    security = request_state_security(watcher, audience=AUDIENCE, ttl=ttl, metrics=metrics)
    mcp = MCPServer("mrtr-conformance-python", request_state_security=security)
    # The SDK checks a token's request, audience and principal after the codec opened it: metered,
    # a token it refuses for them (the tampered-state scenario's among them) counts binding_mismatch.
    meter_boundary(mcp)

    # No state: its scenarios retry with the answer alone (extra keys, wrong keys, bad values).
    @mcp.tool(name="test_input_required_result_elicitation")
    def elicitation(ctx: Context) -> CallToolResult | InputRequiredResult:
        c = accepted(ctx.input_responses, "user_name")
        if c is not None:
            return text(f"Hello, {c.get('name')}!")
        return InputRequiredResult(input_requests={"user_name": elicit("What is your name?", "name")})

    @mcp.tool(name="test_input_required_result_sampling")
    def sampling(ctx: Context) -> CallToolResult | InputRequiredResult:
        r = (ctx.input_responses or {}).get("capital_question")
        if isinstance(r, CreateMessageResult | CreateMessageResultWithTools):
            return text(r.model_dump_json())
        return InputRequiredResult(input_requests={"capital_question": sample("What is the capital of France?", 100)})

    @mcp.tool(name="test_input_required_result_list_roots")
    def list_roots(ctx: Context) -> CallToolResult | InputRequiredResult:
        r = (ctx.input_responses or {}).get("client_roots")
        if isinstance(r, ListRootsResult):
            return text("roots: " + " ".join(str(root.uri) for root in r.roots))
        return InputRequiredResult(input_requests={"client_roots": ListRootsRequest()})

    def confirmed(ctx: Context, tool: str) -> CallToolResult | InputRequiredResult:
        """request-state and tampered-state: a sealed state, which the retry must bring back unchanged."""
        if ctx.request_state is None:
            return sealed(tool, 1, {"confirm": elicit("Please confirm", "ok", "boolean")})
        opened(ctx, tool, 1)
        if accepted(ctx.input_responses, "confirm") is None:
            raise ValueError("inputResponses lack an accepted confirm")
        return text("state-ok: the request state opened on this replica")

    @mcp.tool(name="test_input_required_result_request_state")
    def request_state(ctx: Context) -> CallToolResult | InputRequiredResult:
        return confirmed(ctx, "test_input_required_result_request_state")

    @mcp.tool(name="test_input_required_result_tampered_state")
    def tampered_state(ctx: Context) -> CallToolResult | InputRequiredResult:
        return confirmed(ctx, "test_input_required_result_tampered_state")

    @mcp.tool(name="test_input_required_result_multiple_inputs")
    def multiple_inputs(ctx: Context) -> CallToolResult | InputRequiredResult:
        tool = "test_input_required_result_multiple_inputs"
        if ctx.request_state is None:
            return sealed(
                tool,
                1,
                {
                    "user_name": elicit("What is your name?", "name"),
                    "greeting": sample("Generate a greeting", 50),
                    "client_roots": ListRootsRequest(),
                },
            )
        opened(ctx, tool, 1)
        rs = ctx.input_responses or {}
        if (
            accepted(rs, "user_name") is None
            or not isinstance(rs.get("greeting"), CreateMessageResult | CreateMessageResultWithTools)
            or not isinstance(rs.get("client_roots"), ListRootsResult)
        ):
            raise ValueError("inputResponses lack one of user_name, greeting and client_roots")
        return text("all three inputs received")

    # Asks for a name, then (sealing the name into a new state) for a colour.
    @mcp.tool(name="test_input_required_result_multi_round")
    def multi_round(ctx: Context) -> CallToolResult | InputRequiredResult:
        tool = "test_input_required_result_multi_round"
        if ctx.request_state is None:
            return sealed(tool, 1, {"step1": elicit("Step 1: What is your name?", "name")})
        name = accepted(ctx.input_responses, "step1")
        if name is not None:
            opened(ctx, tool, 1)
            return sealed(
                tool, 2, {"step2": elicit("Step 2: What is your favorite color?", "color")}, name=str(name.get("name"))
            )
        state = opened(ctx, tool, 2)
        colour = accepted(ctx.input_responses, "step2")
        if colour is None:
            raise ValueError("inputResponses lack an accepted step2")
        return text(f"{state.get('name')} likes {colour.get('color')}")

    # Asks only for what the client declared it can answer.
    @mcp.tool(name="test_input_required_result_capabilities")
    def capabilities(ctx: Context) -> CallToolResult | InputRequiredResult:
        if ctx.input_responses:
            return text("inputs received")
        caps = ctx.client_capabilities
        inputs: dict[str, InputRequest] = {}
        if caps is not None and caps.sampling is not None:
            inputs["question"] = sample("What is the capital of France?", 100)
        if caps is not None and caps.elicitation is not None:
            inputs["user_name"] = elicit("What is your name?", "name")
        if not inputs:
            return text("the client declared no capability to ask with")
        return InputRequiredResult(input_requests=inputs)

    @mcp.prompt(name="test_input_required_result_prompt")
    def prompt(ctx: Context) -> list[Message] | InputRequiredResult:
        name = "test_input_required_result_prompt"
        if ctx.request_state is None:
            return sealed(name, 1, {"user_context": elicit("What context should the prompt use?", "context")})
        opened(ctx, name, 1)
        c = accepted(ctx.input_responses, "user_context")
        if c is None:
            raise ValueError("inputResponses lack an accepted user_context")
        return [UserMessage(f"Use this context: {c.get('context')}")]

    async def debug(_: Request) -> Response:
        return JSONResponse({"fingerprint": watcher.keyring.fingerprint})

    async def metrics_text(_: Request) -> Response:
        return Response(metrics.exposition(), media_type=CONTENT_TYPE)

    # custom_route is an untyped decorator: called, it keeps the handlers typed.
    mcp.custom_route("/debug/keyring", methods=["GET"])(debug)
    mcp.custom_route("/metrics", methods=["GET"])(metrics_text)
    return mcp


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listen", default="127.0.0.1:8080", help="address to serve HTTP on")
    p.add_argument("--keyring-dir", required=True, help="the mounted keyring Secret")
    p.add_argument("--token-ttl", type=float, default=3.0, help="the longest request state lifetime, in seconds")
    a = p.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    metrics = Metrics()
    watcher = KeyringWatcher(
        a.keyring_dir, on_error=lambda e: log.warning("keyring not reloaded: %s", e), metrics=metrics
    )
    watcher.start()
    app = build(watcher, a.token_ttl, metrics).streamable_http_app(stateless_http=True, json_response=True)
    host, _, port = a.listen.rpartition(":")
    uvicorn.run(app, host=host, port=int(port), log_level="warning")


if __name__ == "__main__":
    main()
