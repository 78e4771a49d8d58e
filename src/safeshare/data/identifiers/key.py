"""The secret key of pseudonyms and date shifts, and what is derived from it.

A key file holds the key as **hexadecimal text**: at least 64 hex digits (32 bytes),
on one line, surrounding whitespace ignored (``openssl rand -hex 32 > release.key``, or
:func:`write_new_key`). Hex rather than raw bytes because a text file survives copying,
e-mail and editors unchanged, and because a file of raw bytes that happened to look like
hex could not be told apart. The file must be readable by its owner only (mode 0600 or
stricter, as ssh asks of private keys): a key other users can read is refused.

The key itself is used for nothing directly. Each use gets its own subkey,
``HMAC-SHA256(key, label)`` with a fixed label per use (a pseudorandom function keyed
with a uniformly random key is a key-derivation function): ``safeshare pseudonym v1``,
``safeshare date shift v1``, ``safeshare key fingerprint v1``. So a pseudonym and a
person's date shift never come from the same HMAC output, and the fingerprint (printed
in reports and ledgers so that a custodian can tell which key made a release) reveals
nothing about either.

Nothing here ever puts the key into text: :class:`SecretKey` has no ``str``, its ``repr``
shows the fingerprint only, it cannot be pickled, and every error names the file, never
its content.
"""

from __future__ import annotations

import hmac
import os
import re
import secrets
import stat
from pathlib import Path
from typing import NoReturn

from safeshare.errors import ConfigError

#: The shortest key accepted, in bytes (256 bits: HMAC-SHA256's full strength).
MIN_KEY_BYTES = 32

#: Labels of the subkeys (domain separation; changing one changes every output made with it).
PSEUDONYM_LABEL = b"safeshare pseudonym v1"
DATE_SHIFT_LABEL = b"safeshare date shift v1"
FINGERPRINT_LABEL = b"safeshare key fingerprint v1"

_HEX = re.compile(r"[0-9a-fA-F]+")

#: The largest key file read (a key is a few dozen bytes; a big file is not a key).
_MAX_FILE_BYTES = 4096


class SecretKey:
    """A secret key of at least :data:`MIN_KEY_BYTES` bytes.

    ``subkey(label)`` is ``HMAC-SHA256(key, label)``; ``fingerprint`` is the first 16
    hex digits of the fingerprint subkey. ``repr`` shows the fingerprint only; the
    object has no text form and refuses to be pickled, so that it cannot end up in a
    report, a log or a worker's serialized closure by accident.
    """

    __slots__ = ("_material",)

    def __init__(self, material: bytes) -> None:
        if not isinstance(material, bytes | bytearray):
            raise TypeError("SecretKey takes bytes")
        if len(material) < MIN_KEY_BYTES:
            raise ConfigError(
                f"the key has {len(material)} bytes; at least {MIN_KEY_BYTES} are required "
                "(e.g. openssl rand -hex 32)"
            )
        self._material = bytes(material)

    def subkey(self, label: bytes) -> bytes:
        """``HMAC-SHA256(key, label)``: the key of one use (see the module docstring)."""
        return hmac.digest(self._material, label, "sha256")

    @property
    def fingerprint(self) -> str:
        """16 hex digits that identify the key without revealing anything of it or of its uses."""
        return self.subkey(FINGERPRINT_LABEL).hex()[:16]

    def __repr__(self) -> str:
        return f"SecretKey(fingerprint={self.fingerprint})"

    def __str__(self) -> str:
        return self.__repr__()

    def __reduce__(self) -> NoReturn:
        raise TypeError("a SecretKey cannot be pickled")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SecretKey):
            return NotImplemented
        return hmac.compare_digest(self._material, other._material)

    def __hash__(self) -> int:
        return hash(self.fingerprint)


def load_key(path: str | os.PathLike[str]) -> SecretKey:
    """The key in the file at ``path`` (hex text, see the module docstring).

    Raises :class:`ConfigError` with one line naming the file, never its content, when
    the file is missing, readable by others, not hex, or shorter than 32 bytes.
    """
    path = Path(path)
    where = f"key file {path}"
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such file (make one with: openssl rand -hex 32 > {path})") from None
    except OSError as exc:
        raise ConfigError(f"{where}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{where}: not a regular file")
    if info.st_mode & 0o077:
        raise ConfigError(
            f"{where}: other users may read it (mode {stat.S_IMODE(info.st_mode):04o}); "
            f"make it private: chmod 600 {path}"
        )
    if info.st_size > _MAX_FILE_BYTES:
        raise ConfigError(f"{where}: {info.st_size} bytes, too large for a key")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{where}: {exc.strerror or exc}") from None
    text = data.strip()
    try:
        decoded = text.decode("ascii")
    except UnicodeDecodeError:
        decoded = ""
    if not decoded or not _HEX.fullmatch(decoded) or len(decoded) % 2:
        raise ConfigError(
            f"{where}: expected the key as hexadecimal digits on one line "
            f"(at least {2 * MIN_KEY_BYTES}), e.g. from: openssl rand -hex 32"
        )
    material = bytes.fromhex(decoded)
    if len(material) < MIN_KEY_BYTES:
        raise ConfigError(
            f"{where}: the key has {len(material)} bytes; at least {MIN_KEY_BYTES} "
            f"({2 * MIN_KEY_BYTES} hex digits) are required"
        )
    return SecretKey(material)


def write_new_key(path: str | os.PathLike[str], n_bytes: int = MIN_KEY_BYTES) -> SecretKey:
    """Write a new random key (``n_bytes`` from the operating system) to ``path``, mode 0600.

    Refuses to overwrite an existing file: replacing a key changes every pseudonym and
    every date shift made with it.
    """
    path = Path(path)
    if n_bytes < MIN_KEY_BYTES:
        raise ConfigError(f"a key needs at least {MIN_KEY_BYTES} bytes, not {n_bytes}")
    material = secrets.token_bytes(n_bytes)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise ConfigError(
            f"key file {path}: exists already; a new key would change every pseudonym"
        ) from None
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(material.hex() + "\n")
    return SecretKey(material)
