"""A new criterion and a new strategy are one file and one registry line each (issue 8).

The toy criterion ``min-class-size`` and the toy strategy ``lowest-level`` of
tests/toy_extension.py are registered (PRIVACY_MODELS, ALGORITHMS, and the
verifier's EXTRA_CHECKS to publish) and run from a configuration file through
``ConfigFile.spec()`` and ``Anonymizer``, as docs/architecture.md shows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from safeshare.config import load_config
from safeshare.config.algorithms import ALGORITHMS, make_strategy
from safeshare.data.engines.memory import MemoryEngine
from safeshare.errors import ConfigError, VerificationError
from safeshare.models import KAnonymity
from safeshare.models.registry import PRIVACY_MODELS
from safeshare.search import ExhaustiveSearch
from safeshare.verify import EXTRA_CHECKS
from safeshare.workflows.anonymizer import Anonymizer
from safeshare.workflows.publish import write_release
from safeshare.workflows.release import ReleaseContext
from tests.conftest import write_small_adult
from tests.toy_extension import LOWEST_LEVEL, MinClassSize, MinClassSizeParams, check_min_class_size

QIS = ["age", "workclass", "education", "marital-status", "sex"]


@pytest.fixture
def config(tmp_path: Path) -> Path:
    directory = write_small_adult(tmp_path, n_train=800)
    text = (directory / "adult.yaml").read_text()
    for qi in ["occupation", "relationship", "race", "native-country"]:
        text = text.replace(f"  {qi}:", f"  {qi}: {{role: identifying}}  #", 1)
    text = text.replace("k-anonymity: {k: 5}", "min-class-size: {n: 5}")
    path = directory / "toy.yaml"
    path.write_text(text)
    return path


def test_a_criterion_is_one_file_and_one_registry_line(
    config: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match="unknown privacy model 'min-class-size'"):
        load_config(config)
    monkeypatch.setitem(PRIVACY_MODELS, "min-class-size", MinClassSizeParams)  # the registry line
    cfg = load_config(config)
    assert len(cfg.privacy) == 1 and isinstance(cfg.privacy[0], MinClassSize)
    assert cfg.schema.quasi_identifiers == QIS
    engine = MemoryEngine(cfg.source)
    result = Anonymizer(cfg.spec()).fit(engine)
    oracle = Anonymizer(cfg.schema, [KAnonymity(5)], max_suppression=cfg.max_suppression).fit(engine)
    assert result.found and (result.node, result.suppressed_records) == (
        oracle.node,
        oracle.suppressed_records,
    )
    assert result.search.checked_nodes == oracle.search.checked_nodes  # monotone: OLA tags as for k
    # privacy by default: without an independent check the release is refused ...
    with pytest.raises(VerificationError, match="no independent check for privacy model 'min-class-size'"):
        write_release(result, engine, tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    # ... and published once the verifier's table lists one (the third line, to publish)
    monkeypatch.setitem(EXTRA_CHECKS, "min-class-size", check_min_class_size)
    # the run's warnings that contradict its headline, acknowledged (issue 33)
    acknowledged = ReleaseContext(accepted_warnings=("kept-column-identifying",))
    published = write_release(result, engine, tmp_path / "out", context=acknowledged)
    assert published.verification.passed and published.report["privacy"]["models"] == {
        "min-class-size": {"n": 5}
    }


def test_a_strategy_is_one_file_and_one_registry_line(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PRIVACY_MODELS, "min-class-size", MinClassSizeParams)
    config.write_text(config.read_text().replace("algorithm: ola", "algorithm: lowest-level"))
    with pytest.raises(ConfigError, match="unknown algorithm 'lowest-level'"):
        load_config(config)
    monkeypatch.setitem(ALGORITHMS, "lowest-level", LOWEST_LEVEL)  # the registry line
    cfg = load_config(config)
    anonymizer = Anonymizer(cfg.spec())
    result = anonymizer.fit(MemoryEngine(cfg.source))
    assert result.search.algorithm == "lowest-level" and result.found
    reference = ExhaustiveSearch().run(_context(anonymizer, result))
    lowest = min(sum(n) for n in reference.minimal_nodes)
    assert sum(result.node) == lowest  # type: ignore[arg-type]
    assert result.criterion.holds(result.classes, result.table)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="takes no option 'depth'"):  # its options: none (NoOptions)
        make_strategy("lowest-level", {"depth": 2})


def _context(anonymizer: Anonymizer, result):  # type: ignore[no-untyped-def]
    from safeshare.search.context import SearchContext

    return SearchContext(result.table, result.evaluator, anonymizer.criterion, result.metric)
