"""Reading configuration YAML safely, and the one check of configuration keys.

A configuration is small, hand-written and never needs YAML's aliases, so
:func:`read_yaml` refuses what only a hostile or broken file contains before it
can cost memory or time:

* files larger than :data:`MAX_CONFIG_BYTES` (checked before parsing);
* aliases (``*name``, also ``<<: *name``): refused when the parser meets the
  first one, before anything is expanded, so an "alias bomb" (a few hundred bytes
  that expand to gigabytes) fails at once;
* a key given twice in any mapping (YAML keeps the last one silently: a second
  ``age:`` under ``attributes:`` would replace the first);
* an integer too large to be a floating-point number (``2**1024``, about
  ``1.8e308``, or more): every count and parameter is compared with floats
  somewhere, where such a number raised ``OverflowError`` (an internal error)
  instead of a one-line refusal; a literal longer than any such number is refused
  before it is converted (Python refuses to convert 4,300 digits or more).

:func:`read_yaml` reads a file, :func:`parse_yaml` the text of a command-line
option (``hierarchy build --spec``); both apply the same rules.

:func:`check_keys` is used by every section of the configuration (top level,
``input``, ``output``, ``attributes``, privacy models, ``dp``, hierarchy
builders) so that a typo or an option that does not apply is an error naming
the key path, never silently ignored.

Locations: ``where`` strings are ``"FILE: a.b"`` for a mapping at key path
``a.b`` and ``"FILE:"`` for the top level; :func:`key_path` appends a key.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from safeshare.errors import ConfigError

#: Largest configuration file accepted (1 MiB: real ones are a few kilobytes).
MAX_CONFIG_BYTES = 1 << 20

#: Integers from here on cannot be converted to a float (``OverflowError``).
_FLOAT_LIMIT = 1 << 1024
#: No integer below :data:`_FLOAT_LIMIT` is written with more characters (1,024 binary digits,
#: a sign, ``0b`` and some ``_``): a longer literal is refused before it is converted.
_MAX_INT_CHARS = 1100
_TOO_LARGE = "an integer this large is not accepted (at most 1.8e308)"


class _Refused(yaml.MarkedYAMLError):
    """A construct the configuration loader does not accept, with its position."""


class StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` without aliases and without duplicate keys."""

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise _Refused(problem="YAML aliases (*name) are not allowed", problem_mark=event.start_mark)
        return super().compose_node(parent, index)

    def construct_yaml_int(self, node: ScalarNode) -> int:
        """An integer, refused (with its line) when no float can hold it (see the module doc)."""
        if len(str(node.value)) > _MAX_INT_CHARS:  # before converting: int() of 4,300+ digits raises
            raise _Refused(problem=_TOO_LARGE, problem_mark=node.start_mark)
        value = int(super().construct_yaml_int(node))
        if abs(value) >= _FLOAT_LIMIT:
            raise _Refused(problem=_TOO_LARGE, problem_mark=node.start_mark)
        return value

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        self._check_duplicates(node)
        return self.construct_document(node)

    def _check_duplicates(self, root: Node) -> None:
        """Refuse a key that occurs twice in one mapping, naming its key path (iterative: no depth limit)."""
        stack: list[tuple[Node, str]] = [(root, "")]
        while stack:
            node, path = stack.pop()
            if isinstance(node, SequenceNode):
                stack.extend((child, f"{path}[{i}]") for i, child in enumerate(node.value))
            elif isinstance(node, MappingNode):
                first: dict[object, int] = {}
                for key_node, value_node in node.value:
                    key = self._key(key_node)
                    here = f"{path}.{key}" if path else str(key)
                    line = key_node.start_mark.line + 1
                    if key in first:
                        raise _Refused(
                            problem=f"{here}: duplicate key (first on line {first[key]})",
                            problem_mark=key_node.start_mark,
                        )
                    first[key] = line
                    stack.append((value_node, here))

    def _key(self, node: Node) -> object:
        """A comparable form of a key node: its value for scalars (``1`` and ``01`` are both 1)."""
        if isinstance(node, ScalarNode):
            value = self.construct_object(node)
            return value if isinstance(value, str | int | float | bool) or value is None else node.value
        return (node.tag, id(node))  # complex keys are never equal; the sections reject them anyway


StrictLoader.add_constructor("tag:yaml.org,2002:int", StrictLoader.construct_yaml_int)


def read_yaml(path: Path, what: str = "configuration") -> Any:
    """The data of the YAML file ``path``; every problem is one :class:`ConfigError` line.

    ``what`` names the kind of file in messages (a grouping file is read the same way).
    """
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: the {what} is larger than {MAX_CONFIG_BYTES >> 20} MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc}") from None
    return parse_yaml(text, str(path), what)


def parse_yaml(text: str, where: str, what: str = "configuration") -> Any:
    """The data of the YAML ``text`` (an option's value), under the rules of :func:`read_yaml`.

    ``where`` starts every message (a file name, or an option such as ``--spec``).
    """
    if len(text.encode("utf-8", "surrogatepass")) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{where}: the {what} is larger than {MAX_CONFIG_BYTES >> 20} MiB")
    try:
        return yaml.load(text, Loader=StrictLoader)  # StrictLoader is a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{where}{line}: {problem}") from None
    except RecursionError:
        raise ConfigError(f"{where}: the {what} is nested too deeply") from None


def key_path(where: str, key: object) -> str:
    """``where`` extended by ``key``: ``"FILE:"`` -> ``"FILE: key"``, ``"FILE: a"`` -> ``"FILE: a.key"``."""
    return f"{where} {key}" if where.endswith(":") else f"{where}.{key}"


def check_keys(
    mapping: Mapping[Any, Any],
    allowed: Collection[str],
    where: str,
    inapplicable: Mapping[str, str] | None = None,
) -> None:
    """Raise :class:`ConfigError` for the first key of ``mapping`` that is not accepted.

    ``allowed`` are the keys this mapping knows; ``inapplicable`` maps known keys that
    do not apply here (e.g. ``dp`` without ``algorithm: epsilon-safe``) to the reason,
    which becomes the message. An unknown key gets a "did you mean" when one is close.
    """
    for key in mapping:
        here = key_path(where, key)
        if not isinstance(key, str):
            raise ConfigError(f"{here}: expected a name as key, got {key!r}")
        if inapplicable and key in inapplicable:
            raise ConfigError(f"{here}: {inapplicable[key]}")
        if key not in allowed:
            close = difflib.get_close_matches(key, list(allowed), n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"expected one of {', '.join(sorted(allowed))}"
            raise ConfigError(f"{here}: unknown key; {hint}")
