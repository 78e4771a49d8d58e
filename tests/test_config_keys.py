"""Every key of a configuration is checked (issue 7 item 9).

A typo anywhere, an option that does not apply to the selected algorithm or variant,
and a value of the wrong type are errors naming the key path, on one line, with a
"did you mean" when a known key is close. Nothing is silently ignored.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from safeshare.config import load_config
from safeshare.errors import ConfigError
from tests.conftest import ADULT_DIR

BASE = """\
input: {path: d.csv}
attributes:
  x: {role: quasi, hierarchy: h.csv}
  s: {role: sensitive}
privacy: {k-anonymity: {k: 2}}
"""


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "h.csv").write_text("a;*\nb;*\n")
    (tmp_path / "d.csv").write_text("x,y,s\na,1,u\nb,2,v\n")
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


def sub(old: str, new: str) -> str:
    assert old in BASE
    return BASE.replace(old, new)


DP = "algorithm: epsilon-safe\ndp: {beta: 0.5, epsilon_prime: 0.5, utility: safepub}\n"
#: BASE for epsilon-safe, which releases quasi-identifiers only (its requirements are checked
#: when the configuration is loaded: issue 30, item 18)
DP_BASE = sub("s: {role: sensitive}", "s: {role: identifying}")

CASES = [
    # unknown keys at every level, with "did you mean"
    (BASE + "metirc: prec\n", "metirc: unknown key; did you mean 'metric'?"),
    (BASE + "zzz: 1\n", "zzz: unknown key; expected one of "),
    (
        sub("{path: d.csv}", "{path: d.csv, delimitr: ','}"),
        "input.delimitr: unknown key; did you mean 'delimiter'?",
    ),
    (BASE + "output: {delimitr: ';'}\n", "output.delimitr: unknown key; did you mean 'delimiter'?"),
    (BASE + "output: {fromat: csv}\n", "output.fromat: unknown key; did you mean 'format'?"),
    (
        sub("{role: sensitive}", "{role: sensitive, hirarchy: h.csv}"),
        "attributes.s.hirarchy: unknown key; did you mean 'hierarchy'?",
    ),
    (sub("{k: 2}", "{k: 2, kk: 3}"), "privacy.k-anonymity.kk: unknown key; did you mean 'k'?"),
    (
        sub("{k-anonymity: {k: 2}}", "{l-diversity: {l: 2, variant: distinct, c: 2}}"),
        "privacy.l-diversity.c: applies to variant: recursive only",
    ),
    (
        sub("{k-anonymity: {k: 2}}", "{t-closeness: {t: 0.2, tt: 1}}"),
        "privacy.t-closeness.tt: unknown key; did you mean 't'?",
    ),
    (
        sub("{k-anonymity: {k: 2}}", "{m-concealing: {m: 0.5, knowledge: {s: 0.1}, inclusion: 1}}"),
        "privacy.m-concealing.inclusion: unknown key; did you mean 'inclusion_probability'?",
    ),
    (
        BASE + "algorithm: epsilon-safe\ndp: {beta: 0.5, epsilon_prime: 0.5, utility: safepub, seeed: 1}\n",
        "dp.seeed: unknown key; did you mean 'seed'?",
    ),
    (
        sub("hierarchy: h.csv", "hierarchy: {type: intervals, width: [5]}"),
        "attributes.x.hierarchy.width: unknown key; did you mean 'widths'?",
    ),
    # options that do not apply to the selected algorithm
    (BASE + "dp: {beta: 0.5}\n", "dp: applies to algorithm: epsilon-safe only (algorithm is ola)"),
    (
        BASE + "algorithm: exhaustive\ndp: {beta: 0.5}\n",
        "dp: applies to algorithm: epsilon-safe only (algorithm is exhaustive)",
    ),
    (BASE + "algorithm: inverse-ola\nmax_loss: 0.5\ndp: {}\n", "dp: applies to algorithm: epsilon-safe only"),
    (BASE + "max_loss: 0.5\n", "max_loss: applies to algorithm: inverse-ola only (algorithm is ola)"),
    (
        BASE + DP.replace("}", ", penalty: 0.1}"),
        "dp.penalty: does not apply to utility: safepub",
    ),
    (BASE + "algorithm: olla\n", "algorithm: unknown algorithm 'olla'; did you mean 'ola'?"),
    (BASE + "utility: {target: income}\n", "utility: not read from the configuration"),
    # values of the wrong type
    (sub("{path: d.csv}", "{path: d.csv, missing: [null]}"), "input.missing[0]: expected a text, got null"),
    (sub("{path: d.csv}", "{path: d.csv, missing: [-1]}"), "input.missing[0]: expected a text, got -1"),
    (sub("{path: d.csv}", "{path: d.csv, delimiter: 1}"), "input.delimiter: expected a text, got 1"),
    (sub("{path: d.csv}", "{path: d.csv, encoding: 8}"), "input.encoding: expected a text, got 8"),
    (sub("{path: d.csv}", "{path: 5}"), "input.path: expected a text, got 5"),
    (BASE + "output: {delimiter: 9}\n", "output.delimiter: expected a text, got 9"),
    (BASE + "output: {format: 7}\n", "output.format: expected csv or parquet, got 7"),
    (BASE + "output: [csv]\n", "output: expected a mapping"),
    (sub("{role: sensitive}", "{role: 3}"), "attributes.s.role: expected a text, got 3"),
    (sub("  s: {role: sensitive}", "  1: {role: sensitive}"), "attributes.1: expected a name as key, got 1"),
    (BASE + "prec_weights: {xx: 2}\n", "prec_weights.xx: unknown key; did you mean 'x'?"),
    (BASE + "prec_weights: {s: 2}\n", "prec_weights.s: not a quasi-identifier"),
    (BASE + "knowledge: {1: 0.1}\n", "knowledge.1: expected a name as key, got 1"),
    (BASE + "algorithm: 3\n", "algorithm: expected a text, got 3"),
]


@pytest.mark.parametrize(("text", "message"), CASES)
def test_bad_key_paths_are_named(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    shown = str(info.value)
    assert shown.startswith(f"{path}: "), shown
    assert message in shown, shown
    assert "\n" not in shown


def test_base_config_and_allowed_keys_load(tmp_path: Path) -> None:
    text = (
        BASE.replace("{path: d.csv}", "{path: d.csv, missing: ['?', 'NA'], ragged: error}")
        + "default_role: insensitive\noutput: {format: csv, delimiter: ';'}\nprec_weights: {x: 2}\n"
        + "knowledge: {s: 0.1}\n"
    )
    cfg = load_config(write(tmp_path, text))
    assert cfg.source.missing == ("?", "NA") and cfg.output_delimiter == ";"
    load_config(write(tmp_path, BASE + "algorithm: inverse-ola\nmax_loss: 0.5\n"))
    load_config(write(tmp_path, DP_BASE + DP))


def test_overriding_the_algorithm_rechecks_its_options(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, DP_BASE + DP))
    with pytest.raises(
        ConfigError, match=r"c\.yaml: dp: applies to algorithm: epsilon-safe only \(--algorithm ola\)"
    ):
        cfg.with_overrides(algorithm="ola")
    cfg = load_config(write(tmp_path, BASE + "algorithm: inverse-ola\nmax_loss: 0.5\n"))
    with pytest.raises(
        ConfigError, match=r"max_loss: applies to algorithm: inverse-ola only \(--algorithm ola\)"
    ):
        cfg.with_overrides(algorithm="ola")
    with pytest.raises(ConfigError, match=r"--algorithm: unknown algorithm 'olla'; did you mean 'ola'\?"):
        cfg.with_overrides(algorithm="olla")


EXAMPLES = ADULT_DIR.parent


@pytest.mark.parametrize(
    "config", sorted(p.relative_to(EXAMPLES).as_posix() for p in EXAMPLES.rglob("*.y*ml"))
)
def test_every_example_config_loads(config: str) -> None:
    load_config(EXAMPLES / config)


def test_every_example_directory_is_covered() -> None:
    """The parametrization above reaches every example directory (the clinic's too)."""
    found = {p.relative_to(EXAMPLES).parts[0] for p in EXAMPLES.rglob("*.y*ml")}
    assert found == {"adult", "clinic"}, found
