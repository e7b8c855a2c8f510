# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
"""A JSON token stream that accepts, rejects and decodes exactly as Go's encoding/json Decoder.Token.

keyring.json is checked by Go's keyring.Parse, which walks Go's token stream. The standard library's
json module differs from it at the edges (it takes a UTF-16 or UTF-32 document, keeps lone surrogates,
rejects invalid UTF-8, reads NaN), so this module follows Go instead: the same grammar, the same
decoding of strings (invalid UTF-8 and lone surrogates become U+FFFD, byte by byte, as Go does) and
the same error offsets, so that an error names the same byte as the Go library's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

WHITESPACE: Final = b" \t\n\r"


class Delim(str):
    """One of the four delimiters [ ] { }, as Go's json.Delim."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Number:
    """A number token, kept as its text (Go's UseNumber): a keyring never wants one."""

    text: str


Token = Delim | Number | str | bool | None


class JSONSyntaxError(Exception):
    """Malformed JSON; offset is the byte offset Go's SyntaxError reports."""

    def __init__(self, offset: int) -> None:
        super().__init__(f"invalid JSON at byte offset {offset}")
        self.offset = offset


class UnexpectedEOF(Exception):
    """The document ends inside a value (Go's io.ErrUnexpectedEOF or io.EOF mid-stream)."""


class EndOfInput(Exception):
    """No more tokens: only whitespace is left (Go's io.EOF from Token)."""


# Go's tokenState values.
_TOP, _ARR_START, _ARR_VALUE, _ARR_COMMA, _OBJ_START, _OBJ_KEY, _OBJ_COLON, _OBJ_VALUE, _OBJ_COMMA = range(9)
_VALUE_ALLOWED: Final = frozenset({_TOP, _ARR_START, _ARR_VALUE, _OBJ_VALUE})

_HEX: Final = frozenset(b"0123456789abcdefABCDEF")
_DIGITS: Final = frozenset(b"0123456789")
_SIMPLE_ESCAPES: Final = {
    ord('"'): '"',
    ord("\\"): "\\",
    ord("/"): "/",
    ord("b"): "\b",
    ord("f"): "\f",
    ord("n"): "\n",
    ord("r"): "\r",
    ord("t"): "\t",
}


class Decoder:
    """Go's json.Decoder over one in-memory document, with UseNumber, for the Token API only."""

    def __init__(self, data: bytes) -> None:
        self._buf = data
        self._pos = 0  # Go's scanp (the buffer never shifts: InputOffset is the position)
        # Go's scanner byte count: it advances only over the bytes of values read by Decode (the
        # scalars), never over delimiters or whitespace, and a scanner error reports it.
        self._scanned = 0
        self._state = _TOP
        self._stack: list[int] = []

    def _peek(self) -> int | None:
        buf, i = self._buf, self._pos
        while i < len(buf) and buf[i] in WHITESPACE:
            i += 1
        self._pos = i
        return buf[i] if i < len(buf) else None

    def more(self) -> bool:
        c = self._peek()
        return c is not None and c not in b"]}"

    def input_offset(self) -> int:
        return self._pos

    def _error(self) -> JSONSyntaxError:
        return JSONSyntaxError(self._pos)

    def _value_end(self) -> None:
        if self._state in (_ARR_START, _ARR_VALUE):
            self._state = _ARR_COMMA
        elif self._state == _OBJ_VALUE:
            self._state = _OBJ_COMMA

    def token(self) -> Token:
        while True:
            c = self._peek()
            if c is None:
                raise EndOfInput
            if c in b"[{":
                if self._state not in _VALUE_ALLOWED:
                    raise self._error()
                self._pos += 1
                self._stack.append(self._state)
                self._state = _ARR_START if c == ord("[") else _OBJ_START
                return Delim(chr(c))
            if c in b"]}":
                if c == ord("]") and self._state not in (_ARR_START, _ARR_COMMA):
                    raise self._error()
                if c == ord("}") and self._state not in (_OBJ_START, _OBJ_COMMA):
                    raise self._error()
                self._pos += 1
                self._state = self._stack.pop()
                self._value_end()
                return Delim(chr(c))
            if c == ord(":"):
                if self._state != _OBJ_COLON:
                    raise self._error()
                self._pos += 1
                self._state = _OBJ_VALUE
                continue
            if c == ord(","):
                if self._state == _ARR_COMMA:
                    self._pos += 1
                    self._state = _ARR_VALUE
                    continue
                if self._state == _OBJ_COMMA:
                    self._pos += 1
                    self._state = _OBJ_KEY
                    continue
                raise self._error()
            if c == ord('"') and self._state in (_OBJ_START, _OBJ_KEY):
                name = self._scalar()
                self._state = _OBJ_COLON
                assert isinstance(name, str)
                return name
            if self._state not in _VALUE_ALLOWED:
                raise self._error()
            value = self._scalar()
            self._value_end()
            return value

    # The scalar scanner: Go's Decode of one string, number or literal, starting at a non-space byte.

    def _scalar(self) -> Token:
        buf, start = self._buf, self._pos
        c = buf[start]
        if c == ord('"'):
            end, text = self._string(start)
        elif c == ord("-") or c in _DIGITS:
            end = self._number(start)
            text = None
        elif c in b"tfn":
            word = {ord("t"): b"true", ord("f"): b"false", ord("n"): b"null"}[c]
            for k in range(1, len(word)):
                i = start + k
                if i >= len(buf):
                    raise UnexpectedEOF
                if buf[i] != word[k]:
                    self._fail(i)
            end = start + len(word)
        else:
            self._fail(start)
        self._scanned += end - start
        self._pos = end
        if c == ord('"'):
            assert text is not None
            return text
        if c == ord("t"):
            return True
        if c == ord("f"):
            return False
        if c == ord("n"):
            return None
        return Number(buf[start:end].decode("ascii"))

    def _fail(self, i: int) -> None:
        # Go's scanner counts the offending byte too.
        raise JSONSyntaxError(self._scanned + (i - self._pos) + 1)

    def _number(self, start: int) -> int:
        buf, n = self._buf, len(self._buf)
        i = start
        if buf[i] == ord("-"):
            i += 1
            if i >= n:
                raise UnexpectedEOF
            if buf[i] not in _DIGITS:
                self._fail(i)
        if buf[i] == ord("0"):
            i += 1
        else:
            while i < n and buf[i] in _DIGITS:
                i += 1
        if i < n and buf[i] == ord("."):
            i += 1
            if i >= n:
                raise UnexpectedEOF
            if buf[i] not in _DIGITS:
                self._fail(i)
            while i < n and buf[i] in _DIGITS:
                i += 1
        if i < n and buf[i] in b"eE":
            i += 1
            if i < n and buf[i] in b"+-":
                i += 1
            if i >= n:
                raise UnexpectedEOF
            if buf[i] not in _DIGITS:
                self._fail(i)
            while i < n and buf[i] in _DIGITS:
                i += 1
        return i

    def _string(self, start: int) -> tuple[int, str]:
        """Scan the string at start (Go's scanner), then decode it (Go's unquote)."""
        buf, n = self._buf, len(self._buf)
        i = start + 1
        while True:
            if i >= n:
                raise UnexpectedEOF
            c = buf[i]
            if c == ord('"'):
                break
            if c == ord("\\"):
                i += 1
                if i >= n:
                    raise UnexpectedEOF
                e = buf[i]
                if e == ord("u"):
                    for _ in range(4):
                        i += 1
                        if i >= n:
                            raise UnexpectedEOF
                        if buf[i] not in _HEX:
                            self._fail(i)
                elif e not in _SIMPLE_ESCAPES:
                    self._fail(i)
            elif c < 0x20:
                self._fail(i)
            i += 1
        return i + 1, _unquote(buf[start + 1 : i])


def _u4(raw: bytes, i: int) -> int:
    """The code unit of the \\uXXXX escape at raw[i:], or -1 if there is none."""
    if i + 6 > len(raw) or raw[i] != ord("\\") or raw[i + 1] != ord("u"):
        return -1
    return int(raw[i + 2 : i + 6], 16)


def _unquote(raw: bytes) -> str:
    """Decode a scanned string body as Go does: escapes, U+FFFD for lone surrogates and bad UTF-8."""
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == ord("\\"):
            e = raw[i + 1]
            if e != ord("u"):
                out.append(_SIMPLE_ESCAPES[e])
                i += 2
                continue
            r = _u4(raw, i)
            i += 6
            if 0xD800 <= r < 0xE000:
                r2 = _u4(raw, i)
                if 0xD800 <= r < 0xDC00 and 0xDC00 <= r2 < 0xE000:
                    out.append(chr(0x10000 + ((r - 0xD800) << 10) + (r2 - 0xDC00)))
                    i += 6
                    continue
                r = 0xFFFD
            out.append(chr(r))
        elif c < 0x80:
            out.append(chr(c))
            i += 1
        else:
            ch, size = _decode_rune(raw, i)
            out.append(ch)
            i += size
    return "".join(out)


def _decode_rune(raw: bytes, i: int) -> tuple[str, int]:
    """Go's utf8.DecodeRune: one valid sequence, or U+FFFD for one byte."""
    c = raw[i]
    size = 2 if 0xC2 <= c <= 0xDF else 3 if 0xE0 <= c <= 0xEF else 4 if 0xF0 <= c <= 0xF4 else 0
    if size:
        try:
            # The strict decoder refuses what Go refuses: overlong forms, surrogates, > U+10FFFF.
            return raw[i : i + size].decode("utf-8"), size
        except UnicodeDecodeError:
            pass
    return "\ufffd", 1
