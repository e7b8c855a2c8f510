# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""AckReporter sends pkg/ack's request to a fake API server over TLS, and keeps retrying."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mrtr_keyring import FIELD_MANAGER, AckReporter, KeyringWatcher, annotation_key
from mrtr_keyring._ack import AckError

from .fakeapi import Action, FakeAPIServer
from .kubelet import SecretVolume, keyring_json


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeAPIServer]:
    server = FakeAPIServer(tmp_path)
    yield server
    server.close()


def reporter(api: FakeAPIServer, tmp_path: Path, errors: list[Exception] | None = None, **kw: object) -> AckReporter:
    sa = api.service_account(tmp_path / "sa")
    return AckReporter(
        "weather-keyring",
        pod_name="weather-0",
        api_server=api.url,
        service_account_dir=sa,
        on_error=None if errors is None else errors.append,
        min_backoff=0.01,
        max_backoff=0.05,
        **kw,  # type: ignore[arg-type]
    )


def test_the_request(api: FakeAPIServer, tmp_path: Path) -> None:
    with reporter(api, tmp_path) as r:
        r.report("0123456789abcdef")
        assert api.wait(lambda: r.acknowledged == "0123456789abcdef" or len(api.requests) > 0)
        assert api.wait(lambda: r.acknowledged == "0123456789abcdef")
    (req,) = api.requests
    assert req.method == "PATCH"
    assert req.path == "/api/v1/namespaces/mcp/pods/weather-0"
    assert req.query == {"fieldManager": [FIELD_MANAGER]}
    assert FIELD_MANAGER == "mrtr-ack"
    assert req.headers["Authorization"] == "Bearer the-token"
    assert req.headers["Content-Type"] == "application/merge-patch+json"
    assert req.headers["Accept"] == "application/json"
    assert req.body == {"metadata": {"annotations": {"loaded.mrtr.dev/weather-keyring": "0123456789abcdef"}}}
    assert api.annotations["mcp/weather-0"] == {"loaded.mrtr.dev/weather-keyring": "0123456789abcdef"}


def test_retries_refusals_and_lost_answers(api: FakeAPIServer, tmp_path: Path) -> None:
    plan: list[Action] = [
        (403, json.dumps({"kind": "Status", "message": 'pods "weather-0" is forbidden: the-token'}).encode()),
        (500, b"<html>upstream the-token broke</html>"),
        "drop",  # applied or not, the answer is lost: the reporter must send again
        (200, b"{}"),
    ]
    api.plan = lambda pod: plan.pop(0) if plan else (200, b"{}")
    errors: list[Exception] = []
    with reporter(api, tmp_path, errors) as r:
        r.report("fp1")
        assert api.wait(lambda: r.acknowledged == "fp1")
    assert len(api.requests) == 4
    assert all(q.body == api.requests[0].body for q in api.requests)
    assert len(errors) == 3
    assert "403" in str(errors[0]) and "mrtr-keyring-consumer" in str(errors[0])
    assert "500" in str(errors[1])
    assert "weather-0" in str(errors[2])
    for e in errors:
        assert "the-token" not in str(e)


def test_a_newer_fingerprint_replaces_a_failing_one(api: FakeAPIServer, tmp_path: Path) -> None:
    api.plan = lambda pod: (
        (200, b"{}")
        if api.requests and api.requests[-1].body["metadata"]["annotations"]["loaded.mrtr.dev/weather-keyring"] == "new"
        else (503, b"")
    )
    with reporter(api, tmp_path, []) as r:
        r.report("old")
        assert api.wait(lambda: len(api.requests) >= 2)
        r.report("new")
        assert api.wait(lambda: r.acknowledged == "new")


def test_token_read_for_every_request(api: FakeAPIServer, tmp_path: Path) -> None:
    with reporter(api, tmp_path) as r:
        r.report("fp1")
        assert api.wait(lambda: r.acknowledged == "fp1")
        (tmp_path / "sa" / "token").write_text("rotated-token")
        r.report("fp2")
        assert api.wait(lambda: r.acknowledged == "fp2")
    assert [q.headers["Authorization"] for q in api.requests] == ["Bearer the-token", "Bearer rotated-token"]


def test_follow_acknowledges_every_keyring(api: FakeAPIServer, tmp_path: Path) -> None:
    vol = SecretVolume(tmp_path / "keyring", {"keyring.json": keyring_json(("a", b"a" * 32))})
    w = KeyringWatcher(tmp_path / "keyring")
    with reporter(api, tmp_path) as r:
        r.follow(w)
        assert api.wait(lambda: r.acknowledged == w.keyring.fingerprint)
        vol.update({"keyring.json": keyring_json(("b", b"b" * 32), ("a", b"a" * 32))})
        w.reload()
        assert api.wait(lambda: r.acknowledged == w.keyring.fingerprint)


def test_configuration_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("POD_NAME", "POD_NAMESPACE", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ValueError, match="no secret"):
        AckReporter("")
    with pytest.raises(ValueError, match="not a Secret name"):
        AckReporter("Weather_Keys")
    with pytest.raises(ValueError, match=r"no pod name.*POD_NAME"):
        AckReporter("weather", service_account_dir=tmp_path)
    with pytest.raises(ValueError, match=r"no namespace.*missing or empty"):
        AckReporter("weather", pod_name="p", service_account_dir=tmp_path)
    with pytest.raises(ValueError, match="no API server"):
        AckReporter("weather", pod_name="p", namespace="n", service_account_dir=tmp_path)
    with pytest.raises(ValueError, match="not an https:// URL"):
        AckReporter("weather", pod_name="p", namespace="n", api_server="http://10.0.0.1", service_account_dir=tmp_path)
    with pytest.raises(ValueError, match="API server CA"):
        AckReporter("weather", pod_name="p", namespace="n", api_server="https://10.0.0.1", service_account_dir=tmp_path)


def test_annotation_key() -> None:
    assert annotation_key("weather") == "loaded.mrtr.dev/weather"
    # Go's ack.AnnotationKey for names over 63 characters: 46 of them, a dash, 16 hex digits of SHA-256.
    assert annotation_key("a" * 64) == "loaded.mrtr.dev/" + "a" * 46 + "-ffe054fe7ae0cb6d"
    assert (
        annotation_key("weather-keyring.with.dots-and-a-very-long-name-that-goes-past-63")
        == "loaded.mrtr.dev/weather-keyring.with.dots-and-a-very-long-name-3969a781363dbfbe"
    )


def test_backoff_bounds(api: FakeAPIServer, tmp_path: Path) -> None:
    r = reporter(api, tmp_path)
    for n in range(1, 40):
        d = r.backoff(n)
        assert 0.01 <= d <= 0.05


def test_resends_after_a_lost_answer(api: FakeAPIServer, tmp_path: Path) -> None:
    # fp2's patch is applied but its answer lost; the keyring then returns to fp1, acknowledged
    # before: the Pod may carry fp2, so fp1 must be sent again.
    plan: list[Action] = []
    api.plan = lambda pod: plan.pop(0) if plan else (200, b"{}")
    with reporter(api, tmp_path, []) as r:
        r.report("fp1")
        assert api.wait(lambda: r.acknowledged == "fp1")
        plan[:] = ["applied-drop", (500, b""), (500, b"")]
        r.report("fp2")
        assert api.wait(lambda: len(api.requests) >= 3)
        assert api.annotations["mcp/weather-0"]["loaded.mrtr.dev/weather-keyring"] == "fp2"
        r.report("fp1")
        assert api.wait(lambda: api.annotations["mcp/weather-0"]["loaded.mrtr.dev/weather-keyring"] == "fp1")
    sent = [q.body["metadata"]["annotations"]["loaded.mrtr.dev/weather-keyring"] for q in api.requests]
    assert sent[0] == "fp1" and "fp2" in sent and sent[-1] == "fp1"


def test_service_account_dir_from_the_environment(
    api: FakeAPIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MRTR_SERVICE_ACCOUNT_DIR", str(api.service_account(tmp_path / "elsewhere", "other")))
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    with AckReporter("weather-keyring", pod_name="p", api_server=api.url) as r:
        assert r.pod == "other/p"
        r.report("fp")
        assert api.wait(lambda: r.acknowledged == "fp")


class _TrickleServer:
    """A TLS listener with the fake API server's certificate (the CA trusts it) that reads a
    request, writes head at once and then trickle one byte every 20 ms, forever: never idle for as
    long as the reporter's timeout."""

    def __init__(self, api: FakeAPIServer, head: bytes, trickle: bytes) -> None:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(api.cert, api.key)
        self.requests = 0
        self._stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"https://127.0.0.1:{self._sock.getsockname()[1]}"

        def serve(conn: socket.socket) -> None:
            try:
                with ctx.wrap_socket(conn, server_side=True) as tls:
                    data = b""
                    while b"\r\n\r\n" not in data:
                        data += tls.recv(4096)
                    self.requests += 1
                    tls.sendall(head)
                    i = 0
                    while not self._stop.wait(0.02):
                        tls.sendall(trickle[i % len(trickle) : i % len(trickle) + 1])
                        i += 1
            except OSError:
                pass

        def accept() -> None:
            while True:
                try:
                    conn, _ = self._sock.accept()
                except OSError:
                    return
                threading.Thread(target=serve, args=(conn,), daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()

    def close(self) -> None:
        self._stop.set()
        self._sock.close()


def _direct(api: FakeAPIServer, url: str, tmp_path: Path) -> AckReporter:
    sa = api.service_account(tmp_path / "sa")
    return AckReporter("weather-keyring", pod_name="weather-0", api_server=url, service_account_dir=sa, timeout=0.3)


def test_one_deadline_bounds_a_trickled_answer(api: FakeAPIServer, tmp_path: Path) -> None:
    trickle = _TrickleServer(api, b"", b"HTTP/1.1 200 OK")
    try:
        with pytest.raises(AckError, match=r"^ack: patch pod mcp/weather-0: no answer within 0.3 s$"):
            _direct(api, trickle.url, tmp_path).publish("fp")
        assert trickle.requests == 1
    finally:
        trickle.close()


def test_an_accepted_answer_whose_body_trickles_is_accepted(api: FakeAPIServer, tmp_path: Path) -> None:
    # The status says the patch was applied; the body then trickles (Go: accepted, the drain cut).
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
    trickle = _TrickleServer(api, head, b'{"kind":"Pod"}')
    try:
        _direct(api, trickle.url, tmp_path).publish("fp")  # no AckError
        assert trickle.requests == 1
    finally:
        trickle.close()
