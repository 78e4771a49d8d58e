"""The ``utility`` use case: accuracy of a classifier trained on the release (thesis §5.3).

Anonymizes the configuration's input (with the configuration's algorithm), trains a
logistic regression on the release, generalizes the test set with the same node (no
suppression) and reports ``accuracy`` and ``baseline_accuracy`` (the same classifier
trained on the original data) in ``utility.json``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from safeshare.app_runner import SILENT, Monitor, to_json
from safeshare.errors import InputError

if TYPE_CHECKING:
    from safeshare.config.commands import LearningOptions
    from safeshare.config.file import ConfigFile
    from safeshare.data.engines.memory import MemoryEngine
    from safeshare.utility.task import UtilityTask

#: The keywords of :func:`utility` that override the configuration.
CONFIG_OVERRIDES = ("k", "max_suppression", "metric")


@dataclass(frozen=True)
class UtilityResult:
    """The result of :func:`utility`: utility.json's content and where it was published."""

    document: dict[str, Any]
    path: Path

    @property
    def accuracy(self) -> float:
        return float(self.document["accuracy"])

    @property
    def baseline_accuracy(self) -> float:
        return float(self.document["baseline_accuracy"])

    def to_dict(self) -> dict[str, Any]:
        return self.document


def utility_task(cfg: ConfigFile, opts: LearningOptions) -> tuple[MemoryEngine, UtilityTask]:
    """The training engine (memory) and the learning task, validated before any search."""
    from safeshare.data.engines.memory import MemoryEngine
    from safeshare.utility.features import DEFAULT_MISSING
    from safeshare.utility.task import UtilityTask, heldout_source, read_test_set

    assert opts.test is not None and opts.target is not None
    source = heldout_source(cfg.source, opts.test, opts.test_skip_rows)
    train = MemoryEngine(cfg.source)
    tokens = DEFAULT_MISSING if opts.missing is None else tuple(opts.missing)
    task = UtilityTask(
        cfg.schema,
        train,
        read_test_set(source),
        opts.target,
        missing=(*cfg.source.missing, *tokens),
        strip_target_dot=opts.strip_target_dot,
        test_label=Path(opts.test).name,
    )
    return train, task


def utility(config: str | Path, monitor: Monitor = SILENT, **options: Any) -> UtilityResult:
    """``safeshare utility CONFIG --test T --target C --out DIR``: accuracy of a classifier
    trained on the release, beside the same classifier trained on the original data.

    Keywords are the command's options: ``test``, ``target``, ``out``, ``test_skip_rows``,
    ``missing`` (tokens the classifier imputes), ``strip_target_dot``, and the overrides
    of the configuration ``k``, ``max_suppression``, ``metric``.
    """
    from safeshare.config import load_config
    from safeshare.config.commands import UtilityOptions
    from safeshare.config.commands import options as validated
    from safeshare.io import OutputDirectory, atomic_write_text

    started = time.perf_counter()
    overrides = {key: options.pop(key) for key in CONFIG_OVERRIDES if key in options}
    opts = validated(UtilityOptions, options)
    cfg = load_config(config, **overrides)

    # the classifier (scikit-learn), the core and the searches load once the configuration is valid
    from safeshare.utility.task import utility_document
    from safeshare.workflows.anonymizer import Anonymizer

    anonymizer = Anonymizer(cfg.spec())
    output = OutputDirectory(opts.out)
    output.preflight()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    with monitor.phase("reading the training and test sets"):
        train, task = utility_task(cfg, opts)
    timings["read"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with monitor.phase("training on the original data (baseline)"):
        task.baseline()
    timings["baseline"] = time.perf_counter() - t0
    with monitor.phase("anonymizing the training set"):
        result = anonymizer.fit(train)
    timings.update(result.timings)
    if not result.found:
        raise InputError(
            "no generalization satisfies the privacy models within the suppression limit "
            f"({cfg.max_suppression:.0%}); allow more suppression or lower the requirements"
        )
    t0 = time.perf_counter()
    with monitor.phase("training on the release and scoring the test set"):
        score = task.evaluate(result)
    timings["release_classifier"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - started
    extra = {
        "k": next((getattr(m, "k", None) for m in cfg.privacy if hasattr(m, "k")), None),
        "config": Path(config).name,
        "train": cfg.settings()["input"].get("path"),
        "test": Path(opts.test).name,
        "test_skip_rows": opts.test_skip_rows,
        "settings": cfg.settings(),
        "elapsed_s": {key: round(v, 6) for key, v in timings.items()},
    }
    doc = utility_document(task, result, score, extra)
    with output as stage:
        atomic_write_text(stage / "utility.json", to_json(doc, indent=2) + "\n")
        output.publish()
    return UtilityResult(doc, Path(opts.out) / "utility.json")
