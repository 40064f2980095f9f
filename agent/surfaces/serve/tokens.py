"""Bearer tokens of `smoldocs serve`: a file of `name:sha256` lines, never the tokens themselves.

A token is 32 random bytes (URL-safe base64), shown once when made. The server keeps only its SHA-256, so a copy
of the file lets nobody in; every request's token is hashed and compared with each stored hash in constant time.
The file is read again whenever it changes: deleting a line revokes that token without a restart.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from agent.errors import UsageError

TOKEN_BYTES = 32
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
LINE = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]{0,63}):([0-9a-f]{64})")


def digest(token: str) -> str:
    """The hex SHA-256 the file keeps for `token`."""
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def read_hashes(path: Path) -> dict[str, str]:
    """name -> hash of every line of the file; a line that is not `name:<64 hex>` is refused, naming its number."""
    hashes: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"no tokens file {path}: make a token with `smoldocs serve --new-token NAME --tokens {path}`")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the tokens file {path}: {exc}") from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        match = LINE.fullmatch(line.strip())
        if match is None:
            raise UsageError(f"{path}, line {number}: expected NAME:SHA256 (64 hex digits); fix or delete the line")
        hashes[match.group(1)] = match.group(2)
    return hashes


def new_token(path: Path, name: str) -> str:
    """Make a token called `name`, append only its hash to the file (created with mode 0600) and return it."""
    if NAME.fullmatch(name) is None:
        raise UsageError(f"token name {name!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
    if path.exists() and name in read_hashes(path):
        raise UsageError(f"{path} already has a token named {name!r}: delete its line to replace it, or pick another name")
    token = secrets.token_urlsafe(TOKEN_BYTES)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError as exc:
        raise UsageError(f"cannot write the tokens file {path}: {exc.strerror}") from None
    with os.fdopen(fd, "a", encoding="utf-8") as out:
        out.write(f"{name}:{digest(token)}\n")
    return token


@dataclass
class TokenFile:
    """The tokens file as the server checks requests against it, re-read when its size or mtime changes."""

    path: Path
    _hashes: dict[str, str] | None = None
    _stamp: tuple[int, int] | None = None

    def hashes(self) -> dict[str, str]:
        try:
            info = self.path.stat()
            stamp = (info.st_mtime_ns, info.st_size)
        except OSError:
            stamp = None
        if self._hashes is None or stamp != self._stamp:
            try:
                self._hashes = read_hashes(self.path)
            except UsageError:
                if self._hashes is None:
                    raise
                # A file half-written by an editor: keep the last good tokens rather than lock everyone out.
            self._stamp = stamp
        return self._hashes

    def name_of(self, token: str | None) -> str | None:
        """The name of the token, or None: every stored hash is compared, in constant time, whatever matches."""
        if not token:
            return None
        presented = digest(token)
        found = None
        for name, stored in self.hashes().items():
            if hmac.compare_digest(presented, stored):
                found = name
        return found
