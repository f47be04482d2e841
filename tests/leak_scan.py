"""Scanning everything Redis holds (and any log) for true aggregates and for key-like secrets.

Used by the worker tests that crash a computation on purpose. A true value is
looked for in every reasonable form: decimal with or without thousands
separators, as a float, in scientific notation, in hex, and as a 4- or 8-byte
binary integer (a pickled or packed number); inside JSON, and inside base64
payloads (kombu keeps message bodies base64-encoded), recursively.

"Key-like": any token of 32 or more base64/hex characters that is not a UUID
(Celery's task ids and kombu's delivery tags), does not decode to readable
text and looks random (hex, or upper case, lower case and digits mixed): a
Fernet key or token, a hex secret, a sealed blob.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import redis

UUID = re.compile(rb"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
TOKEN = re.compile(rb"[A-Za-z0-9+/_-]{32,}={0,2}")


def redis_blobs(url: str) -> list[tuple[str, bytes]]:
    """(where, bytes) for EVERY key of the database and every value it holds, all types."""
    client = redis.Redis.from_url(url)
    blobs: list[tuple[str, bytes]] = []
    for key in client.scan_iter(count=1000):
        name = key.decode(errors="replace")
        blobs.append((f"key {name}", key))
        kind = client.type(key).decode()
        if kind == "string":
            values = [client.get(key) or b""]
        elif kind == "list":
            values = client.lrange(key, 0, -1)
        elif kind == "hash":
            values = [b for pair in client.hgetall(key).items() for b in pair]
        elif kind == "set":
            values = list(client.smembers(key))
        elif kind == "zset":
            values = [
                b
                for member, score in client.zrange(key, 0, -1, withscores=True)
                for b in (member, repr(score).encode())
            ]
        elif kind == "stream":
            values = [
                b for _, fields in client.xrange(key) for pair in fields.items() for b in pair
            ]
        else:  # pragma: no cover - a type this scanner does not know is itself a finding
            values = [f"unknown redis type {kind}".encode()]
        blobs.extend((f"{kind} {name}", v) for v in values)
    return blobs


def _b64decode(token: bytes) -> bytes | None:
    text = token.rstrip(b"=")
    padded = text + b"=" * (-len(text) % 4)
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            return decode(padded)
        except (binascii.Error, ValueError):
            continue
    return None


def _readable(data: bytes) -> bool:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(c.isprintable() or c in "\r\n\t" for c in text)


def _json_strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _json_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _json_strings(v)


def _random_looking(token: bytes) -> bool:
    """Hex of 32+ digits, or a mix of upper case, lower case and digits (random base64).

    Not: identifiers and paths in logs (one case, no digits mixed in).
    """
    text = token.decode()
    if re.fullmatch(r"[0-9a-fA-F]+", text):
        return True
    return bool(re.search("[A-Z]", text) and re.search("[a-z]", text) and re.search("[0-9]", text))


@dataclass
class Findings:
    values: list[tuple[str, int, str]] = field(default_factory=list)  # where, value, form
    keys: list[tuple[str, str]] = field(default_factory=list)  # where, token

    def __bool__(self) -> bool:
        return bool(self.values or self.keys)

    def __str__(self) -> str:
        lines = [f"true value {v} as {form!r} in {where}" for where, v, form in self.values]
        lines += [f"key-like token {tok[:60]!r} in {where}" for where, tok in self.keys]
        return "\n".join(lines[:40])


def number_forms(value: int) -> list[tuple[str, bytes]]:
    """Text and binary forms in which `value` could be written down."""
    forms = [
        ("decimal", str(value)),
        ("comma", f"{value:,}"),
        ("underscore", f"{value:_}"),
        ("space", f"{value:,}".replace(",", " ")),
        ("thin space", f"{value:,}".replace(",", "\u202f")),
        ("dot", f"{value:,}".replace(",", ".")),
        ("float", repr(float(value))),
        ("scientific", f"{value:.{max(len(str(abs(value))) - 1, 1)}e}"),
        ("scientific E", f"{value:.{max(len(str(abs(value))) - 1, 1)}E}"),
        ("hex", hex(value)),
    ]
    out = [(name, text.encode()) for name, text in forms]
    for fmt in ("<i", ">i", "<q", ">q", "<d"):
        try:
            out.append((f"binary {fmt}", struct.pack(fmt, value)))
        except struct.error:
            continue
    return out


def _text_hits(value: int, data: bytes) -> list[str]:
    hits = []
    for name, form in number_forms(value):
        if name.startswith("binary"):
            if form in data:
                hits.append(name)
            continue
        # whole number only: not inside a longer number, nor the fraction of a float
        pattern = rb"(?<![0-9.,_])" + re.escape(form) + rb"(?![0-9]|[.,_ ][0-9])"
        if re.search(pattern, data):
            hits.append(name)
    return hits


def scan(blobs: Iterable[tuple[str, bytes]], values: list[int]) -> Findings:
    """Look for `values` and for key-like tokens in every blob, decoding JSON and base64."""
    findings = Findings()
    seen: set[bytes] = set()
    pending = list(blobs)
    while pending:
        where, data = pending.pop()
        if data in seen:
            continue
        seen.add(data)
        for value in values:
            for form in _text_hits(value, data):
                findings.values.append((where, value, form))
        try:
            parsed = json.loads(data)
        except (ValueError, UnicodeDecodeError):
            parsed = None
        if parsed is not None and not isinstance(parsed, str | int | float):
            for text in _json_strings(parsed):
                pending.append((f"{where} > json", text.encode()))
        for token in TOKEN.findall(UUID.sub(b" ", data)):
            decoded = _b64decode(token)
            if decoded is not None and _readable(decoded):
                pending.append((f"{where} > base64", decoded))
            elif _random_looking(token):
                findings.keys.append((where, token.decode()))
    return findings
