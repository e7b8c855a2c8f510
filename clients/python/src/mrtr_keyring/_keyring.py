# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""keyring.json and token-ttl: parsed exactly as the Go library's keyring.Parse and ParseTokenTTL."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from dataclasses import dataclass, field
from typing import Final

from ._json import Decoder, Delim, EndOfInput, JSONSyntaxError, Number, Token, UnexpectedEOF

MAX_KEYS: Final = 8
MIN_SECRET_BYTES: Final = 32
MAX_ID_LENGTH: Final = 32
MAX_DOCUMENT_BYTES: Final = 1 << 20
MAX_TOKEN_TTL_SECONDS: Final = 900
SECRET_DATA_KEY: Final = "keyring.json"  # noqa: S105 (a file name)
TOKEN_TTL_DATA_KEY: Final = "token-ttl"  # noqa: S105 (a file name)

_FINGERPRINT_TAG: Final = b"mrtr-keyring-fingerprint-v1\x00"
_ID_BYTES: Final = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_STD_B64: Final = re.compile(rb"\A(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?\Z")
# The SDK's key id: mcp.server.request_state derives it from the key bytes (see Key.python_kid).
_SDK_KDF_INFO: Final = b"mcp/request-state/v1/aes-256-gcm"
_SDK_KID_INFO: Final = b"mcp/request-state/v1/kid:"


class KeyringError(ValueError):
    """A keyring.json or token-ttl file that is not valid. The message names the entry (keys[i], and
    its id when that is valid) and never contains key bytes or any part of a secret string.

    index is the position of the bad entry, or None when the problem is not in one entry.
    """

    def __init__(self, message: str, *, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


@dataclass(frozen=True, slots=True, eq=False)
class Key:
    """One entry of a keyring: a public id and the secret bytes. repr shows the length only."""

    id: str
    secret: bytes = field(repr=False)

    def __repr__(self) -> str:
        return f"Key(id={self.id!r}, secret=<redacted {len(self.secret)} bytes>)"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Key):
            return NotImplemented
        return self.id == other.id and hmac.compare_digest(self.secret, other.secret)

    def __hash__(self) -> int:
        return hash(self.id)

    @property
    def python_kid(self) -> str:
        """The 4-byte kid (8 hex digits) that tokens of the Python SDK's built-in codec carry when they
        are sealed with this key: derived from the key, safe to show, and what traces a token to it."""
        return hashlib.sha256(_SDK_KID_INFO + _hkdf_sha256(self.secret, _SDK_KDF_INFO)).digest()[:4].hex()


@dataclass(frozen=True, slots=True)
class Keyring:
    """An ordered, validated keyring: keys[0] seals, every key opens.

    fingerprint is Go's Keyring.Fingerprint(): what a pod acknowledges. token_ttl is the Secret's
    token-ttl in seconds (the longest lifetime a token may be sealed for), None when there is none.
    """

    keys: tuple[Key, ...]
    fingerprint: str
    token_ttl: int | None = None

    @property
    def primary(self) -> Key:
        return self.keys[0]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(k.id for k in self.keys)

    def __repr__(self) -> str:
        return f"Keyring(ids={list(self.ids)!r}, fingerprint={self.fingerprint!r}, token_ttl={self.token_ttl!r})"


def fingerprint(keys: tuple[Key, ...] | list[Key]) -> str:
    """Go's fingerprint: SHA-256 of a domain tag, then each key as length-prefixed id and secret
    (4-byte big-endian lengths), cut to 16 hex digits."""
    h = hashlib.sha256(_FINGERPRINT_TAG)
    for k in keys:
        ident = k.id.encode()
        h.update(len(ident).to_bytes(4, "big"))
        h.update(ident)
        h.update(len(k.secret).to_bytes(4, "big"))
        h.update(k.secret)
    return h.digest()[:8].hex()


def validate_id(ident: str) -> str | None:
    """Go's ValidateID: None for 1 to 32 characters of A-Za-z0-9_-, else what is wrong (never the id)."""
    raw = ident.encode("utf-8", "surrogatepass")
    if not raw:
        return f"id is empty: ids are 1 to {MAX_ID_LENGTH} characters of A-Za-z0-9_-"
    if len(raw) > MAX_ID_LENGTH:
        return f"id is {len(raw)} bytes long: at most {MAX_ID_LENGTH} characters of A-Za-z0-9_- are allowed"
    for i, c in enumerate(raw):
        if c not in _ID_BYTES:
            return f"id has a byte outside A-Za-z0-9_- at offset {i}"
    return None


def parse_keyring(data: bytes) -> Keyring:
    """Decode and validate a keyring.json document, as strictly as Go's keyring.Parse:

        {"keys":[{"id":"<id>","secret":"<standard base64 of the key bytes>"}, ...]}

    It rejects unknown fields, duplicate object keys, null, values of the wrong type, secrets that
    are not canonical standard base64 (with padding, no line breaks), data after the object, more
    than 8 keys, duplicate ids, ids outside 1 to 32 characters of A-Za-z0-9_-, secrets under 32 bytes
    and documents over 1 MiB. It raises KeyringError with the message Go's Parse returns.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"parse_keyring takes bytes, not {type(data).__name__}")
    data = bytes(data)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise KeyringError(f"keyring.json: document is {len(data)} bytes: at most {MAX_DOCUMENT_BYTES} are allowed")
    try:
        keys = _Parser(data).document()
    except KeyringError as e:
        raise KeyringError(f"keyring.json: {e}", index=e.index) from None
    return Keyring(keys=tuple(keys), fingerprint=fingerprint(keys))


def parse_token_ttl(data: bytes) -> int:
    """Go's ParseTokenTTL: whole seconds from 1 to 900 in ASCII decimal, no sign or leading zeros,
    one trailing newline allowed. Returns the seconds; raises KeyringError."""
    text = data[:-1] if data.endswith(b"\n") else data
    if re.fullmatch(rb"[1-9][0-9]{0,2}", text) is None or int(text) > MAX_TOKEN_TTL_SECONDS:
        raise KeyringError(
            f"{TOKEN_TTL_DATA_KEY} is {_go_quote(data, 20)}: want whole seconds from 1 to {MAX_TOKEN_TTL_SECONDS}"
        )
    return int(text)


def _hkdf_sha256(secret: bytes, info: bytes) -> bytes:
    """HKDF-SHA256 (RFC 5869) with no salt, 32 bytes: the SDK's key derivation."""
    prk = hmac.new(b"\x00" * 32, secret, hashlib.sha256).digest()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()


def _kind(tok: Token) -> str:
    """Go's kind: the JSON type of a token, for errors."""
    if tok is None:
        return "null"
    if isinstance(tok, bool):
        return "a boolean"
    if isinstance(tok, Number):
        return "a number"
    if isinstance(tok, Delim):
        return "a list" if tok == "[" else "an object"
    return "a string"


def _show_name(name: str) -> str:
    """A field name quoted if it looks like a name, else its length only (it may be a pasted secret)."""
    if validate_id(name) is None:
        return f'"{name}"'
    return f"(a {len(name.encode('utf-8', 'surrogatepass'))}-byte name, not shown)"


class _Parser:
    """Go's parser, over the Go-equivalent token stream."""

    def __init__(self, data: bytes) -> None:
        self.dec = Decoder(data)

    def _syntax(self, err: Exception, where: str) -> KeyringError:
        suffix = f" {where}" if where else ""
        if isinstance(err, JSONSyntaxError):
            return KeyringError(f"invalid JSON at byte offset {err.offset}{suffix}")
        return KeyringError(f"unexpected end of JSON input{suffix}")

    def _token(self, where: str) -> Token:
        try:
            return self.dec.token()
        except (JSONSyntaxError, UnexpectedEOF, EndOfInput) as e:
            raise self._syntax(e, where) from None

    def document(self) -> list[Key]:
        try:
            tok = self.dec.token()
        except EndOfInput:
            raise KeyringError('document is empty: want {"keys":[...]}') from None
        except (JSONSyntaxError, UnexpectedEOF) as e:
            raise self._syntax(e, "") from None
        if not (isinstance(tok, Delim) and tok == "{"):
            raise KeyringError(f'document is {_kind(tok)}: want an object {{"keys":[...]}}')
        keys: list[Key] = []
        seen = False
        while self.dec.more():
            name = self._name("")
            if name != "keys":
                raise KeyringError(f'unknown field {_show_name(name)} at top level: only "keys" is allowed')
            if seen:
                raise KeyringError('duplicate field "keys" at top level')
            seen = True
            keys = self._keys()
        self._token("")  # the closing brace
        if not seen:
            raise KeyringError('missing field "keys"')
        try:
            self.dec.token()
        except EndOfInput:
            return keys
        except (JSONSyntaxError, UnexpectedEOF):
            pass
        raise KeyringError("unexpected data after the keyring object")

    def _keys(self) -> list[Key]:
        tok = self._token('in "keys"')
        if not (isinstance(tok, Delim) and tok == "["):
            raise KeyringError(f'"keys" is {_kind(tok)}: want a list of 1 to {MAX_KEYS} keys')
        keys: list[Key] = []
        ids: dict[str, int] = {}
        i = 0
        while self.dec.more():
            if i == MAX_KEYS:
                raise KeyringError(f'"keys" has more than {MAX_KEYS} entries')
            keys.append(self._entry(i, ids))
            i += 1
        self._token('in "keys"')  # the closing bracket
        if not keys:
            raise KeyringError(f'"keys" is empty: a keyring needs 1 to {MAX_KEYS} keys')
        return keys

    def _entry(self, i: int, ids: dict[str, int]) -> Key:
        where = f"in keys[{i}]"
        tok = self._token(where)
        if not (isinstance(tok, Delim) and tok == "{"):
            raise KeyringError(f'keys[{i}] is {_kind(tok)}: want an object {{"id":...,"secret":...}}', index=i)
        ident = secret = ""
        have_id = have_secret = False
        problem: str | None = None
        seen: set[str] = set()
        while self.dec.more():
            name = self._name(where)
            if name in seen and problem is None:
                problem = f"duplicate field {_show_name(name)}"
            seen.add(name)
            value = self._value(where)
            is_string = isinstance(value, str) and not isinstance(value, Delim)
            if name not in ("id", "secret"):
                if problem is None:
                    problem = f'unknown field {_show_name(name)}: only "id" and "secret" are allowed'
            elif not is_string:
                if problem is None:
                    problem = f'"{name}" is {_kind(value)}: want a string'
            elif name == "id" and not have_id:
                assert isinstance(value, str)
                ident, have_id = value, True
            elif name == "secret" and not have_secret:
                assert isinstance(value, str)
                secret, have_secret = value, True
        self._token(where)  # the closing brace

        id_err = validate_id(ident)
        label = f'keys[{i}] (id "{ident}")' if have_id and id_err is None else f"keys[{i}]"

        def fail(msg: str) -> KeyringError:
            return KeyringError(f"{label}: {msg}", index=i)

        if problem is not None:
            raise fail(problem)
        if not have_id:
            raise fail('missing field "id"')
        if not have_secret:
            raise fail('missing field "secret"')
        if id_err is not None:
            raise fail(id_err)
        if ident in ids:
            raise fail(f"id already used by keys[{ids[ident]}]")
        ids[ident] = i
        raw = secret.encode("utf-8", "surrogatepass")
        # Only the canonical spelling: RFC 4648 alphabet, padding, no line breaks, zero padding bits.
        try:
            if _STD_B64.match(raw) is None:
                raise ValueError
            b = base64.b64decode(raw, validate=True)
            if base64.b64encode(b) != raw:
                raise ValueError
        except (ValueError, binascii.Error):
            raise fail("secret is not standard base64 (RFC 4648 alphabet, with padding, no line breaks)") from None
        if len(b) < MIN_SECRET_BYTES:
            raise fail(f"secret is {len(b)} bytes: at least {MIN_SECRET_BYTES} are required")
        return Key(ident, b)

    def _name(self, where: str) -> str:
        tok = self._token(where)
        if not isinstance(tok, str) or isinstance(tok, Delim):
            raise KeyringError(f"invalid object key {where}")
        return tok

    def _value(self, where: str) -> Token:
        """One value: a scalar as it is; an object or list skipped and returned as its delimiter."""
        tok = self._token(where)
        if isinstance(tok, Delim):
            depth = 1
            while depth > 0:
                t = self._token(where)
                if isinstance(t, Delim):
                    depth += 1 if t in ("{", "[") else -1
            return tok
        return tok


def _go_quote(data: bytes, limit: int) -> str:
    """Go's %.<limit>q of a byte string: the first limit runes, quoted with Go's escapes."""
    out = ['"']
    i = runes = 0
    while i < len(data) and runes < limit:
        c = data[i]
        if c < 0x80:
            ch, size = chr(c), 1
        else:
            size = 2 if 0xC2 <= c <= 0xDF else 3 if 0xE0 <= c <= 0xEF else 4 if 0xF0 <= c <= 0xF4 else 0
            try:
                ch = data[i : i + size].decode("utf-8") if size else ""
            except UnicodeDecodeError:
                ch = ""
            if not ch:
                out.append(f"\\x{c:02x}")
                i += 1
                runes += 1
                continue
        i += size
        runes += 1
        out.append(_go_quote_rune(ch))
    out.append('"')
    return "".join(out)


def _go_quote_rune(ch: str) -> str:
    named = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
    if ch == '"' or ch == "\\":
        return "\\" + ch
    if ch in named:
        return named[ch]
    o = ord(ch)
    if ch.isprintable() or ch == " ":
        return ch
    if o < 0x10000:
        return f"\\x{o:02x}" if o < 0x80 else f"\\u{o:04x}"
    return f"\\U{o:08x}"
