"""Write, verify and publish a locally recoded release, described by the one :class:`Release`
(issue 25).

The steps :func:`safeshare.workflows.publish.publish` (the one release pipeline, issue 31)
runs for a mixed plan, a :class:`~safeshare.workflows.local_recoding.LocalRecodingResult`
(stage in a private directory, verify the written file independently, swap atomically; see
"Publishing" in docs/anonymization.md): the engine writes the
:class:`~safeshare.data.engines.base.MixedReleasePlan` (:meth:`Engine.write_mixed_release`),
and :func:`safeshare.verify.verify_release` re-reads the file with the expectations of
:func:`safeshare.verify.expectations_any_level`: the columns from the configuration's roles,
every QI value a label of its configured hierarchy at some level, classes by identical
released values satisfying every configured model, and the suppression within
``floor(max_suppression * N)`` of the whole input. Nothing is published unless the check
passes and its counts agree with the result's.

The run is described by the same :class:`~safeshare.workflows.result.Release` as a global one
(:func:`build_local_release`): its output, privacy and risk sections are the mixed release's
(classes by identical released values), its choice the global optimum's node (round 0) with
the generalization of the released records per level, and its ``local_recoding`` section the
rounds (node, records released each), the cell-level loss of the global and of the mixed
release (:mod:`safeshare.metrics.cell_loss`) and the stop reason. report.json, report.html, the
terminal and the API show it; the warnings, the headline, the certificate and the evidence
are :func:`~safeshare.workflows.publish.publish`'s, the same as a global release's.
``safeshare anonymize --local-recoding`` and :func:`publish_local_recoding` (a result computed
in Python) both publish through it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from safeshare.data.engines.base import Engine, OutputFormat, peak_rss_mb
from safeshare.errors import InputError
from safeshare.figures import percent
from safeshare.risk.report_risk import risk_section
from safeshare.verify import (
    Expectations,
    Verification,
    allowed_release_columns,
    expectations_any_level,
    verify_release,
)
from safeshare.workflows.local_recoding import LocalRecodingResult
from safeshare.workflows.release import (
    KEPT_ROWS,
    PublishedRelease,
    ReleaseContext,
    _version,
    check_verified,
    input_class_sizes,
    portable,
    release_name,
    truth_expectations,
)
from safeshare.workflows.result import (
    Output,
    Provenance,
    Release,
    UtilityOutcome,
    choice_of,
    input_profile,
    privacy_of,
    size_histogram,
)

#: A locally recoded release is published like a global one: the same record of where it went.
PublishedLocalRelease = PublishedRelease

#: report.json's ``tradeoff_skipped`` of a mixed release
TRADEOFF_SKIPPED = "local recoding: the curve is of global nodes"


def local_release_expectations(
    result: LocalRecodingResult, input_columns: Sequence[str], delimiter: str = ","
) -> Expectations:
    """What the verifier must find in the written release of ``result``: the columns from the
    configuration's roles, the labels of every level of the configured hierarchies, every
    configured model (as :func:`safeshare.workflows.release.release_expectations`)."""
    table = result.table
    schema = result.global_result.schema
    roles = {name: attr.role.value for name, attr in schema.attributes.items()}
    default = schema.default_role.value if schema.default_role is not None else None
    criterion = result.global_result.criterion
    return expectations_any_level(
        columns=allowed_release_columns(input_columns, roles, default),
        quasi_identifiers=list(table.qi_names),
        hierarchy_rows={q: h.rows for q, h in zip(table.qi_names, table.hierarchies, strict=True)},
        records_in=result.records_in,
        max_suppression=criterion.max_suppression,
        models={m.name: m.verification_params(table) for m in criterion.models},
        delimiter=delimiter,
    )


def check_local_releasable(result: LocalRecodingResult) -> None:
    """Refuse, before anything is written, a result without a global node."""
    if not result.found:
        raise InputError(
            "no generalization satisfies the privacy models within the suppression limit "
            f"({percent(result.max_suppression)}); allow more suppression or lower the requirements"
        )


def stage_local_release(
    result: LocalRecodingResult,
    engine: Engine,
    stage: Path,
    fmt: OutputFormat,
    delimiter: str,
    timings: dict[str, float],
    expected: Expectations | None = None,
) -> Verification:
    """Write the mixed release of ``result`` into ``stage`` and verify the written file.

    ``expected``: what the verifier must find (default: :func:`local_release_expectations`;
    identifier treatments are refused with local recoding by the configuration).

    Raises :class:`VerificationError` when the written release fails the independent check
    (the caller's :class:`OutputDirectory` then removes the stage: nothing is published).
    """
    input_columns = engine.columns()
    plan = result.release_plan(input_columns, fmt, delimiter)
    name = release_name(fmt)
    start = time.perf_counter()
    written = engine.write_mixed_release(plan, stage / name)
    timings["apply"] = time.perf_counter() - start
    start = time.perf_counter()
    if expected is None:
        expected = local_release_expectations(result, input_columns, delimiter)
    if expected.truth is None:  # every label true of its records, at whatever level it was released
        expected = replace(
            expected, truth=truth_expectations(result.global_result.schema, result.table, engine)
        )
    verification = verify_release(stage / name, fmt, expected, keep_rows=KEPT_ROWS)
    timings["verify"] = time.perf_counter() - start
    check_verified(verification, written, result.suppressed_records, "local recoding")
    return verification


def local_recoding_section(result: LocalRecodingResult) -> dict[str, Any]:
    """report.json's ``local_recoding``: the rounds (round 0 is the global optimum), why they
    stopped, the suppression budget of the whole input, and the cell-level loss of the global
    and of the mixed release (the same definitions, so the gain is a number). Two runs of one
    configuration give the same section (the time of the rounds is in ``elapsed_s``)."""
    summary = result.summary()
    # a round's CPU seconds are a measurement (report.json keeps them under elapsed_s only)
    summary["rounds"] = [{k: v for k, v in r.items() if k != "seconds"} for r in summary["rounds"]]
    keys = ("rounds", "stop_reason", "stop", "suppression_limit", "loss_global", "loss_mixed")
    return {
        "rounds_run": len(result.rounds) - 1,
        "records_released_global": result.rounds[0].released if result.rounds else 0,
        **{key: summary[key] for key in keys},
    }


def mixed_privacy_achieved(result: LocalRecodingResult) -> dict[str, Any]:
    """Per model, what the mixed release's classes achieve (as
    :meth:`AnonymizationResult.privacy_achieved`, on classes by identical released values)."""
    classes = result.release.as_classes()
    released = np.zeros(classes.sizes.shape[0], dtype=bool)
    released[:-1] = classes.sizes[:-1] > 0  # the last slot holds the suppressed rows
    out = {m.name: m.achieved(classes, result.table, released) for m in result.global_result.criterion.models}
    return {name: value for name, value in out.items() if value}


def build_local_release(
    result: LocalRecodingResult,
    engine: Engine,
    fmt: OutputFormat,
    delimiter: str,
    context: ReleaseContext,
    verification: Verification | None,
    out_dir: Path | None,
    timings: dict[str, float],
) -> Release:
    """The :class:`Release` of a locally recoded ``result`` (written to ``out_dir`` and
    verified, or not written)."""
    base = result.global_result
    input_columns = engine.columns()
    released_columns = base.schema.released_columns(input_columns)
    config, source = portable(context.config, context.source)
    sizes = result.released_class_sizes
    section = local_recoding_section(result)
    gained = result.records_out - section["records_released_global"]
    choice = choice_of(base)
    why = (
        f"{choice.why}; then local recoding: {section['rounds_run']} round(s) on the suppressed records "
        f"released {gained:,} more ({section['stop']})"
    )
    # records per level keyed by the level's text, as report.json holds them
    generalization = tuple(
        {**g, "records_per_level": {str(lv): n for lv, n in g["records_per_level"].items()}}
        for g in result.generalization()
    )
    release = Release(
        input=input_profile(
            base, source, input_columns, released_columns, result.records_in, context.repeated_persons
        ),
        choice=replace(choice, generalization=generalization, why=why),
        output=Output(
            file=release_name(fmt),
            format=fmt,
            records_in=result.records_in,
            records_out=result.records_out,
            suppressed_records=result.suppressed_records,
            equivalence_classes=int(sizes.size),
            min_class_size=int(sizes.min()) if sizes.size else 0,
            class_size_histogram=tuple(size_histogram(sizes)),
            path=out_dir,
        ),
        privacy=replace(privacy_of(base), achieved=mixed_privacy_achieved(result)),
        risk=risk_section(input_class_sizes(base), sizes, context.population_size),
        utility=UtilityOutcome(tradeoff_skipped=context.tradeoff_skipped or TRADEOFF_SKIPPED),
        provenance=Provenance(
            config=config,
            settings=dict(context.settings),
            version=_version(),
            seeds={},
            created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            engine=engine.name,
            engine_settings=engine.settings(),
        ),
        verification=verification,
        timings=dict(timings),
        peak_rss_mb=peak_rss_mb(),
        fit=base,
        local_recoding=section,
        recoding=result,
    )
    return release


__all__ = [
    "PublishedLocalRelease",
    "build_local_release",
    "check_local_releasable",
    "local_recoding_section",
    "local_release_expectations",
    "mixed_privacy_achieved",
    "stage_local_release",
]
