"""``safeshare attack RELEASE --config CONFIG.yaml --frame IDENTIFIED.csv --out DIR`` (issue 34).

Parses, calls :func:`safeshare.api.attack` and prints its result; the use case is
:mod:`safeshare.workflows.attack`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from safeshare.cli.common import JsonOption, Keywords, QuietOption, emit, reads_data


@reads_data
def attack(
    release: Annotated[
        Path, typer.Argument(help="The written release (CSV or Parquet), as a recipient has it.")
    ],
    config: Annotated[Path, typer.Option("--config", help="The configuration the release was made with.")],
    frame: Annotated[
        Path, typer.Option("--frame", help="The adversary's identified frame (CSV or Parquet).")
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="Output directory for report.json and report.html.")],
    id_column: Annotated[
        str | None,
        typer.Option("--id", help="A column of the frame and of the configuration's input linking them."),
    ] = None,
    control: Annotated[
        Path | None,
        typer.Option("--control", help="Records of the population not in the release (residual risks)."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Integer seed of the attacker's random choices.")] = 0,
    threshold: Annotated[
        float, typer.Option("--threshold", help="Per-record risk threshold (records above it are counted).")
    ] = 0.09,
    block: Annotated[
        str | None,
        typer.Option("--block", help="QIs blocking the distance linkage (default: all; '' for none)."),
    ] = None,
    max_pairs: Annotated[
        int, typer.Option("--max-pairs", help="Most distances the linkage may compute.")
    ] = 2_000_000_000,
    targets: Annotated[int, typer.Option("--targets", help="Targets of each residual-risk attack.")] = 1000,
    secret: Annotated[
        str | None, typer.Option("--secret", help="The column the inference attack guesses.")
    ] = None,
    population_size: Annotated[
        int | None,
        typer.Option("--population-size", help="N (default: the configuration's, else the input's)."),
    ] = None,
    *,
    reading: Keywords,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Attack a release: exact matching, distance linkage, singling out / linkability / inference,
    and each released record's probability of correct re-identification."""
    from safeshare import api
    from safeshare.cli.common import ConsoleMonitor

    result = api.attack(
        release,
        config,
        frame,
        out_dir,
        monitor=ConsoleMonitor(quiet or as_json),
        id=id_column,
        control=control,
        seed=seed,
        threshold=threshold,
        block=block,
        max_pairs=max_pairs,
        targets=targets,
        secret=secret,
        population_size=population_size,
        **reading,
    )

    def show() -> None:
        from rich.table import Table

        from safeshare.console import out

        table = Table(title=f"attacks on {result.release} with {result.frame}")
        table.add_column("measure")
        table.add_column("value", justify="right")
        for label, value in result.rows():
            table.add_row(label, value)
        out.print(table)
        for note in result.notes:
            out.print(f"note: {note}")
        out.print(f"wrote {result.out}/report.json and report.html")

    emit(result.to_dict(), as_json, quiet, show)


def register(app: typer.Typer) -> None:
    """Add the ``attack`` command to the ``safeshare`` app."""
    app.command("attack")(attack)
