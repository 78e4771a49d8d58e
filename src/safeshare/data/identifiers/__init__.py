"""Direct identifiers released under a key: pseudonyms and per-person shifted dates (issue 20).

* :mod:`.key`: the key file (hex text, at least 32 random bytes, private) and the subkeys;
* :mod:`.coarse`: when a column has far fewer distinct values than records (a person column
  that is not one, a pseudonym that is its column);
* :mod:`.pseudonym`: ``HMAC-SHA256`` pseudonyms, their length and collisions;
* :mod:`.date_shift`: the per-person shift, uniform in ``[-N, N] \\\\ {0}``, and date texts;
* :mod:`.treatment`: :class:`IdentifierTreatment`, what an engine applies while reading.
"""

from safeshare.data.identifiers.key import MIN_KEY_BYTES, SecretKey, load_key, write_new_key
from safeshare.data.identifiers.treatment import (
    IdentifierTreatment,
    PseudonymColumn,
    ShiftedDateColumn,
    UnplacedValue,
)

__all__ = [
    "MIN_KEY_BYTES",
    "IdentifierTreatment",
    "PseudonymColumn",
    "SecretKey",
    "ShiftedDateColumn",
    "UnplacedValue",
    "load_key",
    "write_new_key",
]
