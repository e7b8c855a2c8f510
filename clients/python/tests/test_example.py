# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""The example server (examples/python-server/server.py, on this package) as a process: it serves
an MRTR round trip to the SDK's client, acknowledges each keyring on its Pod, follows a rotation,
and counts a rejection; three of them go through a rotation behind a round-robin client."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitRequestParams, ElicitResult, InputRequiredResult, TextContent

from mrtr_keyring import parse_keyring

from .conftest import REPO
from .fakeapi import FakeAPIServer
from .kubelet import SecretVolume, keyring_json
from .mrtr_replicas import RoundRobin

A, B = ("key-a", b"a" * 32), ("key-b", b"b" * 32)
SERVER = REPO / "examples" / "python-server" / "server.py"


async def elicit(context: object, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "octocat"})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def get(url: str) -> tuple[dict[str, str], bytes]:
    with urllib.request.urlopen(url, timeout=5) as r:
        return dict(r.headers.items()), r.read()


@contextmanager
def example_server(
    pod: str, volume: Path, api: FakeAPIServer, sa: Path, token_ttl: str | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The example server as pod, acknowledging on api; yields its base URL once it serves."""
    port = free_port()
    env = {
        **os.environ,
        "POD_NAME": pod,
        "POD_NAMESPACE": "mcp",
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": api.url.rsplit(":", 1)[1],
    }
    args = ["--listen", f"127.0.0.1:{port}", "--keyring-dir", str(volume), "--keyring-secret", "weather"]
    args += ["--serviceaccount-dir", str(sa), "--server", "weather"]
    if token_ttl is not None:
        args += ["--token-ttl", token_ttl]  # a Go duration, as the Go server takes it
    proc = subprocess.Popen([sys.executable, str(SERVER), *args], env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                get(base + "/healthz")
                break
            except OSError:
                assert proc.poll() is None, "the example server exited"
                assert time.monotonic() < deadline, "the example server did not come up"
                time.sleep(0.1)
        yield base, proc
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, SecretVolume, FakeAPIServer]]:
    api = FakeAPIServer(tmp_path)
    sa = api.service_account(tmp_path / "sa")
    volume = SecretVolume(tmp_path / "keyring", {"keyring.json": keyring_json(A), "token-ttl": b"120"})
    try:
        with example_server("weather-0", volume.dir, api, sa) as (base, _):
            yield base, volume, api
    finally:
        api.close()


def debug(base: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(get(base + "/debug/keyring")[1])
    return doc


def test_example_server(served: tuple[str, SecretVolume, FakeAPIServer]) -> None:
    base, volume, api = served
    fp_a = parse_keyring(keyring_json(A)).fingerprint
    assert api.wait(lambda: debug(base)["acknowledged"] == fp_a)
    assert api.annotations["mcp/weather-0"] == {"loaded.mrtr.dev/weather": fp_a}

    async def call() -> str:
        async with Client(base + "/mcp", elicitation_callback=elicit) as client:
            result = await client.call_tool("get_weather", {"location": "Paris"})
            text = result.content[0]
            assert isinstance(text, TextContent)
            with pytest.raises(MCPError, match="Invalid or expired requestState"):
                await client.session.call_tool(
                    "get_weather", {"location": "Paris"}, request_state="v1.AAAA", allow_input_required=True
                )
            # A token of Paris sent back for Rome: the codec opens it, the SDK's boundary refuses it.
            first = await client.session.call_tool("get_weather", {"location": "Paris"}, allow_input_required=True)
            assert isinstance(first, InputRequiredResult) and first.request_state is not None
            with pytest.raises(MCPError, match="Invalid or expired requestState"):
                await client.session.call_tool(
                    "get_weather",
                    {"location": "Rome"},
                    request_state=first.request_state,
                    input_responses={"github_login": ElicitResult(action="accept", content={"name": "octocat"})},
                    allow_input_required=True,
                )
            return text.text

    assert asyncio.run(call()) == "Sunny in Paris for octocat"
    d = debug(base)
    assert d["completed"] == 1 and d["rejected"] == 1  # what the codec refused
    opened = 'mrtr_consumer_tokens_opened_total{format="python-sdk",result="%s"} %d\n'
    text = get(base + "/metrics")[1].decode()
    for result, n in [("ok", 1), ("malformed", 1), ("binding_mismatch", 1), ("expired", 0)]:
        assert opened % (result, n) in text, text
    assert d["keyIds"] == ["key-a"] and d["sealKey"] == "key-a"

    volume.update({"keyring.json": keyring_json(B, A), "token-ttl": b"120"})
    fp = parse_keyring(keyring_json(B, A)).fingerprint
    assert api.wait(lambda: debug(base)["acknowledged"] == fp)
    d = debug(base)
    assert d["sealKey"] == "key-b" and d["keyIds"] == ["key-b", "key-a"]
    assert "YWFh" not in json.dumps(d)  # no key bytes


def test_example_replicas_through_a_rotation(tmp_path: Path) -> None:
    """Three example server processes behind a round-robin client, one rotation (accept, seal,
    drop after token-ttl), each phase once every pod acknowledged: 0 rejected on every replica."""
    api = FakeAPIServer(tmp_path)
    sa = api.service_account(tmp_path / "sa")
    phases = [(A,), (A, B), (B, A), (B,)]
    volume = SecretVolume(tmp_path / "keyring", {"keyring.json": keyring_json(*phases[0]), "token-ttl": b"2"})
    pods = [f"weather-{i}" for i in range(3)]

    def acknowledged(fp: str) -> bool:
        return all(api.annotations.get(f"mcp/{p}", {}).get("loaded.mrtr.dev/weather") == fp for p in pods)

    try:
        with ExitStack() as stack:
            bases = [stack.enter_context(example_server(p, volume.dir, api, sa, "2s"))[0] for p in pods]
            ports = [int(b.rsplit(":", 1)[1]) for b in bases]

            async def rotate() -> tuple[int, list[str]]:
                calls, errors = 0, []
                stop = asyncio.Event()

                async def traffic(client: Client) -> None:
                    nonlocal calls
                    while not stop.is_set():
                        try:
                            await client.call_tool("get_weather", {"location": f"city-{calls}"})
                            calls += 1
                        except Exception as e:
                            errors.append(str(e))

                async with httpx2.AsyncClient(transport=RoundRobin(ports)) as http:
                    url = bases[0] + "/mcp"
                    async with Client(streamable_http_client(url, http_client=http), elicitation_callback=elicit) as c:
                        task = asyncio.create_task(traffic(c))
                        for n, keys in enumerate(phases):
                            if n > 0:
                                if len(keys) < len(phases[n - 1]):
                                    await asyncio.sleep(2.5)  # token-ttl, then the old key goes
                                volume.update({"keyring.json": keyring_json(*keys), "token-ttl": b"2"})
                            fp = parse_keyring(keyring_json(*keys)).fingerprint
                            assert await asyncio.to_thread(api.wait, partial(acknowledged, fp)), f"phase {n}"
                            before = calls
                            while calls < before + 3:
                                await asyncio.sleep(0.05)
                        stop.set()
                        await task
                return calls, errors

            calls, errors = asyncio.run(asyncio.wait_for(rotate(), 120))
            assert errors == []
            stats = [debug(b) for b in bases]
            assert sum(d["completed"] for d in stats) == calls
            assert [d["rejected"] for d in stats] == [0, 0, 0]
            assert all(d["keyIds"] == ["key-b"] for d in stats)
    finally:
        api.close()
