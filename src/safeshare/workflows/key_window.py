"""One date-shift window per key, across releases (issue 30, item 5).

A person's shift is a function of the key, the person and ``max_days``
(:mod:`safeshare.data.identifiers.date_shift`). Two releases of the same people under one
key with the same ``max_days`` carry the same shifted dates: together they tell nothing
more than one. With two windows they combine: the true date lies in both windows, and the
two shifts come from the same HMAC words (``u mod 2N`` for each ``N``), so they are
correlated; a few windows narrowed a true date to 14 days of 60. So the window belongs to
the key.

The ledger is the custodian's memory of what was released: each entry of a release with
shifted dates records the key's fingerprint (``key_fingerprint``, the ledger only) and its
window (``date_shift_max_days``). :func:`check_key_window` refuses, before any data is
read, a release whose key already shifted dates in the ledger with another window. Without a
ledger nothing remembers the earlier releases: keep one ``max_days`` per key (docs/security.md).
"""

from __future__ import annotations

import json
from pathlib import Path

from safeshare.errors import ConfigError

#: The ledger entry's key that records the window of a release's shifted dates.
WINDOW_FIELD = "date_shift_max_days"


def check_key_window(ledger: Path, fingerprint: str, max_days: int) -> None:
    """Refuse ``max_days`` when an entry of ``ledger`` shifted dates under the key of
    ``fingerprint`` with another window. A missing or unreadable ledger, or a line that is not
    an entry, is not this check's to judge (the ledger's own checks are)."""
    try:
        lines = Path(ledger).read_bytes().splitlines()
    except OSError:
        return
    for line in lines:
        try:
            entry = json.loads(line)
        except (UnicodeDecodeError, ValueError):
            continue
        if not isinstance(entry, dict) or entry.get("key_fingerprint") != fingerprint:
            continue
        window = entry.get(WINDOW_FIELD)
        if isinstance(window, int) and not isinstance(window, bool) and window != max_days:
            raise ConfigError(
                f"ledger {ledger}: entry {entry.get('seq', '?')} shifted dates under this key by up to "
                f"{window} days; a release with max_days {max_days} under the same key would combine with "
                f"it and narrow every true date: keep max_days: {window}, or make a new key (which changes "
                "every pseudonym and shift)"
            )
