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
import math
import re
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, WithJsonSchema
from pydantic_core import PydanticCustomError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from safeshare.errors import ConfigError, InputError

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


# --------------------------------------------------------------------------- value types
# The value types of every specification (the configuration file, the privacy models' parameters,
# epsilon-safe's ``dp:`` section, the options of every command): pydantic annotated types whose
# messages are written once, here. A check is ``check(value, where) -> value`` raising
# ConfigError("WHERE: message"); :func:`checked` turns it into a pydantic validator, and
# :func:`validation_error` turns a pydantic ValidationError back into one ConfigError line that
# names the key path (``FILE: privacy.k-anonymity.k: expected an integer >= 1, got 0``).
_HERE = "\x00"  # placeholder key path: the error translator puts the real one in front


def checked(check: Callable[[Any, str], Any], allow_none: bool = False) -> BeforeValidator:
    """A pydantic validator from a check ``check(value, where)`` that raises :class:`ConfigError`."""

    def validate(value: Any) -> Any:
        if value is None and allow_none:
            return None
        try:
            return check(value, _HERE)
        except InputError as exc:  # a ConfigError, or the InputError of a parser shared with Python
            text = str(exc)
            if text.startswith(f"{_HERE}."):  # about a key inside the value: WHERE.key: message
                key, _, message = text.removeprefix(f"{_HERE}.").partition(": ")
                raise refuse(message.strip(), key=key) from None
            raise refuse(text.removeprefix(f"{_HERE}: ").removeprefix(_HERE).strip()) from None

    return BeforeValidator(validate)


def refuse(message: str, key: str | None = None) -> PydanticCustomError:
    """The error a validator raises for ``message`` (shown after the key path; a model-level
    validator names the ``key`` it is about)."""
    return PydanticCustomError("safeshare", "{message}", {"message": message, "key": key})


def check_text(value: Any, where: str) -> str:
    """A value that must be text (YAML reads ``1`` and ``null`` as other types)."""
    if not isinstance(value, str):
        shown = "null" if value is None else repr(value)
        raise ConfigError(f'{where}: expected a text, got {shown} (quote it: "...")')
    return value


def check_flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true or false")
    return value


def _integer(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int)


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float)


def check_positive_int(value: Any, where: str) -> int:
    if not _integer(value) or value < 1:
        raise ConfigError(f"{where}: expected an integer >= 1, got {value!r}")
    return int(value)


def check_count(value: Any, where: str) -> int:
    """An integer >= 0 (lines to skip, ...)."""
    if not _integer(value) or value < 0:
        raise ConfigError(f"{where}: expected an integer >= 0, got {value!r}")
    return int(value)


def check_number(value: Any, where: str) -> float:
    if not _number(value) or not math.isfinite(float(value)):
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    return float(value)


def check_positive_number(value: Any, where: str) -> float:
    if not _number(value) or not math.isfinite(float(value)) or float(value) <= 0:
        raise ConfigError(f"{where}: expected a number > 0, got {value!r}")
    return float(value)


def check_seconds(value: Any, where: str) -> float:
    if not _number(value) or not 0 < float(value) < math.inf:
        raise ConfigError(f"{where}: expected a positive number of seconds, got {value!r}")
    return float(value)


def check_unit_interval(value: Any, where: str) -> float:
    """A number in [0, 1] (a distance, a loss)."""
    if not _number(value):
        raise ConfigError(f"{where}: expected a number in [0, 1], got {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise ConfigError(f"{where}: expected a fraction in [0, 1], got {value!r}")
    return float(value)


def check_probability(value: Any, where: str) -> float:
    """A number in (0, 1]."""
    if not _number(value) or not 0.0 < float(value) <= 1.0:
        raise ConfigError(f"{where}: expected a number in (0, 1], got {value!r}")
    return float(value)


def parse_fraction(text: Any, where: str) -> float:
    """A share of the records: a fraction in [0, 1] (``0.05``) or an explicit percent (``5%``).

    Numbers (YAML, Python) and texts (the command line, YAML's ``5%``) alike. A bare number
    above 1 is refused rather than read as a percent: ``5`` could be meant as 5% or as a
    typo, and guessing would release more than asked.
    """
    if isinstance(text, bool) or not isinstance(text, int | float | str):
        raise ConfigError(f"{where}: expected a fraction in [0, 1] (0.05) or a percent (5%), got {text!r}")
    raw = str(text).strip()
    percent = raw.endswith("%")
    number = raw[:-1].strip() if percent else raw
    hint = "expected a fraction in [0, 1] (0.05) or a percent in [0%, 100%] (5%)"
    try:
        value = float(number)
    except ValueError:
        raise ConfigError(f"{where}: {hint}, got {raw!r}") from None
    if percent:
        value /= 100.0
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        looks_percent = not percent and math.isfinite(value) and 1.0 < value <= 100.0
        extra = f" (did you mean {raw}%?)" if looks_percent else ""
        raise ConfigError(f"{where}: {hint}, got {raw!r}{extra}")
    return value


def parse_fractions(text: Any, where: str) -> list[float]:
    """A comma-separated list (or a sequence) of :func:`parse_fraction` values (``0,0.01,5%``)."""
    items = split_list(text)
    if not items:
        raise ConfigError(f"{where}: expected a comma-separated list of fractions, got {text!r}")
    return [parse_fraction(item, where) for item in items]


def split_list(value: Any) -> list[Any]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``; a sequence as it is; nothing for ``None`` or ``""``."""
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list | tuple):
        return list(value)
    return [value]


_SIZE = re.compile(r"^\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$", re.IGNORECASE)


def check_memory_size(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _SIZE.match(value):
        raise ConfigError(f"{where}: expected a size such as 2GB or 512MB, got {value!r}")
    return value.strip()


def choice(*values: str, aliases: Mapping[str, str] | None = None) -> Callable[[Any, str], str]:
    """A check that accepts one of ``values`` (or an alias of one), with a "did you mean"."""

    def check(value: Any, where: str) -> str:
        text = check_text(value, where)
        name = (aliases or {}).get(text, text)
        if name not in values:
            close = difflib.get_close_matches(str(name), list(values), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"{where}: expected one of {', '.join(values)}, got {value!r}{hint}")
        return name

    return check


def json_schema(schema: Mapping[str, Any]) -> WithJsonSchema:
    """The JSON Schema published for a field (docs/config.schema.json)."""
    return WithJsonSchema(dict(schema))


Text = Annotated[str, checked(check_text)]
Flag = Annotated[bool, checked(check_flag)]
PositiveInt = Annotated[int, checked(check_positive_int), WithJsonSchema({"type": "integer", "minimum": 1})]
Count = Annotated[int, checked(check_count), WithJsonSchema({"type": "integer", "minimum": 0})]
Number = Annotated[float, checked(check_number), WithJsonSchema({"type": "number"})]
PositiveNumber = Annotated[
    float, checked(check_positive_number), WithJsonSchema({"type": "number", "exclusiveMinimum": 0})
]
Seconds = Annotated[float, checked(check_seconds), WithJsonSchema({"type": "number", "exclusiveMinimum": 0})]
UnitInterval = Annotated[
    float, checked(check_unit_interval), WithJsonSchema({"type": "number", "minimum": 0, "maximum": 1})
]
Probability = Annotated[
    float, checked(check_probability), WithJsonSchema({"type": "number", "exclusiveMinimum": 0, "maximum": 1})
]
#: JSON Schema of a share of the records: a number in [0, 1] or a percent text such as ``5%``.
FRACTION_SCHEMA = {
    "anyOf": [
        {"type": "number", "minimum": 0.0, "maximum": 1.0},
        {"type": "string", "pattern": r"^\s*[0-9]+(\.[0-9]+)?\s*%\s*$"},
    ]
}
Fraction = Annotated[float, checked(parse_fraction), WithJsonSchema(FRACTION_SCHEMA)]
MemorySize = Annotated[
    str,
    checked(check_memory_size),
    WithJsonSchema({"type": "string", "pattern": r"^\d+(\.\d+)?\s*[KMGT]?i?B$"}),
]


class Section(BaseModel):
    """A frozen section of a specification: unknown keys are errors, types are strict."""

    # defer_build: a model's validator is built when it first validates, not when its module is
    # imported (a configuration whose keys are wrong is refused before any is built)
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)


def validation_error(
    exc: ValidationError,
    where: str,
    sections: Mapping[str, type[BaseModel]] | None = None,
    options: Mapping[str, str] | None = None,
) -> ConfigError:
    """The first error of a pydantic validation as one line: ``WHERE: key.path[0]: message``.

    ``where`` is ``"FILE:"`` (or a prefix such as ``"privacy.risk"``); an unknown key is
    reported with the known keys of its section (``sections`` maps a key path to its model)
    and a "did you mean". ``options`` maps key paths that came from command-line options (or
    Python keywords) to the option's name, which then names the error instead of the file.
    """
    return validation_errors(exc, where, sections, options)[0]


def validation_errors(
    exc: ValidationError,
    where: str,
    sections: Mapping[str, type[BaseModel]] | None = None,
    options: Mapping[str, str] | None = None,
) -> list[ConfigError]:
    """Every error of a pydantic validation, each as :func:`validation_error` writes the first."""
    return [_error_line(error, where, sections, options) for error in exc.errors(include_url=False)]


def _error_line(
    error: Any,
    where: str,
    sections: Mapping[str, type[BaseModel]] | None,
    options: Mapping[str, str] | None,
) -> ConfigError:
    loc = list(error["loc"])
    parts: list[str] = []
    for i, part in enumerate(loc):
        if part == "[key]":
            continue
        is_key = i + 1 < len(loc) and loc[i + 1] == "[key]"
        parts.append(f"[{part}]" if isinstance(part, int) and not is_key else f".{part}")
    inner = (error.get("ctx") or {}).get("key")
    if inner:
        parts.append(f".{inner}")
    path = "".join(parts).lstrip(".")
    message = str(error["msg"])
    if error["type"] == "missing":
        parent, _, name = path.rpartition(".")
        return ConfigError(f"{key_path(where, parent) if parent else where.rstrip(':')}: missing {name}")
    if error["type"] == "extra_forbidden":
        parent = path.rsplit(".", 1)[0] if "." in path else ""
        known = (sections or {}).get(parent)
        if known is not None:
            try:
                check_keys(
                    {loc[-1]: None}, set(known.model_fields), key_path(where, parent) if parent else where
                )
            except ConfigError as unknown:
                return unknown
    # the most specific option first (--rounds sets local_recoding.rounds, --local-recoding local_recoding)
    for option_path, option in sorted((options or {}).items(), key=lambda item: -len(item[0])):
        if path == option_path or path.startswith(option_path + "."):
            return ConfigError(f"{option}: {message}")
    return ConfigError(f"{key_path(where, path) if path else where.rstrip(':')}: {message}")


def option_error(exc: ValidationError) -> ConfigError:
    """The first error of a command's options as one line naming the option (``--k: ...``)."""
    error = exc.errors(include_url=False)[0]
    parts = [str(p) for p in error["loc"] if p != "[key]"]
    inner = (error.get("ctx") or {}).get("key")
    if inner:
        parts.append(str(inner))
    if not parts:
        return ConfigError(str(error["msg"]))
    name = ".".join(["--" + parts[0].replace("_", "-"), *parts[1:]])
    if error["type"] == "missing":
        return ConfigError(f"{name}: missing (required)")
    if error["type"] == "extra_forbidden":
        return ConfigError(f"unknown option {name}")
    return ConfigError(f"{name}: {error['msg']}")


def comma_list(value: Any) -> Any:
    """A list given as a comma-separated text (the command line) or as a list (Python, YAML)."""
    return split_list(value) if isinstance(value, str) else value


TextList = Annotated[
    list[Text],
    BeforeValidator(comma_list),
    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}),
]
