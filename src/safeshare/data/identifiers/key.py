"""The secret key of pseudonyms and date shifts, and what is derived from it.

A key file holds the key as **hexadecimal text**: at least 64 hex digits (32 bytes),
on one line, surrounding whitespace ignored (``openssl rand -hex 32 > release.key``, or
:func:`write_new_key`). Hex rather than raw bytes because a text file survives copying,
e-mail and editors unchanged, and because a file of raw bytes that happened to look like
hex could not be told apart. The file must be readable by its owner only (mode 0600 or
stricter, as ssh asks of private keys): a key other users can read is refused.

**A key must look random** (:func:`check_key_strength`, issue 30): a key of 64 zeros, of
``ab`` repeated, or the hex of a passphrase is refused, because whoever guesses it computes
every pseudonym and every shift. The strength of one key cannot be measured (a key made by
hashing a password looks random and is not); what can be refused is the structure people
type or copy, with a chance of refusing a key from ``openssl rand -hex 32`` below
``2^-45``. For a key of ``n >= 32`` bytes, each rule with its chance of refusing ``n``
uniformly random bytes (computed exactly for ``n = 32``; it falls with ``n``):

* its bytes take fewer than 16 distinct values (``P < 3.3e-17``): zeros, ``abab...``, a
  short pattern such as ``0123456789abcdef`` repeated;
* the differences of successive bytes (mod 256) take fewer than 16 distinct values
  (``P < 4.7e-16``: they are again ``n - 1`` uniform bytes): a counter ``00 01 02 ...``;
* it repeats itself with a period of at most ``n / 2`` bytes (``P < 2^-127``);
* every byte is printable ASCII, 0x20-0x7E (``P < 1.7e-14``): the hex of a passphrase.

The key itself is used for nothing directly. Each use gets its own subkey,
``HMAC-SHA256(key, label)`` with a fixed label per use (a pseudorandom function keyed
with a uniformly random key is a key-derivation function): ``safeshare pseudonym v1``,
``safeshare date shift v1``, ``safeshare key fingerprint v1``. So a pseudonym and a
person's date shift never come from the same HMAC output.

The **fingerprint** (16 hex digits of the fingerprint subkey) tells a custodian which key
made a release, and it also lets anyone who holds it test a guessed key offline. It is
therefore written only to the custodian's ledger, never to report.json, report.html or the
terminal (issue 30).

Nothing here ever puts the key into text: :class:`SecretKey` has no ``str`` of its own, its
``repr`` shows neither the key nor the fingerprint, it cannot be pickled, and every error
names the file, never its content.
"""

from __future__ import annotations

import hmac
import itertools
import os
import re
import secrets
import stat
from pathlib import Path
from typing import NoReturn

from safeshare.errors import ConfigError

#: The shortest key accepted, in bytes (256 bits: HMAC-SHA256's full strength).
MIN_KEY_BYTES = 32

#: A key's bytes, and the differences of its successive bytes, take at least this many values.
MIN_DISTINCT_BYTES = 16

#: Labels of the subkeys (domain separation; changing one changes every output made with it).
PSEUDONYM_LABEL = b"safeshare pseudonym v1"
DATE_SHIFT_LABEL = b"safeshare date shift v1"
FINGERPRINT_LABEL = b"safeshare key fingerprint v1"

_HEX = re.compile(r"[0-9a-fA-F]+")

#: The largest key file read (a key is a few dozen bytes; a big file is not a key).
_MAX_FILE_BYTES = 4096


class SecretKey:
    """A secret key of at least :data:`MIN_KEY_BYTES` bytes that looks random
    (:func:`check_key_strength`).

    ``subkey(label)`` is ``HMAC-SHA256(key, label)``; ``fingerprint`` is the first 16
    hex digits of the fingerprint subkey (for the custodian's ledger only: it confirms a
    guessed key). ``repr`` shows neither; the object has no text form and refuses to be
    pickled, so that it cannot end up in a report, a log or a worker's serialized closure
    by accident.
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
        check_key_strength(bytes(material))
        self._material = bytes(material)

    def subkey(self, label: bytes) -> bytes:
        """``HMAC-SHA256(key, label)``: the key of one use (see the module docstring)."""
        return hmac.digest(self._material, label, "sha256")

    @property
    def fingerprint(self) -> str:
        """16 hex digits that identify the key, for the custodian's ledger: they reveal nothing of
        the key's uses, but confirm a guessed key, so they are never published."""
        return self.subkey(FINGERPRINT_LABEL).hex()[:16]

    def __repr__(self) -> str:
        return f"SecretKey(<{len(self._material)} bytes, not shown>)"

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


def check_key_strength(material: bytes) -> None:
    """Refuse key bytes that do not look random (the rules of the module docstring), in one
    line that says which rule, never the key."""
    n = len(material)
    advice = "make a random one: openssl rand -hex 32"
    if len(set(material)) < MIN_DISTINCT_BYTES:
        why = f"its {n} bytes take only {len(set(material))} distinct values"
    elif len({(b - a) % 256 for a, b in itertools.pairwise(material)}) < MIN_DISTINCT_BYTES:
        why = "its bytes follow a pattern (the steps between successive bytes take few values)"
    elif any(material[p:] == material[:-p] for p in range(1, n // 2 + 1)):
        why = "it repeats a shorter block"
    elif all(0x20 <= b <= 0x7E for b in material):
        why = "every byte is printable text (the hex of a word or passphrase is not a key)"
    else:
        return
    raise ConfigError(f"the key is not random: {why}; whoever guesses it can undo every pseudonym; {advice}")


def load_key(path: str | os.PathLike[str]) -> SecretKey:
    """The key in the file at ``path`` (hex text, see the module docstring).

    Raises :class:`ConfigError` with one line naming the file, never its content, when
    the file is missing, readable by others, not hex, shorter than 32 bytes, or not random
    (:func:`check_key_strength`).
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
    try:
        return SecretKey(material)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


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
