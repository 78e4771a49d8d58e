"""What every command says the same way about its options (help texts, shared thresholds),
so that one option name has one meaning everywhere; the values themselves are parsed and
validated by the specifications (:mod:`safeshare.config_checks`: ``--max-suppression`` is a
fraction or a percent in ``anonymize``, ``utility``, ``sweep`` and YAML alike)."""

from __future__ import annotations

#: Help of every command's single ``--max-suppression`` value.
MAX_SUPPRESSION_HELP = "Override the suppression limit: a fraction of the records (0.05) or a percent (5%)."


#: Help of ``--delimiter``: in every command, the field separator of the DATA (CSV) files;
#: a hierarchy file's separator is ``--hierarchy-delimiter``.
DATA_DELIMITER_HELP = "Field separator of the data (CSV) files."


#: ``anonymize``: above this many lattice nodes the suppression / loss trade-off curve is computed
#: only when asked (``--tradeoff``, ``tradeoff=True``): it repeats the search for six limits.
TRADEOFF_AUTO_MAX = 20_000
