"""What a missing value is: the one definition, used by the reader, every hierarchy builder,
the command line and the workbench (issue 30, "blank cells").

The switch is the input's declared missing-value tokens, given once per input:
``input.missing`` in a configuration, ``--missing`` on the command line, the workbench's
"Missing" field and its "Blank cells are missing values" box. Then:

* a declared token is a missing value, and so is the blank cell whenever any token is
  declared; the reader replaces them all by the first token (:func:`missing_texts`), so that
  one hierarchy row covers them;
* the blank cell alone is declared with ``missing: [""]``, ``--missing ''`` (an empty item of
  the comma list: :func:`parse_missing`) or the workbench's box;
* every hierarchy builder keeps the data's missing values as they are below its top (they are
  not numbers, dates or codes; :meth:`safeshare.hierarchy.builders.with_data_missing`), so a
  numeric quasi-identifier with blank cells is released once the switch is on, its blanks as
  blanks; a builder's own ``missing:`` key adds tokens for its column only;
* without the switch the blank cell is not a value (it is what a wrong delimiter or a padded
  short row produces): every builder refuses it with :data:`BLANK_HINT`.
"""

from __future__ import annotations

from collections.abc import Sequence

#: The text of a blank cell.
BLANK = ""

#: How to turn the switch on, said wherever a blank cell is refused.
BLANK_HINT = (
    "if blank cells mean 'unknown', declare them missing: input.missing: [''] in the configuration, "
    "--missing '' on the command line, 'Blank cells are missing values' in the workbench"
)


def missing_texts(tokens: Sequence[str]) -> frozenset[str]:
    """The texts that read as missing when ``tokens`` are declared: the tokens, and the blank
    cell with any of them; nothing without a declaration."""
    return frozenset([*tokens, BLANK]) if tokens else frozenset()


def parse_missing(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """The declared tokens of a comma-separated text (the command line, the workbench's field) or
    of a list (YAML, Python), stripped, in order, each once.

    In the text an empty item is the blank cell: ``''`` declares blanks, ``'?,'`` the token
    ``?`` and blanks (the blank is implied by any token anyway); ``None`` declares nothing.
    """
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    return tuple(dict.fromkeys(item.strip() for item in items))


def with_blank(tokens: Sequence[str], blank: bool) -> tuple[str, ...]:
    """``tokens`` with the blank cell declared (the workbench's box) or not."""
    rest = tuple(t for t in tokens if t != BLANK)
    return (*rest, BLANK) if blank else rest


def blank_declared(tokens: Sequence[str]) -> bool:
    """Whether ``tokens`` make the blank cell a missing value."""
    return BLANK in missing_texts(tokens)
