"""The words of the privacy models' parameters, in a module that imports nothing heavy.

The models (l_diversity.py, t_closeness.py, small_cells.py) and the typed registry of their
parameters (registry.py, read when a configuration is validated) share these, so that a
configuration can be checked without loading the models and the numerical core.
"""

from __future__ import annotations

from safeshare.config.vocabulary import SMALL_CELL

#: l-diversity's variants (Machanavajjhala et al.): distinct, entropy, recursive (c, l).
VARIANTS = ("distinct", "entropy", "recursive")
#: t-closeness's ground distances (Li, Li, Venkatasubramanian).
DISTANCES = ("equal", "ordered", "hierarchical")
#: small-cells' smallest population group that may be released.
DEFAULT_MIN_SIZE = SMALL_CELL
