# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""MRTR traffic from the official Python SDK's own client: workers call get_weather (round 1
elicits a login, the client's elicitation callback answers, the SDK retries with the sealed state)
against one MCP endpoint until SIGTERM or SIGINT, then print one JSON line of counts, the e2e
harness's Counts: completed, rejected (-32602, the state did not open), failed, crossReplica
(sealed by one replica, opened by another).

    python3 client.py --url http://127.0.0.1:8080/mcp --workers 4
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, ElicitRequestParams, ElicitResult


async def elicit(context: object, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "octocat"})


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True)
    p.add_argument("--workers", type=int, default=4)
    a = p.parse_args()
    counts = {"completed": 0, "rejected": 0, "failed": 0, "crossReplica": 0}
    errors: list[str] = []
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    async def worker(n: int) -> None:
        i = 0
        while not stop.is_set():
            try:
                async with Client(streamable_http_client(a.url), elicitation_callback=elicit) as client:
                    while not stop.is_set():
                        i += 1
                        try:
                            r = await client.call_tool("get_weather", {"location": f"city-{n}-{i}"})
                        except Exception as e:  # an MCPError -32602 is a rejected requestState
                            if "Invalid or expired requestState" in str(e):
                                counts["rejected"] += 1
                            else:
                                counts["failed"] += 1
                            errors.append(f"worker {n}: {e!r}"[:300])
                            continue
                        if not isinstance(r, CallToolResult) or r.is_error:
                            counts["failed"] += 1
                            errors.append(f"worker {n}: tool error {r!r}"[:300])
                            continue
                        counts["completed"] += 1
                        sc = r.structured_content
                        if isinstance(sc, dict) and sc.get("sealedBy") != sc.get("openedBy"):
                            counts["crossReplica"] += 1
            except Exception as e:  # the session itself failed: count it, start a new one
                if not stop.is_set():
                    counts["failed"] += 1
                    errors.append(f"worker {n}: session: {e!r}"[:300])
                    await asyncio.sleep(0.1)

    tasks = [asyncio.create_task(worker(n)) for n in range(a.workers)]
    await stop.wait()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    print(json.dumps({**counts, "errors": errors[-20:]}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
