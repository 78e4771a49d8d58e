"""The ``safeshare utility`` and ``safeshare sweep`` commands (thesis §5.3, §6.1.1-6.1.2).

Registered on the main Typer app by :func:`register` (called from
:mod:`safeshare.cli`), so that the command line keeps one entry point, one
error policy (exit 2 with one line for bad input) and one output policy:
everything is prepared in a staging directory beside ``--out`` and moved into
place only when complete; on any failure ``--out`` is left as it was.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from safeshare.errors import InputError
from safeshare.options import MAX_SUPPRESSION_HELP, optional_fraction

if TYPE_CHECKING:
    from safeshare.config import RunConfig
    from safeshare.data.engines.base import Engine
    from safeshare.data.engines.memory import MemoryEngine
    from safeshare.utility.task import UtilityTask
    from safeshare.workflows.anonymizer import AnonymizationResult
    from safeshare.workflows.sweep import OnResult, SweepResult, SweepRow

TEST_HELP = "The test set (same columns and input options as the configuration's input)."
TARGET_HELP = "The column to predict (sensitive or insensitive, not a quasi-identifier)."
SKIP_HELP = "Lines to skip at the top of the test file (1 for UCI Adult's adult.test)."
MISSING_HELP = (
    "Comma-separated tokens the classifier reads as missing and imputes with the column's mode "
    "(default '?'; the empty string and the configuration's input.missing always are)."
)
DOT_HELP = "Remove one trailing '.' from target labels (adult.test writes '>50K.')."


def _check_out_dir(out_dir: Path) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"output path {out_dir} exists and is not a directory")


def _missing(cfg: RunConfig, option: str | None) -> tuple[str, ...]:
    from safeshare.utility.features import DEFAULT_MISSING

    tokens = DEFAULT_MISSING if option is None else tuple(t.strip() for t in option.split(","))
    return (*cfg.source.missing, *tokens)


def _utility_task(
    cfg: RunConfig,
    test: Path,
    target: str,
    skip_rows: int,
    missing: str | None,
    strip_target_dot: bool,
) -> tuple[MemoryEngine, UtilityTask]:
    """The training engine (memory) and the learning task, validated before any search."""
    from safeshare.data.engines.memory import MemoryEngine
    from safeshare.utility.task import UtilityTask, heldout_source, read_test_set

    source = heldout_source(cfg.source, test, skip_rows)
    train = MemoryEngine(cfg.source)
    test_frame = read_test_set(source)
    task = UtilityTask(
        cfg.schema,
        train,
        test_frame,
        target,
        missing=_missing(cfg, missing),
        strip_target_dot=strip_target_dot,
        test_label=str(test),
    )
    return train, task


# --------------------------------------------------------------------------- utility
def utility(
    config: Annotated[Path, typer.Argument(help="The YAML configuration (its input is the training set).")],
    test: Annotated[Path, typer.Option("--test", help=TEST_HELP)],
    target: Annotated[str, typer.Option("--target", help=TARGET_HELP)],
    out_dir: Annotated[Path, typer.Option("--out", help="Output directory for utility.json.")],
    k: Annotated[int | None, typer.Option("--k", help="Override k of k-anonymity.")] = None,
    max_suppression: Annotated[
        str | None, typer.Option("--max-suppression", help=MAX_SUPPRESSION_HELP)
    ] = None,
    metric: Annotated[str | None, typer.Option("--metric", help="prec | dm_star | entropy")] = None,
    test_skip_rows: Annotated[int, typer.Option("--test-skip-rows", help=SKIP_HELP)] = 0,
    missing: Annotated[str | None, typer.Option("--missing", help=MISSING_HELP)] = None,
    strip_target_dot: Annotated[
        bool, typer.Option("--strip-target-dot/--keep-target-dot", help=DOT_HELP)
    ] = True,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success.")] = False,
) -> None:
    """Accuracy of a classifier trained on the anonymized training set (thesis §5.3).

    Anonymizes the configuration's input (OLA), trains a logistic regression
    on the release, generalizes the test set with the same node (no
    suppression) and writes OUT/utility.json with `accuracy` and
    `baseline_accuracy` (the same classifier trained on the original data).
    """
    from safeshare.config import load_config
    from safeshare.console import phase
    from safeshare.io import atomic_write_text, publish, staging_directory
    from safeshare.utility.task import utility_document
    from safeshare.workflows.anonymizer import Anonymizer

    started = time.perf_counter()
    suppression = optional_fraction(max_suppression, "--max-suppression")
    cfg = load_config(config).with_overrides(k, suppression, metric)
    anonymizer = Anonymizer(cfg.spec())
    _check_out_dir(out_dir)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    with phase("reading the training and test sets", quiet):
        train, task = _utility_task(cfg, test, target, test_skip_rows, missing, strip_target_dot)
    timings["read"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with phase("training on the original data (baseline)", quiet):
        task.baseline()
    timings["baseline"] = time.perf_counter() - t0
    with phase("anonymizing the training set", quiet):
        result = anonymizer.fit(train)
    timings.update(result.timings)
    if not result.found:
        raise InputError(
            "no generalization satisfies the privacy models within the suppression limit "
            f"({cfg.max_suppression:.0%}); allow more suppression or lower the requirements"
        )
    t0 = time.perf_counter()
    with phase("training on the release and scoring the test set", quiet):
        score = task.evaluate(result)
    timings["release_classifier"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - started
    extra = {
        "k": next((getattr(m, "k", None) for m in cfg.privacy if hasattr(m, "k")), None),
        "config": str(config),
        "train": str(cfg.source.path),
        "test": str(test),
        "test_skip_rows": test_skip_rows,
        "elapsed_s": {key: round(v, 6) for key, v in timings.items()},
    }
    doc = utility_document(task, result, score, extra)
    with staging_directory(out_dir) as stage:
        atomic_write_text(stage / "utility.json", json.dumps(doc, indent=2) + "\n")
        publish(stage, out_dir)
    if not quiet:
        _print_utility(doc, out_dir / "utility.json")


def _print_utility(doc: dict[str, Any], path: Path) -> None:
    from rich.table import Table

    from safeshare.console import out

    table = Table(
        title="safeshare: utility measured by a classifier", show_header=False, title_justify="left"
    )
    table.add_column("what", style="bold")
    table.add_column("value")
    table.add_row("levels", ", ".join(f"{q}={lv}" for q, lv in doc["levels"].items()))
    table.add_row(
        "anonymization",
        f"k = {doc['k']}, max suppression {doc['max_suppression']:.2%}, {doc['metric']} "
        f"= {doc['information_loss']:.6g} (normalized {doc['information_loss_normalized']:.4f})",
    )
    table.add_row(
        "training set",
        f"{doc['records_in']:,} records, {doc['suppressed_records']:,} suppressed, "
        f"{doc['release_records']:,} in the release",
    )
    table.add_row("test set", f"{doc['test_records']:,} records (generalized, not suppressed)")
    table.add_row("accuracy", f"{doc['accuracy']:.4f} (trained on the release)")
    table.add_row("baseline accuracy", f"{doc['baseline_accuracy']:.4f} (trained on the original data)")
    table.add_row("majority class", f"{doc['majority_accuracy']:.4f}")
    if not doc["release_classifier"]["converged"] or not doc["baseline"]["converged"]:
        table.add_row("warning", "the solver did not converge (see utility.json)")
    table.add_row("output", str(path))
    out.print(table)


# --------------------------------------------------------------------------- sweep
def sweep(
    config: Annotated[Path, typer.Argument(help="The YAML configuration (see docs/sweeps.md).")],
    out_dir: Annotated[Path, typer.Option("--out", help="Output directory (sweep.csv, plots, ...).")],
    k: Annotated[str, typer.Option("--k", help="Comma-separated values of k.")] = "5,25,100",
    max_suppression: Annotated[
        str,
        typer.Option(
            "--max-suppression",
            help="Comma-separated suppression limits, each a fraction of the records (0.05) "
            "or a percent (5%), as for every command.",
        ),
    ] = "0,0.01,0.05,0.1,0.2,0.5",
    metric: Annotated[
        str, typer.Option("--metric", help="Comma-separated metrics: prec, dm_star, entropy.")
    ] = "prec,dm_star,entropy",
    with_utility: Annotated[
        bool,
        typer.Option(
            "--utility", help="Also train the classifier on every release (needs --test, --target)."
        ),
    ] = False,
    test: Annotated[Path | None, typer.Option("--test", help=TEST_HELP)] = None,
    target: Annotated[str | None, typer.Option("--target", help=TARGET_HELP)] = None,
    test_skip_rows: Annotated[int, typer.Option("--test-skip-rows", help=SKIP_HELP)] = 0,
    missing: Annotated[str | None, typer.Option("--missing", help=MISSING_HELP)] = None,
    strip_target_dot: Annotated[
        bool, typer.Option("--strip-target-dot/--keep-target-dot", help=DOT_HELP)
    ] = True,
    compare_thesis: Annotated[
        bool | None,
        typer.Option(
            "--compare-thesis/--no-compare-thesis",
            help="Print the thesis' Table 6.1 accuracies next to ours "
            "(default: when the QIs and target are the thesis' UCI Adult setting).",
        ),
    ] = None,
    write_releases: Annotated[
        bool,
        typer.Option("--write-releases", help="Also write every configuration's verified release."),
    ] = False,
    plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Draw the figures.")] = True,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success.")] = False,
) -> None:
    """Run OLA over a grid of k x suppression limit x metric on one frequency table.

    Writes OUT/sweep.csv (one row per configuration), OUT/sweep.json and the
    thesis' Fig. 6.1-style plot OUT/loss_vs_suppression.png/.svg; with
    --utility also OUT/accuracy_table.csv (Table 6.1) and
    OUT/loss_vs_accuracy.png/.svg (Fig. 6.2). Releases are not written unless
    --write-releases is given.
    """
    from safeshare.config import load_config
    from safeshare.console import phase
    from safeshare.core.evaluation import Evaluator
    from safeshare.data.engines.factory import CONFIG_SWITCH, make_engine
    from safeshare.io import publish, staging_directory
    from safeshare.utility.thesis import is_thesis_setting
    from safeshare.workflows.anonymizer import build_frequency_table
    from safeshare.workflows.sweep import Sweep, SweepGrid

    started = time.perf_counter()
    cfg = load_config(config)
    grid = SweepGrid.parse(k, max_suppression, metric)
    runner = Sweep(cfg.spec(), grid)
    if with_utility and (test is None or target is None):
        raise InputError("--utility needs --test TEST_FILE and --target COLUMN")
    if not with_utility and (test is not None or target is not None):
        raise InputError("--test and --target are used with --utility only")
    _check_out_dir(out_dir)
    task = None
    engine: Engine
    t0 = time.perf_counter()
    with phase("reading the data", quiet):
        if with_utility:
            assert test is not None and target is not None
            engine, task = _utility_task(cfg, test, target, test_skip_rows, missing, strip_target_dot)
        else:
            engine = make_engine(cfg.engine, cfg.source, cfg.spark, cfg.duckdb, switch=CONFIG_SWITCH)
    read_s = time.perf_counter() - t0
    try:
        with phase("building the frequency table", quiet):
            table, table_timings = build_frequency_table(engine, cfg.schema, runner.sensitive_columns)
            evaluator = Evaluator(table)
        thesis = bool(compare_thesis) if compare_thesis is not None else False
        if compare_thesis is None and task is not None:
            thesis = is_thesis_setting(cfg.schema.quasi_identifiers, target)
        with staging_directory(out_dir) as stage:
            on_result = (
                _release_writer(cfg, engine, stage / "releases", str(config)) if write_releases else None
            )
            with _Progress(len(grid), quiet) as advance:
                result = runner.run(
                    table,
                    evaluator,
                    utility=task,
                    compare_thesis=thesis,
                    on_result=on_result,
                    progress=advance,
                )
            result.timings = {"read": read_s, **table_timings, **result.timings}
            result.timings["total"] = time.perf_counter() - started
            meta = {
                "config": str(config),
                "input": str(cfg.source.path),
                "algorithm": cfg.algorithm,
                "privacy_models": {m.name: m.params() for m in runner.base_models},
                "test": str(test) if test is not None else None,
                "releases_written": write_releases,
            }
            result.write(stage, meta, plots)
            publish(stage, out_dir)
    finally:
        engine.close()
    if not quiet:
        _print_sweep(result, out_dir)


def _release_writer(cfg: RunConfig, engine: Engine, directory: Path, config: str) -> OnResult:
    """Write each configuration's verified release into ``directory/k{K}_sup{S}_{metric}``."""
    from safeshare.workflows.release import write_release

    def write(row: SweepRow, result: AnonymizationResult) -> None:
        if not result.found:
            return
        name = f"k{row.k}_sup{row.max_suppression_pct:g}_{row.metric}"
        extra = {
            "config": config,
            "input": str(cfg.source.path),
            "k": row.k,
            "max_suppression": row.max_suppression,
        }
        write_release(
            result, engine, directory / name, cfg.release_format, cfg.output_delimiter, report=extra
        )

    return write


class _Progress:
    """A rich progress bar over the grid on stderr (silent when quiet or not a terminal)."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.total = total
        self.quiet = quiet
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> Any:
        from safeshare.console import err

        if self.quiet or not err.is_terminal:
            return lambda i, row: None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._bar = Progress(
            TextColumn("sweep"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=err,
            transient=True,
        )
        self._bar.__enter__()
        self._task = self._bar.add_task("", total=self.total)

        def advance(i: int, row: Any) -> None:
            self._bar.update(
                self._task, advance=1, description=f"k={row.k} sup={row.max_suppression_pct:g}% {row.metric}"
            )

        return advance

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)


def _print_sweep(result: SweepResult, out_dir: Path) -> None:
    from rich import box
    from rich.table import Table

    from safeshare.console import out
    from safeshare.metrics.loss import METRICS
    from safeshare.utility.thesis import BASELINE_ACCURACY

    table = Table(
        title=f"safeshare sweep: {len(result.rows)} configurations", title_justify="left", box=box.SIMPLE_HEAD
    )
    for name in ("k", "sup %", "metric", "node", "loss", "suppressed", "checked"):
        table.add_column(
            name, justify="left" if name in ("metric", "node") else "right", no_wrap=name == "node"
        )
    if result.utility is not None:
        table.add_column("accuracy", justify="right")
    for r in result.rows:
        cells = [
            str(r.k),
            f"{r.max_suppression_pct:g}",
            r.metric,
            ",".join(map(str, r.node)) if r.node is not None else "none qualifies",
            f"{r.information_loss_normalized:.4f}" if r.information_loss_normalized is not None else "",
            f"{r.suppressed_records:,}",
            f"{r.checked_nodes:,}",
        ]
        if result.utility is not None:
            cells.append(f"{r.accuracy:.4f}" if r.accuracy is not None else "")
        table.add_row(*cells)
    out.print(table)
    out.print(
        "loss: normalized to [0, 1] between the original data and the top node (sweep.csv has raw values)"
    )
    if result.utility is not None:
        acc = Table(
            title="Classification accuracy (Table 6.1 layout)"
            + (": ours / thesis" if result.compare_thesis else ""),
            title_justify="left",
            box=box.SIMPLE_HEAD,
        )
        acc.add_column("k", justify="right")
        acc.add_column("max sup %", justify="right")
        names = {"prec": "Prec", "dm_star": "DM*", "entropy": "Entropy"}
        for m in result.grid.metrics:
            acc.add_column(names.get(m, m) if m in METRICS else m, justify="right")
        for rec in result.accuracy_table():
            cells = [str(rec["k"]), f"{rec['max_suppression_pct']:g}"]
            for m in result.grid.metrics:
                ours = rec[m]
                text = f"{ours:.4f}" if ours is not None else "-"
                if result.compare_thesis:
                    theirs = rec.get(f"{m}_thesis")
                    text += f" / {theirs:.4f}" if theirs is not None else " / -"
                cells.append(text)
            acc.add_row(*cells)
        baseline = f"{result.baseline_accuracy:.4f}"
        if result.compare_thesis:
            baseline += f" / {BASELINE_ACCURACY:.4f}"
        out.print(acc)
        out.print(
            f"original data (baseline): {baseline}; majority class: {result.utility['majority_accuracy']:.4f}"
        )
    out.print(f"written to {out_dir}")


def register(app: typer.Typer) -> None:
    """Add the ``utility`` and ``sweep`` commands to the ``safeshare`` app."""
    app.command("utility")(utility)
    app.command("sweep")(sweep)
