"""Configuration files: what is accepted and how mistakes are reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeshare.config import load_config
from safeshare.data.schema import Role
from safeshare.errors import ConfigError, DataError, HierarchyError
from safeshare.models import KAnonymity
from tests.conftest import ADULT_DIR


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "h.csv").write_text("a;*\nb;*\n")
    (tmp_path / "d.csv").write_text("x,y\na,1\nb,2\n")
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


BASE = """
input: {path: d.csv}
attributes:
  x: {role: quasi, hierarchy: h.csv}
privacy: {k-anonymity: {k: 2}}
"""


def test_adult_example_config_loads() -> None:
    cfg = load_config(ADULT_DIR / "adult.yaml")
    assert cfg.schema.quasi_identifiers[0] == "age" and len(cfg.schema.quasi_identifiers) == 9
    assert cfg.schema.role("fnlwgt") is Role.IDENTIFYING
    assert cfg.schema.role("capital-gain") is Role.SENSITIVE
    assert isinstance(cfg.privacy[0], KAnonymity) and cfg.privacy[0].k == 5
    assert cfg.max_suppression == 0.05 and cfg.metric == "prec" and cfg.algorithm == "ola"
    assert cfg.source.path == (ADULT_DIR / "adult.data").resolve()
    assert cfg.release_format == "csv"


def test_minimal_config_and_overrides(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, BASE))
    with pytest.raises(DataError, match="'y' has no role"):  # unlisted columns need default_role
        cfg.schema.role("y")
    kept = load_config(write(tmp_path, BASE + "default_role: insensitive\n"))
    assert kept.schema.role("y") is Role.INSENSITIVE
    over = cfg.with_overrides(k=3, max_suppression=0.1, metric="dm*", engine="duckdb")
    assert over.privacy[0].k == 3  # type: ignore[attr-defined]
    assert (over.max_suppression, over.metric, over.engine) == (0.1, "dm_star", "duckdb")
    assert cfg.privacy[0].k == 2  # type: ignore[attr-defined]  # the original is untouched


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BASE + "max_suppression: 2\n", "max_suppression: expected a fraction in [0, 1]"),
        (BASE + "max_suppression: -0.1\n", "max_suppression"),
        (BASE + "metric: loss\n", "metric: unknown metric 'loss'"),
        (BASE + "engine: hive\n", "engine: expected one of memory, duckdb, spark"),
        (BASE + "xylophone: 1\n", "c.yaml: xylophone: unknown key; expected one of "),
        (BASE.replace("k: 2", "k: 0"), "privacy.k-anonymity.k: expected an integer >= 1, got 0"),
        (BASE.replace("k: 2", "k: two"), "privacy.k-anonymity.k"),
        (BASE.replace("k-anonymity", "k-map"), "unknown privacy model 'k-map'"),
        (
            BASE.replace("role: quasi, hierarchy: h.csv", "role: quasi"),
            "x: a quasi-identifier needs a hierarchy",
        ),
        (BASE.replace("role: quasi", "role: secret"), "unknown role 'secret' for column 'x'"),
        ("input: [1, 2]\n", "input: expected a mapping"),
        ("- not a mapping\n", "expected a mapping at the top level"),
        ("input: {path: d.csv\n", "c.yaml line"),
        (BASE.replace("input: {path: d.csv}", "input: {path: d.csv, header: false}"), "needs 'names'"),
    ],
)
def test_config_errors_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_privacy_may_be_missing_only_for_inverse_ola(tmp_path: Path) -> None:
    text = "input: {path: d.csv}\nattributes: {x: {role: quasi, hierarchy: h.csv}}\n"
    with pytest.raises(ConfigError, match="privacy: missing"):  # validated once, when loaded
        load_config(write(tmp_path, text))
    over = load_config(write(tmp_path, text), algorithm="inverse-ola", max_loss=0.5)
    cfg = over
    assert [type(m) for m in over.privacy] == [KAnonymity] and over.privacy[0].k == 1  # type: ignore[attr-defined]
    assert over.algorithm_options() == {"max_loss": 0.5}
    assert cfg.with_overrides(k=4).privacy[0].k == 4  # type: ignore[attr-defined]


def test_missing_hierarchy_file_and_config_file(tmp_path: Path) -> None:
    with pytest.raises(HierarchyError, match="cannot read hierarchy"):
        load_config(write(tmp_path, BASE.replace("h.csv", "nope.csv")))
    with pytest.raises(ConfigError, match="cannot read configuration"):
        load_config(tmp_path / "absent.yaml")


# --------------------------------------------------------------------------- hostile YAML (issue 7 item 8)
BILLION_LAUGHS = """\
input: {path: d.csv}
attributes:
  x: {role: quasi, hierarchy: h.csv}
privacy: {k-anonymity: {k: 2}}
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
metric: *i
"""


def test_alias_bomb_is_refused_before_expansion(tmp_path: Path) -> None:
    """A billion-laughs config fails at the first alias (line 6), before anything is expanded."""
    import tracemalloc

    path = write(tmp_path, BILLION_LAUGHS)
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError) as info:
            load_config(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(info.value) == f"{path} line 6: YAML aliases (*name) are not allowed"
    assert peak < 20 * 2**20  # the expansion would need gigabytes


def test_alias_used_once_is_refused_too(tmp_path: Path) -> None:
    text = BASE.replace("privacy: {", "privacy: &p {") + "knowledge: *p\n"
    with pytest.raises(ConfigError, match=r"c\.yaml line 6: YAML aliases \(\*name\) are not allowed$"):
        load_config(write(tmp_path, text))


def test_config_over_the_size_limit_is_refused_before_parsing(tmp_path: Path) -> None:
    from safeshare.config_checks import MAX_CONFIG_BYTES

    text = BASE + "#" * MAX_CONFIG_BYTES + "\n"
    with pytest.raises(ConfigError, match=r"c\.yaml: the configuration is larger than 1 MiB"):
        load_config(write(tmp_path, text))


def test_deeply_nested_config_is_one_line(tmp_path: Path) -> None:
    text = BASE + "metric: " + "[" * 100_000 + "]" * 100_000 + "\n"
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    assert "c.yaml" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            BASE.replace("hierarchy: h.csv}", "hierarchy: h.csv}\n  x: insensitive"),
            "c.yaml line 5: attributes.x: duplicate key (first on line 4)",
        ),
        (BASE + "metric: prec\nmetric: dm_star\n", "c.yaml line 7: metric: duplicate key (first on line 6)"),
        (
            BASE.replace("{k: 2}", "{k: 2, k: 3}"),
            "c.yaml line 5: privacy.k-anonymity.k: duplicate key (first on line 5)",
        ),
    ],
)
def test_duplicate_keys_are_refused_in_every_mapping(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    assert str(info.value) == f"{tmp_path / 'c.yaml'}{message.removeprefix('c.yaml')}"


def test_the_schema_is_pydantic_and_published_for_editors() -> None:
    """The configuration's shape is one set of pydantic models (unknown keys forbidden at every
    level); docs/config.schema.json is their JSON Schema, kept current by this test."""
    import json

    from safeshare.config import AttributeSection, ConfigFile, InputSection, OutputSection, config_json_schema

    for model in (ConfigFile, InputSection, OutputSection, AttributeSection):
        assert model.model_config.get("extra") == "forbid", model
    published = Path(__file__).resolve().parents[1] / "docs" / "config.schema.json"
    assert published.read_text() == config_json_schema(), (
        "regenerate it: python -c 'from safeshare.config import config_json_schema as s; "
        'print(s(), end="")\' > docs/config.schema.json'
    )
    schema = json.loads(published.read_text())
    assert schema["additionalProperties"] is False and set(schema["required"]) == {"input", "attributes"}
    assert schema["properties"]["max_suppression"] == {  # a fraction, or a percent such as 5%
        "anyOf": [
            {"maximum": 1.0, "minimum": 0.0, "type": "number"},
            {"pattern": r"^\s*[0-9]+(\.[0-9]+)?\s*%\s*$", "type": "string"},
        ],
        "default": 0.0,
        "title": "Max Suppression",
    }
    for section in ("InputSection", "OutputSection", "AttributeSection", "EpsilonSafeOptions"):
        assert schema["$defs"][section]["additionalProperties"] is False
    # every privacy model's keys (issue 19), per-column l-diversity and t-closeness included
    privacy = schema["$defs"]["Privacy"]
    assert privacy["additionalProperties"] is False and set(privacy["properties"]) == {
        "k-anonymity",
        "l-diversity",
        "t-closeness",
        "m-concealing",
        "risk",
        "small-cells",
        "profile-anonymity",
    }
    for model in ("LDiversityParams", "TClosenessParams"):
        assert "columns" in schema["$defs"][model]["properties"]
        assert schema["$defs"][model]["additionalProperties"] is False


def test_duckdb_section(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, BASE + "duckdb: {memory_limit: 1.5GB, threads: 3}\n"))
    assert cfg.duckdb == {"memory_limit": "1.5GB", "threads": 3}
    assert load_config(write(tmp_path, BASE)).duckdb == {}
    over = cfg.with_overrides(duckdb_threads=1, duckdb_memory_limit="200MB")
    assert over.duckdb == {"memory_limit": "200MB", "threads": 1}
    for text, message in [
        ("duckdb: {threads: 0}\n", "duckdb.threads: expected an integer >= 1"),
        ("duckdb: {memory_limit: lots}\n", "duckdb.memory_limit: expected a size such as 2GB or 512MB"),
        ("duckdb: {memory: 1GB}\n", "duckdb"),
    ]:
        with pytest.raises(ConfigError, match=message):
            load_config(write(tmp_path, BASE + text))


def test_max_suppression_may_be_a_percent_in_yaml(tmp_path: Path) -> None:
    """``max_suppression: 5%`` works in YAML as on the command line (issue 19)."""
    assert load_config(write(tmp_path, BASE + "max_suppression: 5%\n")).max_suppression == 0.05
    assert load_config(write(tmp_path, BASE + "max_suppression: 0.05\n")).max_suppression == 0.05
    for bad in ("5", "105%", "five%"):
        with pytest.raises(ConfigError, match="max_suppression: expected a fraction in"):
            load_config(write(tmp_path, BASE + f"max_suppression: {bad}\n"))


def test_l_diversity_may_be_limited_to_some_sensitive_columns(tmp_path: Path) -> None:
    """YAML can name the sensitive columns of l-diversity and t-closeness, as Python can."""
    (tmp_path / "h.csv").write_text("a;*\nb;*\n")
    (tmp_path / "d.csv").write_text("x,s,t\na,1,u\nb,2,v\n")
    text = (
        "input: {path: d.csv}\nattributes: {x: {role: quasi, hierarchy: h.csv}, s: sensitive, t: sensitive}\n"
        "privacy: {l-diversity: {l: 2, columns: [s]}, t-closeness: {t: 0.5, columns: [t]}}\n"
    )
    (tmp_path / "c.yaml").write_text(text)
    cfg = load_config(tmp_path / "c.yaml")
    criterion = cfg.spec().criterion()
    assert [m.sensitive_columns for m in criterion.models] == [("s",), ("t",)]
    (tmp_path / "c.yaml").write_text(text.replace("columns: [s]", "columns: [x]"))
    with pytest.raises(ConfigError, match="x"):
        load_config(tmp_path / "c.yaml").spec()


def test_the_config_knows_the_roles_without_importing_the_schema() -> None:
    from safeshare.config.file import ROLES

    assert tuple(role.value for role in Role) == ROLES


def test_validating_a_configuration_imports_no_numerical_module(tmp_path: Path) -> None:
    """A configuration error is found before numpy, pandas or a search is imported (start-up, issue 19)."""
    import subprocess
    import sys

    path = write(tmp_path, BASE + "metirc: prec\n")
    code = (
        "import sys\nfrom safeshare.config import load_config\n"
        f"try:\n    load_config({str(path)!r})\nexcept Exception as exc:\n    print(type(exc).__name__)\n"
        "print(sorted(m for m in ('numpy', 'pandas', 'scipy', 'duckdb', 'numba') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:2] == ["ConfigError", "[]"], out
