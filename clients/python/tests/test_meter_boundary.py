# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""meter_boundary against the real SDK (mcp from PyPI, an in-process MCPServer and its Client):
the SDK's boundary checks a token's request, audience and principal after the codec opened it, and
with meter_boundary a token it refuses for them counts binding_mismatch, not ok."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

import mrtr_keyring.mcp as glue
from mrtr_keyring import Metrics, parse_keyring
from mrtr_keyring.mcp import KeyringCodec, meter_boundary, request_state_security

from .kubelet import keyring_json
from .metered import Call, make_server, opened, retry, round_trip, run, seal

RING = parse_keyring(keyring_json(("a", bytes(range(32)))))


@pytest.mark.parametrize(
    ("second", "want"),
    [
        (Call(), {"ok": 1}),
        (Call(principal="user:grace"), {"binding_mismatch": 1}),
        (Call(arguments={"location": "Rome"}), {"binding_mismatch": 1}),
        (Call(tool="get_forecast"), {"binding_mismatch": 1}),
        (Call(principal=None), {"binding_mismatch": 1}),
    ],
    ids=["the same request", "another principal", "other arguments", "another tool", "anonymous"],
)
def test_a_retry_counts_what_the_boundary_decided(second: Call, want: dict[str, int]) -> None:
    m = Metrics()

    async def go() -> bool:
        async with Client(make_server(RING, m)) as c:
            return await round_trip(c, Call(), second)

    assert run(go()) == (want == {"ok": 1})
    assert opened(m) == want
    assert m.sealed("python-sdk") == 1


def test_anonymous_then_signed_in() -> None:
    m = Metrics()

    async def go() -> bool:
        async with Client(make_server(RING, m)) as c:
            return await round_trip(c, Call(principal=None), Call())

    assert run(go()) is False
    assert opened(m) == {"binding_mismatch": 1}


def test_another_audience() -> None:
    # Two services share one keyring, as a keyring's replicas do: the audience keeps their tokens apart.
    m, other = Metrics(), Metrics()

    async def go() -> bool:
        async with Client(make_server(RING, m)) as c, Client(make_server(RING, other, audience="news")) as o:
            return await retry(o, Call(), await seal(c, Call()))

    assert run(go()) is False
    assert opened(m) == {}
    assert opened(other) == {"binding_mismatch": 1}


def test_a_failing_bind_principal_counts_nothing() -> None:
    # The server's own mistake: the boundary refuses the round with the same frozen error, but no
    # token is to blame.
    m = Metrics()

    async def go() -> bool:
        async with Client(make_server(RING, m)) as c:
            return await round_trip(c, Call(), Call(fail_principal=True))

    assert run(go()) is False
    assert opened(m) == {}


def test_expired_between_the_codec_and_the_boundary(monkeypatch: pytest.MonkeyPatch) -> None:
    # The codec reads the clock before the boundary does: a token that expires in between is
    # refused as expired, and counts expired.
    m = Metrics()

    async def go() -> bool:
        async with Client(make_server(RING, m)) as c:
            state = await seal(c, Call())
            later = time.time() + 3600
            real = time.time
            reads = iter([real()])

            class Clock:
                @staticmethod
                def time() -> float:
                    return next(reads, later)

            monkeypatch.setattr(glue, "time", Clock)
            monkeypatch.setattr("mcp.server.request_state.time", Clock)
            return await retry(c, Call(), state)

    assert run(go()) is False
    assert opened(m) == {"expired": 1}


def test_rejections_before_the_boundary_count_once() -> None:
    # What the codec refuses (here a token of a key the keyring does not hold) it counts itself;
    # the boundary never opened anything for the middlewares to settle.
    m = Metrics()
    foreign = parse_keyring(keyring_json(("z", bytes(range(7, 39)))))

    async def go() -> bool:
        async with Client(make_server(foreign, Metrics())) as f, Client(make_server(RING, m)) as c:
            return await retry(c, Call(), await seal(f, Call()))

    assert run(go()) is False
    assert opened(m) == {"unknown_key": 1}


def test_concurrent_rounds() -> None:
    # Ten retries of the same request wait, inside the chain after the boundary accepted them, until
    # all ten are there, while ten retries with other arguments are refused meanwhile: each round's
    # count stays its own.
    m = Metrics()
    n = 10
    inside = 0
    all_in = asyncio.Event()

    async def on_retry() -> None:
        nonlocal inside
        inside += 1
        if inside == n:
            all_in.set()
        await asyncio.wait_for(all_in.wait(), 30)

    async def go() -> list[bool]:
        async with Client(make_server(RING, m, on_retry=on_retry)) as c:
            states = await asyncio.gather(*(seal(c, Call(arguments={"location": f"city-{i}"})) for i in range(2 * n)))
            return await asyncio.gather(
                *(
                    retry(c, Call(arguments={"location": f"city-{i}" if i < n else "elsewhere"}), s)
                    for i, s in enumerate(states)
                )
            )

    assert run(go()) == [True] * n + [False] * n
    assert opened(m) == {"ok": n, "binding_mismatch": n}
    assert m.sealed("python-sdk") == 2 * n


def test_without_it_the_codec_counts_what_it_opened() -> None:
    m = Metrics()

    async def go() -> bool:
        async with Client(make_server(RING, m, metered=False)) as c:
            return await round_trip(c, Call(), Call(principal="user:grace"))

    assert run(go()) is False
    assert opened(m) == {"ok": 1}


def test_meter_boundary_goes_around_the_boundary_once() -> None:
    server = make_server(RING, Metrics())
    chain = list(server.middleware)
    at = next(i for i, mw in enumerate(chain) if isinstance(mw, RequestStateBoundary))
    assert type(chain[at - 1]).__name__ == "_OuterMeter"
    assert type(chain[at + 1]).__name__ == "_InnerMeter"
    meter_boundary(server)
    assert server.middleware == chain


@pytest.mark.parametrize(
    "security",
    [
        request_state_security(RING, audience="weather"),
        RequestStateSecurity(codec=KeyringCodec(RING, metrics=Metrics()), audience="weather"),
        RequestStateSecurity(keys=[b"k" * 32], audience="weather"),
    ],
    ids=["no metrics", "not request_state_security", "the SDK's own codec"],
)
def test_meter_boundary_refuses_a_server_that_would_count_nothing(security: RequestStateSecurity) -> None:
    server = MCPServer("weather", request_state_security=security)
    before = list(server.middleware)
    with pytest.raises(ValueError, match="counts nothing"):
        meter_boundary(server)
    assert server.middleware == before


def test_the_boundary_security_is_read_from_the_pinned_sdk() -> None:
    """meter_boundary reads the boundary's policy through the SDK's private attribute (mcp 2.3 has no
    public way): this fails when a pinned SDK moves it, where meter_boundary would only stop
    refusing a server that counts nothing."""
    security = request_state_security(RING, audience="weather", metrics=Metrics())
    server = MCPServer("weather", request_state_security=security)
    boundary = next(mw for mw in server.middleware if isinstance(mw, RequestStateBoundary))
    assert glue._boundary_security(boundary) is security


def test_meter_boundary_needs_the_boundary() -> None:
    server = MCPServer("weather", request_state_security=request_state_security(RING, audience="weather"))
    server.middleware[:] = [mw for mw in server.middleware if not isinstance(mw, RequestStateBoundary)]
    with pytest.raises(ValueError, match="0 RequestStateBoundary"):
        meter_boundary(server)


@pytest.mark.parametrize(
    ("claims", "want"),
    [
        ({"v": 1, "iat": 0, "exp": 4e9, "s": ""}, "ok"),
        ({"v": 1, "iat": 0, "exp": 1.0, "s": ""}, "expired"),
        ({"v": 1, "iat": 4e9, "exp": 4.1e9, "s": ""}, "expired"),  # issued beyond the SDK's 60 s skew
        ({"v": 2, "iat": 0, "exp": 4e9, "s": ""}, "malformed"),
        ({"v": 1, "iat": 0, "exp": 4e9, "s": None}, "malformed"),
        ({"v": 1, "iat": "0", "exp": 4e9, "s": ""}, "malformed"),
        ({"v": 1, "exp": 4e9, "s": ""}, "malformed"),
        ([1, 0, 4e9, ""], "malformed"),
    ],
)
def test_the_codec_checks_the_claims_envelope_as_the_boundary_does(claims: Any, want: str) -> None:
    m = Metrics()
    codec = KeyringCodec(RING, metrics=m)
    codec.unseal(codec.seal(json.dumps(claims).encode()))
    assert opened(m) == {want: 1}
