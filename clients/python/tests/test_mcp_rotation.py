# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""Three replicas of a stateless streamable-HTTP MCPServer (the real mcp from PyPI) serve MRTR round
trips from the SDK's own client, each request sent to the next replica, while the mounted keyring
rotates twice through the operator's phases: accept the new key, seal with it, drop the old one.
Each phase starts only once every replica acknowledged the last (on a fake API server), and the
drop waits token-ttl, as the operator does. Result: 0 rejected round trips."""

from __future__ import annotations

import asyncio
import json
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.request_state import AESGCMRequestStateCodec, _b64u_decode
from mcp_types import CallToolResult, ElicitRequestParams, ElicitResult, TextContent

from mrtr_keyring import AckReporter, Key, KeyringError, parse_keyring
from mrtr_keyring.mcp import KeyringCodec, TokenTTLExceeded, request_state_security

from .conftest import REPO
from .fakeapi import FakeAPIServer
from .kubelet import SecretVolume, keyring_json
from .mrtr_replicas import Replica, RoundRobin, make_replica, serving

TOKEN_TTL = 3  # seconds: the Secret's token-ttl, and what the drop phase waits out
A, B, C = ("key-a", b"a" * 32), ("key-b", b"b" * 32), ("key-c", b"c" * 48)
PHASES = [(A,), (A, B), (B, A), (B,), (B, C), (C, B), (C,)]


async def elicit(context: object, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "octocat"})


def test_rotation_under_mrtr_traffic(tmp_path: Path) -> None:
    asyncio.run(asyncio.wait_for(_rotation(tmp_path), 180))


async def _rotation(tmp_path: Path) -> None:
    api = FakeAPIServer(tmp_path)
    sa = api.service_account(tmp_path / "sa")
    volume = SecretVolume(tmp_path / "keyring", {"keyring.json": keyring_json(*PHASES[0]), "token-ttl": b"3"})
    replicas: list[Replica] = []
    for i in range(3):
        reporter = AckReporter(
            "weather-keyring", pod_name=f"weather-{i}", api_server=api.url, service_account_dir=sa, min_backoff=0.05
        )
        replicas.append(make_replica(str(i), volume.dir, reporter))
    for r in replicas:
        r.watcher.start()
        r.reporter.follow(r.watcher)
        r.reporter.start()

    def all_acknowledged(fp: str) -> bool:
        return all(
            api.annotations.get(f"mcp/weather-{i}", {}).get("loaded.mrtr.dev/weather-keyring") == fp for i in range(3)
        )

    calls, rejected, failed = 0, 0, []
    per_phase: list[int] = []
    stop = asyncio.Event()
    transport: RoundRobin | None = None

    async def traffic(client: Client, n: int) -> None:
        nonlocal calls, rejected
        while not stop.is_set():
            try:
                result = await client.call_tool("weather", {"location": f"city-{n}-{calls}"})
            except Exception as e:  # an MCPError -32602 is a rejected requestState
                if "Invalid or expired requestState" in str(e):
                    rejected += 1
                else:
                    failed.append(repr(e))
                continue
            assert isinstance(result, CallToolResult) and not result.is_error, result
            text = result.content[0]
            assert isinstance(text, TextContent) and "for octocat" in text.text
            calls += 1

    try:
        async with serving(replicas):
            transport = RoundRobin([r.port for r in replicas])
            async with httpx2.AsyncClient(transport=transport) as http:
                async with AsyncExitStack() as stack:
                    clients = [
                        await stack.enter_async_context(
                            Client(
                                streamable_http_client(f"http://127.0.0.1:{replicas[0].port}/mcp", http_client=http),
                                elicitation_callback=elicit,
                            )
                        )
                        for _ in range(3)
                    ]
                    tasks = [asyncio.create_task(traffic(c, n)) for n, c in enumerate(clients)]
                    for n, keys in enumerate(PHASES):
                        if n > 0:
                            if len(keys) < len(PHASES[n - 1]):
                                # The drop: every replica stopped sealing with the old key a phase ago;
                                # its last tokens expire within token-ttl.
                                await asyncio.sleep(TOKEN_TTL + 0.5)
                            volume.update({"keyring.json": keyring_json(*keys), "token-ttl": b"3"})
                        fp = parse_keyring(keyring_json(*keys)).fingerprint
                        before = calls
                        acked = await asyncio.to_thread(api.wait, partial(all_acknowledged, fp))
                        assert acked, f"phase {n}: {api.annotations} want {fp}; {calls} calls, {failed[:3]}"
                        # Some traffic in every phase, on keyrings every replica holds.
                        while calls < before + 6:
                            await asyncio.sleep(0.05)
                        per_phase.append(calls - before)
                    stop.set()
                    await asyncio.gather(*tasks)
    finally:
        for r in replicas:
            r.reporter.stop()
            r.watcher.stop()
        api.close()

    crossed = sum(1 for r in replicas for s, o in r.rounds if s != o)
    print(f"\n{calls} MRTR round trips ({crossed} crossed replicas), {rejected} rejected, per phase {per_phase}")
    assert failed == []
    assert rejected == 0
    assert calls >= 6 * len(PHASES)
    rounds = [pair for r in replicas for pair in r.rounds]
    assert len(rounds) == calls
    assert crossed > 0, "no round trip crossed replicas"
    # Every token the replicas sealed is the SDK's format, names one of the three keys by its Python
    # kid, and lives no longer than token-ttl.
    assert transport is not None and len(transport.tokens) >= calls
    kids = {Key(*k).python_kid: k[0] for k in (A, B, C)}
    inspect = AESGCMRequestStateCodec([A[1], B[1], C[1]])
    seen = set()
    for token in transport.tokens:
        assert token.startswith("v1.")
        seen.add(kids[_b64u_decode(token[3:])[:4].hex()])
        claims = json.loads(inspect.unseal(token))
        assert claims["aud"] == "weather"
        assert claims["exp"] - claims["iat"] <= TOKEN_TTL
    assert seen == {"key-a", "key-b", "key-c"}


def test_codec_follows_the_keyring_and_speaks_the_sdk_format() -> None:
    ring1 = parse_keyring(keyring_json(A))
    ring2 = parse_keyring(keyring_json(B, A))
    current = [ring1]
    codec = KeyringCodec(lambda: current[0])
    old = codec.seal(b"payload")
    assert AESGCMRequestStateCodec([A[1]]).unseal(old) == b"payload"  # the SDK's own codec opens it
    current[0] = ring2
    new = codec.seal(b"payload")
    assert _b64u_decode(new[3:])[:4].hex() == ring2.keys[0].python_kid  # sealed with keys[0]
    assert codec.unseal(old) == b"payload"  # every key opens
    current[0] = parse_keyring(keyring_json(B))
    from mcp.server.request_state import InvalidRequestState

    with pytest.raises(InvalidRequestState):
        codec.unseal(old)
    with pytest.raises(InvalidRequestState):
        codec.unseal("v1.garbage")


def test_security_ttl_never_exceeds_token_ttl() -> None:
    from dataclasses import replace

    ring = [parse_keyring(keyring_json(A))]
    sec = request_state_security(lambda: ring[0], audience="weather")
    assert sec.ttl == 300.0  # no token-ttl: the operator's default
    assert sec.audience == "weather"
    ring[0] = replace(ring[0], token_ttl=120)
    assert sec.ttl == 120.0
    shorter = request_state_security(lambda: ring[0], audience="weather", ttl=60)
    assert shorter.ttl == 60.0
    ring[0] = replace(ring[0], token_ttl=30)
    assert sec.ttl == 30.0  # followed on every seal, no restart
    # A ttl asked for that the keyring no longer allows fails the seal, naming both, rather than
    # sealing for less than the server promised.
    with pytest.raises(TokenTTLExceeded, match=r"ttl is 60s, longer than the 30s .*tokenTTL"):
        _ = shorter.ttl
    ring[0] = replace(ring[0], token_ttl=60)
    assert shorter.ttl == 60.0
    with pytest.raises(ValueError, match="audience"):
        request_state_security(lambda: ring[0], audience="")
    with pytest.raises(ValueError, match="ttl"):
        request_state_security(lambda: ring[0], audience="weather", ttl=0)
    assert KeyringError is not None


RS2_TOKEN_TTL = REPO / "pkg" / "token" / "testdata" / "rs2" / "token-ttl.json"


@pytest.mark.skipif(not RS2_TOKEN_TTL.exists(), reason="runs in the repository, beside pkg/token")
def test_ttl_against_token_ttl_as_the_shared_cases() -> None:
    """The cases Go's token.RS2 and the Rust crate run (pkg/token/testdata/rs2/token-ttl.json): a
    ttl no longer than token-ttl, or under a keyring that declares none, is the tokens' lifetime;
    a longer one fails the seal, and never gives a shorter lifetime in its place."""
    from dataclasses import replace

    cases = json.loads(RS2_TOKEN_TTL.read_text())["cases"]
    assert len(cases) >= 7
    for case in cases:
        ring = replace(parse_keyring(keyring_json(A)), token_ttl=case["token_ttl_s"])
        security = request_state_security(lambda r=ring: r, audience="weather", ttl=case["ttl_s"])
        if case["seals"]:
            assert security.ttl == case["ttl_s"], case["name"]
        else:
            refusal = f"ttl is {case['ttl_s']}s, longer than the {case['token_ttl_s']}s"
            with pytest.raises(TokenTTLExceeded, match=refusal):
                _ = security.ttl


def test_a_replica_without_the_key_rejects(tmp_path: Path) -> None:
    """The control: what the rotation test counts as rejected is what a replica that lacks the
    sealing key answers (JSON-RPC -32602 from the SDK's boundary)."""

    async def run() -> str:
        api = FakeAPIServer(tmp_path)
        sa = api.service_account(tmp_path / "sa")
        replicas = []
        for i, keys in enumerate([(B,), (A,)]):
            vol = SecretVolume(tmp_path / f"keyring-{i}", {"keyring.json": keyring_json(*keys)})
            rep = AckReporter("weather-keyring", pod_name=f"weather-{i}", api_server=api.url, service_account_dir=sa)
            replicas.append(make_replica(str(i), vol.dir, rep))
        try:
            async with serving(replicas):
                transport = RoundRobin([r.port for r in replicas])
                async with httpx2.AsyncClient(transport=transport) as http:
                    url = f"http://127.0.0.1:{replicas[0].port}/mcp"
                    async with Client(streamable_http_client(url, http_client=http), elicitation_callback=elicit) as c:
                        for _ in range(4):  # some first round lands on the replica of B, its retry on A's
                            try:
                                await c.call_tool("weather", {"location": "x"})
                            except Exception as e:
                                return str(e)
                        return "no rejection"
        finally:
            api.close()

    assert "Invalid or expired requestState" in asyncio.run(run())
