# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""A fake Kubernetes API server over TLS that records acknowledgements (Pod merge patches)."""

from __future__ import annotations

import datetime
import http.server
import ipaddress
import json
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def make_certs(directory: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1 signed by it: (ca.crt, server.crt, server.key)."""
    now = datetime.datetime.now(datetime.UTC)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("fake-ca"))
        .issuer_name(name("fake-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name("kubernetes"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = directory / "ca.crt", directory / "server.crt", directory / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


@dataclass
class Patch:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


# What the server does with one request: answer (status, body); "drop": read it and close the
# connection without an answer; "applied-drop": the same, after applying the patch (a lost answer).
Action = tuple[int, bytes] | str


class FakeAPIServer:
    """Answers PATCH /api/v1/namespaces/<ns>/pods/<pod>: applies the merge patch's annotations to its
    pods and records every request. plan(pod) returns the next action for a request of that pod."""

    def __init__(self, directory: Path, token: str = "the-token") -> None:
        self.ca, crt, key = make_certs(directory)
        self.cert, self.key = crt, key
        self.token = token
        self.requests: list[Patch] = []
        self.annotations: dict[str, dict[str, str]] = {}
        self.plan: Callable[[str], Action] = lambda pod: (200, b"{}")
        self.changed = threading.Condition()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_PATCH(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                url = urllib.parse.urlsplit(self.path)
                parts = url.path.split("/")
                pod = "/".join(parts[4:7:2]) if len(parts) == 7 else url.path
                patch = Patch(
                    "PATCH", url.path, urllib.parse.parse_qs(url.query), dict(self.headers.items()), json.loads(raw)
                )
                action = outer.plan(pod)
                with outer.changed:
                    outer.requests.append(patch)
                    if action == "applied-drop" or (isinstance(action, tuple) and action[0] // 100 == 2):
                        notes = patch.body.get("metadata", {}).get("annotations", {})
                        outer.annotations.setdefault(pod, {}).update(notes)
                    outer.changed.notify_all()
                if action in ("drop", "applied-drop"):
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                assert isinstance(action, tuple)
                status, body = action
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(crt, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def service_account(self, directory: Path, namespace: str = "mcp") -> Path:
        """A service account directory: token, ca.crt, namespace."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "token").write_text(self.token + "\n")
        (directory / "ca.crt").write_bytes(self.ca.read_bytes())
        (directory / "namespace").write_text(namespace)
        return directory

    def wait(self, condition: Callable[[], bool], timeout: float = 30.0) -> bool:
        """Wait until condition() holds, re-checked on every request and every 10 ms (a reporter
        records its acknowledgement after the answer); False after timeout."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while not condition():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(min(left, 0.01))
            return True

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
