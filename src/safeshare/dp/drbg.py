"""A cryptographically strong, seedable random generator (SHAKE-256 in counter mode).

Epsilon-safe LA draws two kinds of randomness: which records are sampled
(thesis §4.5.2) and which node the exponential mechanism outputs (§4.5.3).
Their privacy guarantee assumes the adversary cannot predict either draw, so
neither uses :mod:`random` (Mersenne Twister, predictable from 624 outputs)
nor numpy's PCG64 (not designed to resist prediction).

Construction (an extendable-output function used as a keyed stream, in the
spirit of NIST SP 800-185's cSHAKE/KMAC; not a certified DRBG):

* ``key = SHAKE-256("safeshare/drbg/v1" || 0x00 || encode(seed))[:32]``;
* a named sub-stream (``"sampling"``, ``"mechanism"``) has its own key
  ``SHAKE-256(key || 0x01 || label)[:32]`` (domain separation: the node draw
  reveals nothing about the sampling draw, and vice versa);
* block ``c`` of a stream is ``SHAKE-256(key || 0x02 || c as 16 bytes)[:65536]``;
  the stream is the concatenation of blocks ``0, 1, 2, ...``, read as
  little-endian unsigned 64-bit integers.

Seeds. Without a seed, 32 bytes from :mod:`secrets` (the operating system's
CSPRNG) are used and never stored or written anywhere: the draw cannot be
reproduced, which is what the privacy guarantee wants. With a seed (an
integer, a text or bytes), the draw is reproducible: use it only for
testing, audits and experiments, and remember that whoever knows the seed
knows which records were sampled. The seed is reported only when it was given.
"""

from __future__ import annotations

import hashlib
import secrets

import numpy as np
import numpy.typing as npt

from safeshare.errors import InputError

_DOMAIN = b"safeshare/drbg/v1\x00"
_BLOCK = 1 << 16
_TWO64 = 1 << 64


def _encode_seed(seed: int | str | bytes) -> bytes:
    if isinstance(seed, bool):
        raise InputError(f"seed: expected an integer, a text or bytes, got {seed!r}")
    if isinstance(seed, int | np.integer):
        return b"int:" + str(int(seed)).encode("ascii")
    if isinstance(seed, str):
        return b"str:" + seed.encode("utf-8")
    if isinstance(seed, bytes | bytearray):
        return b"bytes:" + bytes(seed)
    raise InputError(f"seed: expected an integer, a text or bytes, got {type(seed).__name__}")


class CryptoRandom:
    """SHAKE-256 counter-mode generator (see the module docstring).

    Parameters
    ----------
    seed: ``None`` (fresh secret entropy, not reproducible, never stored) or
        an integer / text / bytes (reproducible).
    """

    def __init__(self, seed: int | str | bytes | None = None, *, _key: bytes | None = None) -> None:
        self.seeded = seed is not None
        self._seed_for_report = seed if isinstance(seed, int | str) and not isinstance(seed, bool) else None
        if _key is not None:
            self._key = _key
        else:
            material = secrets.token_bytes(32) if seed is None else _encode_seed(seed)
            self._key = hashlib.shake_256(_DOMAIN + material).digest(32)
        self._counter = 0
        self._buffer = b""

    @property
    def seed(self) -> int | str | None:
        """The seed, if one was given (integer or text), for reports; ``None`` otherwise."""
        return self._seed_for_report

    def stream(self, label: str) -> CryptoRandom:
        """An independent generator for ``label`` (domain-separated)."""
        child = CryptoRandom(_key=hashlib.shake_256(self._key + b"\x01" + label.encode("utf-8")).digest(32))
        child.seeded = self.seeded
        child._seed_for_report = self._seed_for_report
        return child

    def bytes(self, n: int) -> bytes:
        """The next ``n`` bytes of the stream."""
        if n < 0:
            raise ValueError("n must be >= 0")
        parts = [self._buffer]
        have = len(self._buffer)
        while have < n:
            block = hashlib.shake_256(self._key + b"\x02" + self._counter.to_bytes(16, "little")).digest(
                _BLOCK
            )
            self._counter += 1
            parts.append(block)
            have += len(block)
        data = b"".join(parts)
        self._buffer = data[n:]
        return data[:n]

    def uint64(self, n: int) -> npt.NDArray[np.uint64]:
        """``n`` independent uniform integers in ``[0, 2^64)``."""
        return np.frombuffer(self.bytes(8 * n), dtype="<u8").astype(np.uint64, copy=False)

    def uniform(self, n: int) -> npt.NDArray[np.float64]:
        """``n`` independent uniform floats in ``[0, 1)``, on the grid of multiples of ``2^-53``."""
        return (self.uint64(n) >> np.uint64(11)).astype(np.float64) * 2.0**-53

    def bernoulli(self, n: int, p: float) -> npt.NDArray[np.bool_]:
        """``n`` independent draws, each True with probability :func:`bernoulli_probability` (``p``)."""
        threshold = bernoulli_threshold(p)
        if threshold == _TWO64:
            return np.ones(n, dtype=bool)
        return self.uint64(n) < np.uint64(threshold)


def bernoulli_threshold(p: float) -> int:
    """``T = floor(p 2^64)``: a draw ``X`` uniform in ``[0, 2^64)`` is kept iff ``X < T``."""
    if not 0.0 <= p <= 1.0:
        raise InputError(f"probability must be in [0, 1], got {p!r}")
    return min(_TWO64, int(p * _TWO64))


def bernoulli_probability(p: float) -> float:
    """The exact keep probability ``floor(p 2^64) / 2^64`` (equal to ``p`` for ``p >= 2^-12``)."""
    return bernoulli_threshold(p) / _TWO64
