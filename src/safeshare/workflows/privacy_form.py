"""The workbench's Privacy form, read from the configuration and written back through its models
(issue 31: saving the form dropped l-diversity's ``c`` and ``columns``, t-closeness's ``distance``
and ``columns``, m-concealing's ``inclusion_probability``, risk's ``measure``, ``estimator``,
``population_size`` and ``use``, and wrote ``metric: prec`` into a file that had none).

**The fields.** One per parameter of every privacy model of the registry
(:data:`safeshare.models.registry.PRIVACY_MODELS`), of the kind its JSON Schema gives (an
integer, a number, a choice among an ``enum``, a list of columns, a mapping ``column=value``, a
text), and one per option of the screen (:data:`OPTIONS`: ``population_size``,
``max_suppression``, ``metric``, ``algorithm`` with its options ``max_loss``, ``time_limit`` and
``exact_max_nodes``, ``engine``, ``local_recoding`` with ``rounds``, ``threshold_reason``). A
model gets a field per parameter it has or will have: a new parameter of the registry is on the
screen without a line here.

**The round trip.** Each field is shown with the text of the configuration's value (:func:`text_of`;
an absent key: its *blank*, the default of a choice, else empty). On saving, a field whose posted
text is the text it was shown with keeps the configuration's value as it was (absent stays absent,
``5%`` stays ``5%``, ``l: 2`` stays an integer); a field not posted is unchanged too. So saving
an unchanged form leaves the YAML unchanged, for every model and option
(tests/test_ui_privacy_form.py). A changed field is parsed by its kind (:func:`parse_text`) and
every model whose fields changed is validated by its parameters model
(:func:`safeshare.models.registry.model_params`: the configuration's own rules, e.g. recursive
l-diversity needs ``c``) before anything is saved; a bad field is one line naming it.

**Which models are used.** A model is used when the configuration has it and its box stays ticked,
or, new, when its box is ticked or one of its fields is filled in. A post without the form's
``models_shown`` marker (a script posting a few fields) cannot tick boxes: there, a model is used
when one of its fields is filled in, or when the configuration has it and the post does not touch it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from safeshare.config.vocabulary import METRICS
from safeshare.errors import InputError
from safeshare.workflows.form_fields import Field as Field  # re-exported (workbench)
from safeshare.workflows.governance_form import apply_governance_form, governance_fields

#: The form's short names of the parameters it showed before issue 31 (the browser tests' ids).
SHORT_NAMES: dict[tuple[str, str], str] = {
    ("k-anonymity", "k"): "k",
    ("l-diversity", "l"): "l",
    ("l-diversity", "variant"): "l_variant",
    ("t-closeness", "t"): "t",
    ("m-concealing", "m"): "m",
    ("m-concealing", "knowledge"): "knowledge",
    ("risk", "threshold"): "threshold",
}
#: The marker of a form the screen rendered (its boxes say which models are used).
SHOWN = "models_shown"
#: Longest threshold reason kept (characters, after collapsing white space).
MAX_REASON = 500
_INTEGER = re.compile(r"[+-]?\d+")


@dataclass(frozen=True)
class ModelForm:
    """A privacy model's part of the form: whether the configuration uses it, its fields."""

    name: str
    used: bool
    fields: tuple[Field, ...]
    description: str = ""

    @property
    def box(self) -> str:
        """The name of the model's "used" box."""
        return f"use.{self.name}"


# --------------------------------------------------------------------------- texts
def text_of(value: Any) -> str:
    """The form's text of a configuration value: ``a, b`` for a list, ``a=1, b=2`` for a mapping,
    ``5``, ``0.05``, ``5%`` as YAML wrote them, the empty text for ``None``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ", ".join(text_of(v) for v in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={text_of(v)}" for k, v in value.items())
    return str(value)


def _number(text: str, name: str, kind: str) -> int | float:
    if _INTEGER.fullmatch(text):
        return int(text)
    if kind == "integer":
        raise InputError(f"{name}: expected a whole number, got {text[:40]!r}")
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{name}: expected a number, got {text[:40]!r}") from None
    if not math.isfinite(value):
        raise InputError(f"{name}: expected a finite number, got {text[:40]!r}")
    return value


def _items(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_text(field: Field, text: str) -> Any:
    """The configuration value of a changed field's ``text`` (the kinds of :func:`text_of`);
    :class:`InputError` naming the field when it is not one."""
    text = text.strip()
    if field.kind in ("integer", "number"):
        return _number(text, field.name, field.kind)
    if field.kind == "list":
        return _items(text)
    if field.kind == "mapping" or (field.kind == "text" and field.values == "text" and "=" in text):
        out: dict[str, Any] = {}
        for part in _items(text):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise InputError(f"{field.name}: expected column=value, got {part[:40]!r}")
            value = value.strip()
            out[key.strip()] = (
                _number(value, f"{field.name} of {key.strip()}", "number")
                if (field.values == "number")
                else value
            )
        return out
    if field.kind == "fraction":
        share = _number(text.rstrip("%").strip(), field.name, "number")
        return share / 100 if text.endswith("%") else share
    return text


# --------------------------------------------------------------------------- fields
def _unwrap(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """A property's schema without its ``null`` alternative."""
    options = [s for s in schema.get("anyOf", []) if s.get("type") != "null"]
    if len(options) == 1:
        return {**{k: v for k, v in schema.items() if k != "anyOf"}, **options[0]}
    return schema


def _field(model: str, key: str, schema: Mapping[str, Any]) -> Field:
    """The field of a model's parameter, of the kind its JSON Schema gives."""
    name = SHORT_NAMES.get((model, key), f"{model}.{key}")
    prop = _unwrap(schema)
    default = prop.get("default")
    hint = "" if default is None else f"default {text_of(default)}"
    if "enum" in prop:
        choices = tuple(str(c) for c in prop["enum"])
        return Field(name, key, "choice", choices, blank=text_of(default))
    if "anyOf" in prop:  # a choice or a mapping column -> choice (t-closeness's distance)
        choices = tuple(str(c) for s in prop["anyOf"] for c in s.get("enum", []))
        hint = f"{' | '.join(choices)}, or column={choices[0]}, ..."
        return Field(name, key, "text", placeholder=hint, values="text")
    kind = {"integer": "integer", "number": "number", "array": "list", "object": "mapping"}.get(
        str(prop.get("type")), "text"
    )
    if kind == "list":
        hint = "columns, comma-separated (default: every sensitive column)"
    elif kind == "mapping":
        hint = "column=probability, ..."
    return Field(name, key, kind, placeholder=hint)


def model_fields() -> dict[str, tuple[Field, ...]]:
    """Every registered privacy model's fields, in the registry's order."""
    from safeshare.models.registry import PRIVACY_MODELS

    out: dict[str, tuple[Field, ...]] = {}
    for model, params in PRIVACY_MODELS.items():
        schema = params.model_json_schema()
        out[model] = tuple(_field(model, key, prop) for key, prop in schema["properties"].items())
    return out


def _algorithms() -> tuple[str, ...]:
    from safeshare.config.algorithms import ALGORITHMS

    return tuple(ALGORITHMS)


def option_fields() -> tuple[Field, ...]:
    """The screen's options (top-level keys of the configuration)."""
    return (
        Field("population_size", "population_size", "integer", placeholder="the input is the population"),
        Field("max_suppression", "max_suppression", "fraction", blank="0", placeholder="0.05 or 5%"),
        Field("metric", "metric", "choice", METRICS, blank=METRICS[0]),
        Field("algorithm", "algorithm", "choice", _algorithms(), blank="ola"),
        Field("engine", "engine", "choice", ("memory", "duckdb"), blank="memory"),
        # the search strategies' own options (docs/anytime.md, docs/inverse-ola.md)
        Field("max_loss", "max_loss", "number", placeholder="inverse-ola: 0.5"),
        Field("time_limit", "time_limit", "number", placeholder="anytime, auto: seconds"),
        Field("exact_max_nodes", "exact_max_nodes", "integer", placeholder="auto: 500000"),
        Field("local_recoding", "local_recoding", "flag"),
        Field("rounds", "rounds", "integer", placeholder="100"),
        Field("threshold_reason", "threshold_reason", "text"),
    )


def _shown(field: Field, params: Mapping[str, Any]) -> Field:
    text = text_of(params[field.key]) if field.key in params else field.blank
    choices = field.choices
    if field.kind == "choice" and text not in choices:  # a value the screen does not list stays
        choices = (*choices, text)
    return replace(field, text=text, choices=choices)


def _section(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def privacy_form(config: Mapping[str, Any], reason: str | None = None) -> tuple[list[ModelForm], list[Field]]:
    """The form of ``config``: every model (used or not) with its fields shown, and the options.
    ``reason``: the threshold reason to show when the configuration has none (the workbench
    remembers the last one typed)."""
    privacy = _section(config.get("privacy"))
    models = [
        ModelForm(
            name,
            name in privacy,
            tuple(_shown(f, _section(privacy.get(name))) for f in fields),
            _description(name),
        )
        for name, fields in model_fields().items()
    ]
    options = [_shown_option(f, config, reason) for f in option_fields()]
    return models, options + governance_fields(config)  # the release context (issue 35)


def _description(model: str) -> str:
    from safeshare.models.registry import PRIVACY_MODELS

    doc = PRIVACY_MODELS[model].__doc__ or ""
    return " ".join(doc.split())


def _shown_option(field: Field, config: Mapping[str, Any], reason: str | None) -> Field:
    recoding = config.get("local_recoding")
    if field.key == "local_recoding":
        return replace(field, text="1" if recoding not in (None, False) else "")
    if field.key == "rounds":
        return replace(field, text=text_of(_section(recoding).get("rounds")))
    if field.key == "threshold_reason" and config.get("threshold_reason") is None:
        return replace(field, text=reason or "")
    if field.key == "population_size" and isinstance(config.get("population"), Mapping):
        return _shown(field, {"population_size": config["population"].get("size")})  # issue 33
    return _shown(field, config)


# --------------------------------------------------------------------------- saving
def _posted(form: Mapping[str, Any], field: Field) -> str:
    """The posted text of ``field`` (not posted: the text it was shown with, i.e. unchanged)."""
    value = form.get(field.name)
    return field.text if value is None else str(value).strip()


def _params(
    model: ModelForm, previous: Mapping[str, Any], form: Mapping[str, Any]
) -> tuple[dict[str, Any], bool]:
    """The model's parameters from the form, and whether a field changed."""
    params = dict(previous)
    changed = False
    for field in model.fields:
        text = _posted(form, field)
        if text == field.text.strip():
            continue
        changed = True
        if text == field.blank:
            params.pop(field.key, None)
        else:
            params[field.key] = parse_text(field, text)
    return params, changed


def apply_privacy_form(
    config: Mapping[str, Any], form: Mapping[str, Any], reason: str | None = None
) -> dict[str, Any]:
    """``config`` with the posted ``form`` (see the module docstring: unchanged fields keep their
    values; changed models are validated by their parameters models). ``reason`` as for
    :func:`privacy_form`. Raises :class:`InputError` naming the field; ``config`` is not changed."""
    from safeshare.models.registry import model_params

    models, options = privacy_form(config, reason)
    out = dict(config)
    previous = _section(config.get("privacy"))
    privacy: dict[str, Any] = {}
    boxes = SHOWN in form
    for model in models:
        params, changed = _params(model, _section(previous.get(model.name)), form)
        filled = any(_posted(form, f) not in ("", f.blank) for f in model.fields)
        if boxes:  # the screen's form: its box says (a new model: or a field filled in)
            ticked = model.box in form
            used = ticked if model.used else (ticked or filled)
        else:  # a script's post: a model is used when a field is filled in, or it is not touched
            used = filled or (model.used and not changed)
        if not used:
            continue
        if model.used and not changed:
            privacy[model.name] = previous[model.name]  # as it was (even ``risk:`` alone)
            continue
        model_params(model.name, params, "privacy")  # the configuration's own rules, one line
        privacy[model.name] = params
    for name in previous:
        if name not in privacy and name not in {m.name for m in models}:
            privacy[name] = previous[name]  # a model the registry does not know: the loader says so
    if privacy:
        out["privacy"] = privacy
    else:
        out.pop("privacy", None)
    plain = {o.key for o in option_fields()}  # the rest of ``options``: the release context
    _apply_options(out, config, [f for f in options if f.key in plain], form, has_risk="risk" in privacy)
    apply_governance_form(out, config, form)  # purpose, approver, N's source, governance:
    if out.get("algorithm", "ola") != "node":
        out.pop("levels", None)  # a node's levels belong to algorithm: node only (issue 35)
    return out


def _drop_other_algorithms_keys(
    out: dict[str, Any], config: Mapping[str, Any], form: Mapping[str, Any], by_key: Mapping[str, Field]
) -> None:
    """A changed algorithm leaves no option of the one before that it takes not (``max_loss`` of
    inverse-ola under ola would make the configuration refuse to load), unless this post gave it."""
    from safeshare.config.algorithms import config_keys

    name = str(out.get("algorithm", "ola"))
    if name == str(config.get("algorithm", "ola")):
        return
    for key, owners in config_keys().items():
        field = by_key.get(key)
        posted = field is not None and _posted(form, field) != field.text.strip()
        if name not in owners and key in out and key != "levels" and not posted:
            out.pop(key, None)


def _apply_options(
    out: dict[str, Any],
    config: Mapping[str, Any],
    options: list[Field],
    form: Mapping[str, Any],
    has_risk: bool,
) -> None:
    by_key = {f.key: f for f in options}
    for field in options:
        if field.key in ("local_recoding", "rounds", "threshold_reason"):
            continue
        text = _posted(form, field)
        if text == field.text.strip():
            continue
        section = config.get("population")
        if field.key == "population_size" and isinstance(section, Mapping):  # population: {size, source}
            if text:
                out["population"] = {**section, "size": parse_text(field, text)}
            else:  # no N: the input is the population (its source goes with it)
                out.pop("population", None)
            continue
        if not text:  # a changed option is written, even at its default (algorithm: ola)
            out.pop(field.key, None)
        else:
            from safeshare.config.file import check_key

            value = parse_text(field, text)
            check_key(field.key, value)  # the configuration's own rule, before anything is saved
            out[field.key] = value
    if out.get("algorithm", "ola") != config.get("algorithm", "ola") and out.get("algorithm") != "node":
        out.pop("levels", None)  # a node's levels belong to algorithm: node only (issue 35)
    _drop_other_algorithms_keys(out, config, form, by_key)
    # local recoding: a box (not posted: off) and its rounds
    box, rounds = by_key["local_recoding"], by_key["rounds"]
    on = bool(form.get(box.name))
    rounds_text = _posted(form, rounds)
    if on != bool(box.text) or rounds_text != rounds.text.strip():
        if on:
            n = parse_text(rounds, rounds_text) if rounds_text else None
            out["local_recoding"] = {"rounds": n} if n is not None else True
        else:
            out.pop("local_recoding", None)
    # the threshold's reason: stated beside a risk threshold (the report's evidence, issue 20)
    field = by_key["threshold_reason"]
    text = " ".join(_posted(form, field).split())[:MAX_REASON]
    if (
        text != " ".join(field.text.split())[:MAX_REASON]
        or ("risk" in _section(config.get("privacy"))) != has_risk
    ):
        if text and has_risk:
            out["threshold_reason"] = text
        else:
            out.pop("threshold_reason", None)


def privacy_notes(config: Mapping[str, Any]) -> list[str]:
    """What the screen says beside "saved" about settings that are valid but protect little
    (issue 35: k = 1 was accepted without a word)."""
    notes = []
    privacy = _section(config.get("privacy"))
    for model in ("k-anonymity", "profile-anonymity"):
        k = _section(privacy.get(model)).get("k")
        if k == 1:
            notes.append(
                f"{model} k = 1 protects no one: every record may be alone in its class "
                "(k >= 2, or another model, bounds the risk)"
            )
    return notes


def posted_reason(form: Mapping[str, Any]) -> str:
    """The threshold reason typed in the form (white space collapsed), for the workbench to remember."""
    return " ".join(str(form.get("threshold_reason", "")).split())[:MAX_REASON]
