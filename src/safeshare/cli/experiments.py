"""The ``safeshare utility`` and ``safeshare sweep`` commands (thesis §5.3, §6.1.1-6.1.2): parse, call, print.

Each calls its use case in :mod:`safeshare.api` with the same keywords; the output
directory is published as one unit (:class:`safeshare.io.OutputDirectory`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from safeshare.cli.common import (
    JsonOption,
    Keywords,
    KOverrideOption,
    MaxSuppressionOption,
    MetricOption,
    QuietOption,
    emit,
    options_of,
)

if TYPE_CHECKING:
    from safeshare.api import SweepResult

TEST_HELP = "The test set (same columns and input options as the configuration's input)."
TARGET_HELP = "The column to predict (sensitive or insensitive, not a quasi-identifier)."
TestSkipRowsOption = Annotated[
    int,
    typer.Option(
        "--test-skip-rows", help="Lines to skip at the top of the test file (1 for UCI Adult's adult.test)."
    ),
]
ImputeMissingOption = Annotated[
    str | None,
    typer.Option(
        "--missing",
        help="Comma-separated missing-value tokens the classifier imputes with the column's mode "
        "(default '?'; the empty string and the configuration's input.missing always are).",
    ),
]
StripTargetDotOption = Annotated[
    bool,
    typer.Option(
        "--strip-target-dot/--keep-target-dot",
        help="Remove one trailing '.' from target labels (adult.test writes '>50K.').",
    ),
]


def _test_reading(
    test_skip_rows: TestSkipRowsOption = 0,
    missing: ImputeMissingOption = None,
    strip_target_dot: StripTargetDotOption = True,
) -> Keywords:
    """How the test set is read and its labels and missing values are read by the classifier
    (utility, sweep --utility)."""
    return {"test_skip_rows": test_skip_rows, "missing": missing, "strip_target_dot": strip_target_dot}


#: A command that trains the classifier takes the test set's reading options as ``test_reading``.
reads_test_set = options_of(_test_reading, "test_reading")


# --------------------------------------------------------------------------- utility
@reads_test_set
def utility(
    config: Annotated[Path, typer.Argument(help="The YAML configuration (its input is the training set).")],
    test: Annotated[Path, typer.Option("--test", help=TEST_HELP)],
    target: Annotated[str, typer.Option("--target", help=TARGET_HELP)],
    out_dir: Annotated[Path, typer.Option("--out", help="Output directory for utility.json.")],
    k: KOverrideOption = None,
    max_suppression: MaxSuppressionOption = None,
    metric: MetricOption = None,
    *,
    test_reading: Keywords,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Accuracy of a classifier trained on the anonymized training set (thesis §5.3).

    Anonymizes the configuration's input, trains a logistic regression
    on the release, generalizes the test set with the same node (no
    suppression) and writes OUT/utility.json with `accuracy` and
    `baseline_accuracy` (the same classifier trained on the original data).
    """
    from safeshare import api
    from safeshare.cli.common import ConsoleMonitor

    result = api.utility(
        config,
        monitor=ConsoleMonitor(quiet or as_json),
        test=test,
        target=target,
        out=out_dir,
        k=k,
        max_suppression=max_suppression,
        metric=metric,
        **test_reading,
    )
    emit(result.document, as_json, quiet, lambda: _print_utility(result.document, result.path))


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
        f"k = {doc['k']}, max suppression {doc['max_suppression']:.2%}, "
        f"{doc.get('metric_label') or doc['metric']} = {doc['information_loss']:.6g} "
        f"(normalized {doc['information_loss_normalized']:.4f})",
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
@reads_test_set
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
    *,
    test_reading: Keywords,
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
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Run the configuration's search over a grid of k x suppression limit x metric on one frequency table.

    Writes OUT/sweep.csv (one row per configuration), OUT/sweep.json and the
    thesis' Fig. 6.1-style plot OUT/loss_vs_suppression.png/.svg; with
    --utility also OUT/accuracy_table.csv (Table 6.1) and
    OUT/loss_vs_accuracy.png/.svg (Fig. 6.2). Releases are not written unless
    --write-releases is given.
    """
    from safeshare import api
    from safeshare.cli.common import ConsoleMonitor

    result = api.sweep(
        config,
        monitor=ConsoleMonitor(quiet or as_json),
        out=out_dir,
        k=k,
        max_suppression=max_suppression,
        metric=metric,
        utility=with_utility,
        test=test,
        target=target,
        **test_reading,
        compare_thesis=compare_thesis,
        write_releases=write_releases,
        plots=plots,
    )
    emit(result.to_dict(), as_json, quiet, lambda: _print_sweep(result, out_dir))


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
