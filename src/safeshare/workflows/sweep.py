"""Parameter sweeps: OLA over a grid of k x suppression limit x metric (thesis §6.1.1-6.1.2).

The thesis explores "the interaction between the suppression of records and
the utility as represented by the k-anonymous node with lowest information
loss, for different values of k and different loss measures" (§6.1.1, Fig.
6.1: k in {5, 25, 100}, max_sup in {0, 1, 5, 10, 20, 50} %, Prec, DM*,
entropy) and the accuracy of a classifier trained on each release (§6.1.2,
Table 6.1, Fig. 6.2).

Every configuration of the grid is a search over the same lattice on the
same data, so a :class:`Sweep` runs them all on ONE frequency table and ONE
:class:`~safeshare.core.evaluation.Evaluator` (``Anonymizer.fit_table(table,
evaluator=...)``): the ``GROUP BY`` over the raw records happens once, and
the evaluator's prefix cache serves every search.

On the command line, suppression limits are fractions of the records (``0.05``)
or explicit percents (``5%``), as for every command; the grid and its outputs
(``max_suppression_pct``, file names) keep percents, as the thesis' figures do.

Each row reports the information loss three ways (thesis §6.1.1): raw, normalized
to [0, 1] between the bottom and the top node (``(v - v_bottom) / (v_top - v_bottom)``),
and minus the bottom node's value ``v - v_bottom`` ("for DM* information loss has
been calculated as the difference between the metric on the original dataset
and on the chosen node"; for Prec and entropy ``v_bottom = 0``).
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from safeshare.app_runner import SILENT, Monitor, to_json

if TYPE_CHECKING:  # numpy, pandas, the core and the searches load once the configuration is valid
    from safeshare.config.spec import AnonymizationSpec
    from safeshare.core.evaluation import Evaluator
    from safeshare.core.frequency import FrequencyTable
    from safeshare.data.engines.base import Engine
    from safeshare.utility.task import UtilityTask
    from safeshare.workflows.anonymizer import AnonymizationResult, Anonymizer
from safeshare.config_checks import parse_fractions
from safeshare.errors import ConfigError, InputError

#: Columns of sweep.csv, in order.
SWEEP_COLUMNS = (
    "k",
    "max_suppression_pct",
    "max_suppression",
    "metric",
    "found",
    "node",
    "levels",
    "information_loss",
    "information_loss_normalized",
    "information_loss_minus_bottom",
    "suppressed_records",
    "records_out",
    "equivalence_classes",
    "min_class_size",
    "checked_nodes",
    "minimal_nodes",
    "lattice_size",
    "search_seconds",
    "accuracy",
    "accuracy_thesis",
)


def _parse_list(text: str, option: str) -> list[str]:
    items = [t.strip() for t in str(text).split(",")]
    if not any(items) or not all(items):
        raise ConfigError(f"{option}: expected a comma-separated list such as '5,25,100', got {text!r}")
    return items


@dataclass(frozen=True)
class SweepGrid:
    """The configurations of a sweep: every combination of k, suppression limit and metric.

    Parameters
    ----------
    k: values of k (integers >= 1).
    max_suppression_pct: suppression limits in PERCENT of the records, in [0, 100].
    metrics: information loss metrics (``prec``, ``dm_star``, ``entropy``).

    Values are de-duplicated; k and limits are sorted ascending, metrics keep their order.
    """

    k: tuple[int, ...]
    max_suppression_pct: tuple[float, ...]
    metrics: tuple[str, ...]

    def __post_init__(self) -> None:
        from safeshare.metrics.loss import metric_name
        from safeshare.models.k_anonymity import check_k

        ks = [check_k(k, "--k") for k in self.k]
        limits = []
        for s in self.max_suppression_pct:
            if isinstance(s, bool) or not isinstance(s, int | float) or not 0.0 <= float(s) <= 100.0:
                raise ConfigError(f"--max-suppression: expected percentages in [0, 100], got {s!r}")
            limits.append(float(s))
        metrics: list[str] = []
        for m in self.metrics:
            try:
                name = metric_name(str(m))
            except InputError as exc:
                raise ConfigError(f"--metric: {exc}") from None
            if name not in metrics:
                metrics.append(name)
        if not ks or not limits or not metrics:
            raise ConfigError("a sweep needs at least one k, one suppression limit and one metric")
        object.__setattr__(self, "k", tuple(sorted(set(ks))))
        object.__setattr__(self, "max_suppression_pct", tuple(sorted(set(limits))))
        object.__setattr__(self, "metrics", tuple(metrics))

    @classmethod
    def parse(cls, k: str, max_suppression: str, metrics: str) -> SweepGrid:
        """The grid from command-line lists (``"5,25,100"``, ``"0,0.01,0.05,10%"``, ``"prec,entropy"``).

        Suppression limits are fractions of the records or explicit percents, as
        ``anonymize --max-suppression`` (:func:`safeshare.config_checks.parse_fraction`).
        """
        ks = []
        for item in _parse_list(k, "--k"):
            try:
                ks.append(int(item))
            except ValueError:
                raise ConfigError(f"--k: expected integers >= 1, got {item!r}") from None
        # fractions or explicit percents (one parser for every command); the grid keeps percents
        limits = [round(f * 100.0, 9) for f in parse_fractions(max_suppression, "--max-suppression")]
        return cls(tuple(ks), tuple(limits), tuple(_parse_list(metrics, "--metric")))

    def __iter__(self) -> Iterator[tuple[int, float, str]]:
        """``(k, max_suppression_pct, metric)``, k slowest, metric fastest."""
        for k in self.k:
            for pct in self.max_suppression_pct:
                for metric in self.metrics:
                    yield k, pct, metric

    def __len__(self) -> int:
        return len(self.k) * len(self.max_suppression_pct) * len(self.metrics)

    def to_dict(self) -> dict[str, list[Any]]:
        return {
            "k": list(self.k),
            "max_suppression_pct": list(self.max_suppression_pct),
            "metrics": list(self.metrics),
        }


@dataclass
class SweepRow:
    """One configuration of the grid and what OLA (and the classifier) made of it."""

    k: int
    max_suppression_pct: float
    metric: str
    found: bool
    node: tuple[int, ...] | None
    levels: dict[str, int]
    information_loss: float | None
    information_loss_normalized: float | None
    information_loss_minus_bottom: float | None
    suppressed_records: int
    records_out: int
    equivalence_classes: int
    min_class_size: int
    checked_nodes: int
    minimal_nodes: int
    lattice_size: int
    search_seconds: float
    accuracy: float | None = None
    accuracy_thesis: float | None = None
    utility: dict[str, Any] = field(default_factory=dict)

    @property
    def max_suppression(self) -> float:
        """The limit as a fraction (the convention of ``anonymize`` and report.json)."""
        return self.max_suppression_pct / 100.0

    def csv_record(self) -> dict[str, Any]:
        """The row of sweep.csv (empty cells for values that do not exist)."""
        record: dict[str, Any] = {}
        for name in SWEEP_COLUMNS:
            if name == "max_suppression":
                value: Any = self.max_suppression
            elif name == "node":
                value = ",".join(str(v) for v in self.node) if self.node is not None else None
            elif name == "levels":
                value = ";".join(f"{q}={lv}" for q, lv in self.levels.items())
            else:
                value = getattr(self, name)
            record[name] = "" if value is None else value
        return record

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["node"] = list(self.node) if self.node is not None else None
        out["max_suppression"] = self.max_suppression
        return out


def row_from_result(k: int, pct: float, metric: str, result: AnonymizationResult) -> SweepRow:
    """The sweep row of one anonymization result (before any utility figure)."""
    loss = result.metric
    value = normalized = minus_bottom = None
    if result.node is not None:
        raw = loss.value(result.node, result.classes)
        value, normalized, minus_bottom = raw, loss.normalize(raw), raw - loss.lower
    return SweepRow(
        k=k,
        max_suppression_pct=pct,
        metric=metric,
        found=result.found,
        node=result.node,
        levels=result.levels,
        information_loss=value,
        information_loss_normalized=normalized,
        information_loss_minus_bottom=minus_bottom,
        suppressed_records=result.suppressed_records,
        records_out=result.records_in - result.suppressed_records,
        equivalence_classes=int(result.released_class_sizes.size),
        min_class_size=result.min_class_size,
        checked_nodes=result.search.checked_nodes,
        minimal_nodes=len(result.search.minimal_nodes),
        lattice_size=result.search.lattice_size,
        search_seconds=result.timings.get("search", result.search.elapsed_s),
    )


@dataclass
class SweepResult:
    """All rows of a sweep with what is needed to report them."""

    grid: SweepGrid
    rows: list[SweepRow]
    table_rows: int
    records: int
    utility: dict[str, Any] | None = None
    compare_thesis: bool = False
    timings: dict[str, float] = field(default_factory=dict)
    #: the published directory (set by :func:`sweep`)
    path: Path | None = None

    @property
    def baseline_accuracy(self) -> float | None:
        return None if self.utility is None else float(self.utility["baseline_accuracy"])

    def csv_text(self) -> str:
        """sweep.csv: one row per configuration, columns :data:`SWEEP_COLUMNS`."""
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(SWEEP_COLUMNS), lineterminator="\n")
        writer.writeheader()
        for row in self.rows:
            writer.writerow(row.csv_record())
        return buf.getvalue()

    def accuracy_table(self) -> list[dict[str, Any]]:
        """Table 6.1 layout: one row per (k, limit), one accuracy column per metric
        (and the thesis' value next to it when comparing)."""
        from safeshare.utility.thesis import thesis_accuracy

        out: list[dict[str, Any]] = []
        for k in self.grid.k:
            for pct in self.grid.max_suppression_pct:
                record: dict[str, Any] = {"k": k, "max_suppression_pct": pct}
                for metric in self.grid.metrics:
                    row = self.row(k, pct, metric)
                    record[metric] = row.accuracy if row is not None else None
                    if self.compare_thesis:
                        record[f"{metric}_thesis"] = thesis_accuracy(k, pct, metric)
                out.append(record)
        return out

    def accuracy_table_csv(self) -> str:
        rows = self.accuracy_table()
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        for record in rows:
            writer.writerow({k: "" if v is None else v for k, v in record.items()})
        return buf.getvalue()

    def row(self, k: int, pct: float, metric: str) -> SweepRow | None:
        for r in self.rows:
            if r.k == k and r.max_suppression_pct == pct and r.metric == metric:
                return r
        return None

    def write(self, directory: Path, meta: Mapping[str, Any] | None = None, plots: bool = True) -> list[Path]:
        """Write sweep.csv, sweep.json (with ``meta``), the accuracy table and the figures
        into ``directory``; returns the paths written.

        The files are written one by one: to publish a sweep atomically, write it into
        the stage of a :class:`safeshare.io.OutputDirectory`, as :func:`sweep` does.
        """
        from safeshare.io import atomic_write_text

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        atomic_write_text(directory / "sweep.csv", self.csv_text())
        atomic_write_text(
            directory / "sweep.json", to_json({**(meta or {}), **self.to_dict()}, indent=2) + "\n"
        )
        written = [directory / "sweep.csv", directory / "sweep.json"]
        if self.utility is not None:
            atomic_write_text(directory / "accuracy_table.csv", self.accuracy_table_csv())
            written.append(directory / "accuracy_table.csv")
        if plots:
            from safeshare.report.plots import plot_loss_vs_accuracy, plot_loss_vs_suppression

            written += plot_loss_vs_suppression(self.rows, directory / "loss_vs_suppression")
            if self.utility is not None:
                written += plot_loss_vs_accuracy(
                    self.rows, directory / "loss_vs_accuracy", self.baseline_accuracy
                )
        return written

    def to_dict(self) -> dict[str, Any]:
        return {
            "grid": self.grid.to_dict(),
            "configurations": len(self.rows),
            "frequency_table": {"rows": self.table_rows, "records": self.records},
            "utility": self.utility,
            "compare_thesis": self.compare_thesis,
            "elapsed_s": {k: round(v, 6) for k, v in self.timings.items()},
            "rows": [r.to_dict() for r in self.rows],
        }


#: Called after each configuration with the row and the full anonymization result.
OnResult = Callable[[SweepRow, "AnonymizationResult"], None]


class Sweep:
    """Run OLA for every configuration of a :class:`SweepGrid` on one frequency table.

    Parameters
    ----------
    spec: the run (schema, privacy models, algorithm and its options, Prec
        weights); k-anonymity is replaced by each k of the grid (added when
        absent), other models apply to every configuration; the suppression
        limit and the metric come from the grid.
    grid: the configurations.
    """

    def __init__(self, spec: AnonymizationSpec, grid: SweepGrid) -> None:
        from safeshare.models.k_anonymity import KAnonymity

        self.spec = spec
        self.schema = spec.schema
        self.base_models = [m for m in spec.privacy if not isinstance(m, KAnonymity)]
        self.grid = grid
        # build one anonymizer now so that bad settings fail before any work
        k, pct, metric = next(iter(grid))
        self.anonymizer(k, pct, metric)

    @property
    def sensitive_columns(self) -> tuple[str, ...]:
        """Sensitive columns the frequency table must keep (for the non-k models)."""
        out: list[str] = []
        for m in self.base_models:
            out.extend(c for c in m.sensitive_columns if c not in out)
        return tuple(out)

    def anonymizer(self, k: int, pct: float, metric: str) -> Anonymizer:
        """The anonymizer of one configuration."""
        from safeshare.metrics.loss import metric_name
        from safeshare.models.k_anonymity import KAnonymity
        from safeshare.workflows.anonymizer import Anonymizer

        prec_weights = self.spec.prec_weights if metric_name(metric) == "prec" else {}
        return Anonymizer(
            replace(
                self.spec,
                privacy=(KAnonymity(k), *self.base_models),
                max_suppression=pct / 100.0,
                metric=metric,
                prec_weights=prec_weights,
            )
        )

    def run(
        self,
        table: FrequencyTable,
        evaluator: Evaluator | None = None,
        utility: UtilityTask | None = None,
        compare_thesis: bool = False,
        on_result: OnResult | None = None,
        progress: Callable[[int, SweepRow], None] | None = None,
    ) -> SweepResult:
        """Run every configuration on ``table`` with one ``evaluator``.

        With ``utility``, each release is scored by the classifier
        (:meth:`UtilityTask.evaluate`). ``on_result`` receives every result
        (e.g. to write its release); ``progress`` is called after each row.
        """
        from safeshare.core.evaluation import Evaluator
        from safeshare.models.k_anonymity import KAnonymity
        from safeshare.utility.thesis import thesis_accuracy

        start = time.perf_counter()
        evaluator = evaluator or Evaluator(table)
        for k in self.grid.k:
            KAnonymity(k).validate(table)
        timings: dict[str, float] = {"search": 0.0}
        description = None
        if utility is not None:
            t0 = time.perf_counter()
            description = utility.describe()
            timings["baseline"] = time.perf_counter() - t0
            timings["utility"] = 0.0
        rows: list[SweepRow] = []
        for i, (k, pct, metric) in enumerate(self.grid):
            result = self.anonymizer(k, pct, metric).fit_table(table, evaluator=evaluator)
            row = row_from_result(k, pct, metric, result)
            timings["search"] += row.search_seconds
            if utility is not None and result.found:
                t0 = time.perf_counter()
                score = utility.evaluate(result)
                timings["utility"] += time.perf_counter() - t0
                row.accuracy = score.accuracy
                row.utility = {
                    "train_records": score.train_records,
                    "converged": score.classifier.converged,
                    "test_unseen_categories": score.test_unseen_categories,
                }
            if compare_thesis:
                row.accuracy_thesis = thesis_accuracy(k, pct, metric)
            rows.append(row)
            if on_result is not None:
                on_result(row, result)
            if progress is not None:
                progress(i, row)
        timings["total"] = time.perf_counter() - start
        return SweepResult(
            grid=self.grid,
            rows=rows,
            table_rows=table.n_rows,
            records=table.n_records,
            utility=description,
            compare_thesis=compare_thesis,
            timings=timings,
        )


def sweep(config: str | Path, monitor: Monitor = SILENT, **options: Any) -> SweepResult:
    """``safeshare sweep CONFIG --out DIR``: the configuration's search over a grid of k x
    suppression limit x metric on one frequency table (thesis §6.1.1-6.1.2).

    Writes ``sweep.csv`` (one row per configuration), ``sweep.json`` and the thesis'
    Fig. 6.1-style plot ``loss_vs_suppression.png/.svg``; with ``utility`` also
    ``accuracy_table.csv`` (Table 6.1) and ``loss_vs_accuracy.png/.svg`` (Fig. 6.2); with
    ``write_releases`` every configuration's verified release. The directory is published
    as one unit (:class:`~safeshare.io.OutputDirectory`).

    Keywords are the command's options: ``out``, ``k`` (values of k), ``max_suppression``
    (fractions or percents), ``metric`` (lists, or comma texts), ``utility``, ``test``,
    ``target``, ``test_skip_rows``, ``missing``, ``strip_target_dot``, ``compare_thesis``,
    ``write_releases``, ``plots``.
    """
    from safeshare.config import load_config
    from safeshare.config.commands import SweepOptions
    from safeshare.config.commands import options as validated
    from safeshare.io import OutputDirectory

    started = time.perf_counter()
    opts = validated(SweepOptions, options)
    cfg = load_config(config)

    # numpy, pandas, the engines, the core and the searches load once the configuration is valid
    from safeshare.core.evaluation import Evaluator
    from safeshare.data.engines.factory import CONFIG_SWITCH, make_engine
    from safeshare.utility.thesis import is_thesis_setting
    from safeshare.workflows.anonymizer import build_frequency_table
    from safeshare.workflows.utility import utility_task

    grid = SweepGrid(
        tuple(opts.k), tuple(round(f * 100.0, 9) for f in opts.max_suppression), tuple(opts.metric)
    )
    runner = Sweep(cfg.spec(), grid)
    output = OutputDirectory(opts.out)
    output.preflight()
    task = None
    engine: Engine
    t0 = time.perf_counter()
    with monitor.phase("reading the data"):
        if opts.utility:
            engine, task = utility_task(cfg, opts)
        else:
            engine = make_engine(
                cfg.engine,
                cfg.source,
                cfg.spark,
                cfg.duckdb,
                switch=CONFIG_SWITCH,
                identifiers=cfg.identifiers,
            )
    read_s = time.perf_counter() - t0
    try:
        with monitor.phase("building the frequency table"):
            table, table_timings = build_frequency_table(engine, cfg.schema, runner.sensitive_columns)
            evaluator = Evaluator(table)
        thesis = bool(opts.compare_thesis)
        if opts.compare_thesis is None and task is not None:
            assert opts.target is not None
            thesis = is_thesis_setting(cfg.schema.quasi_identifiers, opts.target)
        with output as stage:
            on_result = _release_writer(cfg, engine, stage / "releases") if opts.write_releases else None
            with monitor.progress("sweep", len(grid)) as advance:
                result = runner.run(
                    table,
                    evaluator,
                    utility=task,
                    compare_thesis=thesis,
                    on_result=on_result,
                    progress=(lambda i, row: advance(i + 1)) if advance is not None else None,
                )
            result.timings = {"read": read_s, **table_timings, **result.timings}
            result.timings["total"] = time.perf_counter() - started
            meta = {
                "config": Path(config).name,
                "input": cfg.settings()["input"].get("path"),
                "algorithm": cfg.algorithm,
                "privacy_models": {m.name: m.params() for m in runner.base_models},
                "test": Path(opts.test).name if opts.test is not None else None,
                "releases_written": opts.write_releases,
                "settings": cfg.settings(),
            }
            result.write(stage, meta, opts.plots)
            output.publish()
    finally:
        engine.close()
    result.path = Path(opts.out)
    return result


def _release_writer(cfg: Any, engine: Any, directory: Path) -> OnResult:
    """Write each configuration's verified release into ``directory/k{K}_sup{S}_{metric}``."""
    from safeshare.workflows.publish import write_release_files
    from safeshare.workflows.release import ReleaseContext

    def write(row: SweepRow, result: AnonymizationResult) -> None:
        if not result.found:
            return
        name = f"k{row.k}_sup{row.max_suppression_pct:g}_{row.metric}"
        # the configuration's context (N, purpose, ...); the sweep's releases join no ledger
        context = ReleaseContext.of_config(cfg, ledger=None, ledger_path=None)
        write_release_files(
            result, engine, directory / name, cfg.release_format, cfg.output_delimiter, context
        )

    return write
