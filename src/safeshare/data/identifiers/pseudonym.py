"""Keyed pseudonyms: ``HMAC-SHA256(k_p, value)`` in hex, cut to a stated length.

``k_p = HMAC-SHA256(key, "safeshare pseudonym v1")`` (:mod:`.key`), and the value is the
UTF-8 text of the column as read (the same text on every engine). The same value and key
give the same pseudonym in every release, so records of one person can be linked across
releases; another key gives unrelated pseudonyms; without the key, a pseudonym cannot be
computed from a value (unlike a plain hash, which anyone can compute for every candidate
value of a small identifier space such as medical record numbers).

Length, in hex digits (4 bits each): default and minimum **16** (64 bits), at most 64 (the
whole digest). Two distinct values share a pseudonym of ``b`` bits with probability
``2^-b``; among ``n`` distinct values the probability of any collision is at most the
birthday bound ``n (n - 1) / 2 / 2^b`` (:func:`collision_bound`). At 64 bits that is
``2.7e-8`` for a million values and ``2.7e-4`` for a hundred million; shorter pseudonyms
collide quickly (32 bits: 69 % at 100,000 values), which would merge two people in the
release. Collisions are therefore also checked exactly on the data: a column whose
distinct values do not all get distinct pseudonyms is refused
(:func:`check_no_collision`), and so is a length whose bound exceeds
:data:`MAX_COLLISION_BOUND` for the data's number of distinct values (a later, larger
release with the same key would then probably collide and have to change every
pseudonym).
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable

from safeshare.data.identifiers.key import PSEUDONYM_LABEL, SecretKey
from safeshare.errors import ConfigError, DataError

DEFAULT_LENGTH = 16
MIN_LENGTH = 16
MAX_LENGTH = 64

#: The largest birthday bound on a collision accepted for the data's number of distinct values.
MAX_COLLISION_BOUND = 0.01


def check_length(length: object, where: str = "length") -> int:
    """``length`` as an int in [:data:`MIN_LENGTH`, :data:`MAX_LENGTH`] (one-line :class:`ConfigError`)."""
    if isinstance(length, bool) or not isinstance(length, int):
        raise ConfigError(f"{where}: expected a number of hex digits, got {length!r}")
    if not MIN_LENGTH <= length <= MAX_LENGTH:
        raise ConfigError(
            f"{where}: {length} hex digits; expected {MIN_LENGTH} to {MAX_LENGTH} "
            f"({4 * MIN_LENGTH} to {4 * MAX_LENGTH} bits: shorter pseudonyms collide)"
        )
    return length


def pseudonyms(key: SecretKey, values: Iterable[str], length: int = DEFAULT_LENGTH) -> list[str]:
    """The pseudonym of each value: the first ``length`` hex digits of ``HMAC-SHA256(k_p, value)``."""
    subkey = key.subkey(PSEUDONYM_LABEL)
    digest = hmac.digest
    return [digest(subkey, v.encode("utf-8", "surrogatepass"), "sha256").hex()[:length] for v in values]


def collision_bound(n_values: int, length: int) -> float:
    """The birthday bound ``n (n - 1) / 2 / 16^length`` on the probability that two of
    ``n_values`` distinct values share a pseudonym of ``length`` hex digits."""
    pairs = n_values * (n_values - 1) // 2
    return min(1.0, pairs / 16.0**length)


def check_no_collision(column: str, n_values: int, n_pseudonyms: int, length: int) -> None:
    """Refuse a column whose ``n_values`` distinct values got fewer distinct pseudonyms, or
    whose length makes a collision more than :data:`MAX_COLLISION_BOUND` likely."""
    bound = collision_bound(n_values, length)
    suggestion = next(
        (n for n in range(length + 4, MAX_LENGTH + 1, 4) if collision_bound(n_values, n) <= 1e-6), MAX_LENGTH
    )
    if n_pseudonyms != n_values:
        raise DataError(
            f"column {column!r}: its {n_values:,} distinct values have only {n_pseudonyms:,} distinct "
            f"pseudonyms of {length} hex digits; choose a longer length (e.g. {suggestion})"
        )
    if bound > MAX_COLLISION_BOUND:
        raise DataError(
            f"column {column!r}: with {n_values:,} distinct values, pseudonyms of {length} hex digits "
            f"collide with probability up to {bound:.2g}; choose a longer length (e.g. {suggestion})"
        )
