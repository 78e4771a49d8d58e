"""The ``risk`` use case (``safeshare risk estimate``, the default of ``safeshare risk``): a
sample in, one :class:`RiskAssessment` out, from which the terminal, ``--json``, ``risk.json``
and ``risk.html`` are all rendered (so they cannot disagree).

:func:`risk` validates the options once (:class:`~safeshare.config.commands.RiskOptions`),
refuses a foreign, locked or unwritable ``out`` before any data is read, reads the sample (and
the population, when it is given), checks it the way ``anonymize`` does (a quasi-identifier
empty in most records is refused: the mark of a wrong delimiter), computes the exact measures
(Jiang et al. 2022, §2.1: ``A = J/N``; ``B = (1/n) sum_j f_j / F_j`` when the population is
known) and fits every requested estimator of B, each under the estimators' contract
(:mod:`safeshare.risk.estimators.base`: B in ``[1/N, 1]`` or *no estimate* with the reason,
and a 95 % interval where the model gives one).

Bounded work: a synthetic-population estimator (the copulas) draws ``N x simulations``
records; :func:`synthesis_cost` estimates its CPU time and memory *before* anything is
allocated. Above ``max_synthetic_records`` (or the memory available) an estimator named
explicitly is refused with the figures (:class:`~safeshare.errors.InputError`, exit 2), and
one reached through ``all`` gets *no estimate* with the same reason, so that the others still
run. The class-size estimators cost O(distinct class sizes) whatever ``N``
(benchmarks/bench_risk.py).

:func:`publish_assessment` writes ``risk.json`` and ``risk.html`` as one unit through
:class:`~safeshare.io.OutputDirectory` (staged, locked, atomic; a foreign ``out`` refused).
Nothing in them names a local path (the data's file name only) or a quasi-identifier value
(the risk drivers name columns; the distribution counts records by risk band).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from safeshare.app_runner import SILENT, Monitor, to_json
from safeshare.errors import InputError
from safeshare.figures import number
from safeshare.resources import available_memory
from safeshare.risk.estimators import DEFAULT_ESTIMATOR, ESTIMATORS, make_estimator
from safeshare.risk.population import check_population

if TYPE_CHECKING:  # numpy, pandas and the engine load once the options are valid (start-up)
    import pandas as pd

    from safeshare.data.engines.memory import MemoryEngine
    from safeshare.data.source import TableSource
    from safeshare.risk.classes import SampleTable
    from safeshare.risk.estimators.base import RiskEstimator
    from safeshare.risk.measures import RiskMeasures

#: Synthetic records (N x simulations) an estimator may draw unless told otherwise: about a
#: minute of CPU for 5 quasi-identifiers (the paper's Ontario case, N = 13.4 million, fits).
DEFAULT_MAX_SYNTHETIC_RECORDS = 50_000_000
#: CPU seconds per synthetic record and quasi-identifier (measured: the Gaussian copula draws
#: 10^6 records of 5 QIs in 0.75 s, the d-vine in 1.05 s; docs/risk.md "Bounded work").
SECONDS_PER_RECORD_QI = 2.1e-7
#: Bytes per distinct synthetic class kept while merging chunks (key, count, np.unique's copies).
BYTES_PER_CLASS = 48

#: The advice when a quasi-identifier is mostly empty (the options of ``safeshare risk``).
RISK_EMPTY_HINT = "check --delimiter, or declare a missing-value token (e.g. --missing '?')"


@dataclass(frozen=True)
class SynthesisCost:
    """What a synthetic-population estimator would draw, and its estimated CPU time and memory."""

    records: int
    cpu_seconds: float
    memory_bytes: int

    def describe(self) -> str:
        return (
            f"{self.records:.3g} synthetic records, about {_duration(self.cpu_seconds)} of CPU "
            f"and {self.memory_bytes / 2**30:.2g} GiB"
        )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.3g} days"


def is_synthetic(name: str) -> bool:
    """Whether ``name`` draws a synthetic population (its cost grows with N)."""
    cls = ESTIMATORS[name]
    return cls.requires_table and "repetitions" in _init_params(cls)


def _init_params(cls: type[RiskEstimator]) -> set[str]:
    import inspect

    return set(inspect.signature(cls.__init__).parameters) - {"self"}


def synthesis_cost(name: str, table: SampleTable, population_size: int, simulations: int) -> SynthesisCost:
    """The cost of ``name``'s synthesis: ``N x simulations`` records (twice for ``average``, which
    draws from both copulas), at most ``min(N, the QIs' combinations)`` distinct classes held."""
    copies = 2 if name == "average" else 1
    records = population_size * simulations * copies
    space = 1.0
    for k in table.cardinalities:
        space *= max(k, 1)
    classes = min(float(population_size), space)
    m = max(len(table.columns), 1)
    return SynthesisCost(
        records=records,
        cpu_seconds=records * m * SECONDS_PER_RECORD_QI,
        memory_bytes=int(classes * BYTES_PER_CLASS + 1_000_000 * m * 8 * 3),
    )


@dataclass(frozen=True)
class Estimate:
    """One estimator's result under the estimate contract."""

    name: str
    B: float | None
    interval: tuple[float, float] | None
    reason: str | None
    population_uniques: float | None
    population_uniqueness: float | None
    params: dict[str, Any]
    chosen: str | None = None
    interval_method: str | None = None
    cpu_seconds: float = 0.0
    #: whose uniques ``population_uniques`` counts: ``population`` or ``sample`` (the sample's
    #: records that are population unique: Benedetti-Franconi, sdcMicro's tau_1)
    uniques_scope: str = "population"

    @classmethod
    def of(cls, est: RiskEstimator, cpu_seconds: float) -> Estimate:
        return cls(
            name=est.name,
            B=est.B_,
            interval=est.B_interval_,
            reason=est.B_reason_,
            population_uniques=est.population_uniques_,
            population_uniqueness=est.population_uniqueness_,
            params=est.get_params(),
            chosen=getattr(est, "chosen_", None),
            interval_method=getattr(est, "interval_method_", None),
            cpu_seconds=cpu_seconds,
            uniques_scope=est.uniques_scope,
        )

    @classmethod
    def skipped(cls, name: str, reason: str, params: dict[str, Any]) -> Estimate:
        return cls(name, None, None, reason, None, None, params)

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "B": self.B,
            "interval": None if self.interval is None else list(self.interval),
            "population_uniques": self.population_uniques,
            "population_uniqueness": self.population_uniqueness,
            "population_uniques_of": self.uniques_scope,
            "params": self.params,
        }
        if self.B is None:
            doc["no_estimate"] = self.reason
        if self.interval_method is not None:
            doc["interval_method"] = self.interval_method
        if self.chosen is not None:
            doc["chosen"] = self.chosen
        return doc


@dataclass(frozen=True)
class RiskAssessment:
    """The exact measures and the estimates of B of one sample: what ``safeshare risk`` shows."""

    data: str
    quasi_identifiers: list[str]
    n: int
    population_size: int
    seed: int
    measures: RiskMeasures
    estimates: dict[str, Estimate]
    risk_distribution: list[dict[str, Any]]
    risk_drivers: list[dict[str, Any]]
    default_estimator: str = DEFAULT_ESTIMATOR
    #: where risk.json and risk.html were published (``None``: not written); never in them
    out: Path | None = None
    #: what ``n``, ``N`` and the measures count: ``records``, or ``people`` with a person key
    unit: str = "records"
    #: with a person key, the people figures (column, rows per person, people in several classes)
    people: dict[str, Any] | None = None
    #: warnings by name (issue 32: without a person key, a column that looks like one repeats)
    warnings: tuple[dict[str, Any], ...] = ()

    @property
    def sampling_fraction(self) -> float:
        return self.n / self.population_size

    def to_dict(self) -> dict[str, Any]:
        """risk.json (the keys scripts rely on: ``A``, ``B_estimates``, ``B_exact``, ``B``)."""
        m = self.measures
        doc: dict[str, Any] = {
            "data": self.data,
            "quasi_identifiers": self.quasi_identifiers,
            "n": self.n,
            "population_size": self.population_size,
            "sampling_fraction": self.sampling_fraction,
            "seed": self.seed,
            "A": m.A,
            "B_estimates": {k: e.B for k, e in self.estimates.items()},
            "B_intervals": {
                k: None if e.interval is None else list(e.interval) for k, e in self.estimates.items()
            },
            "no_estimate": {k: e.reason for k, e in self.estimates.items() if e.B is None},
            "default_estimator": self.default_estimator,
        }
        if self.default_estimator in self.estimates:
            default = self.estimates[self.default_estimator]
            doc["B"] = default.B
            doc["B_interval"] = None if default.interval is None else list(default.interval)
        if m.B is not None:
            doc["B_exact"] = m.B
        doc["estimators"] = {k: e.to_dict() for k, e in self.estimates.items()}
        doc["measures"] = m.to_dict()
        doc["risk_distribution"] = self.risk_distribution
        doc["risk_drivers"] = self.risk_drivers
        doc["unit"] = self.unit
        doc["people"] = self.people
        doc["warnings"] = list(self.warnings)
        return doc

    def to_json(self) -> str:
        return to_json(self.to_dict(), indent=2) + "\n"

    def rows(self) -> list[tuple[str, str]]:
        """The terminal's table: (measure, value) rows, from the same result as risk.json."""
        m = self.measures
        out = [(f"{self.unit} n / population N", f"{self.n:,} / {self.population_size:,}")]
        out.append(("A = J/N (population-to-sample)", number(m.A) if m.A is not None else "n/a"))
        if m.B is not None:
            out.append(("B exact (sample-to-population)", number(m.B)))
        out.append(("prosecutor max / mean", f"{number(m.prosecutor_max)} / {number(m.prosecutor_mean)}"))
        for name, e in self.estimates.items():
            label = f"B estimated: {name}" + (f" (chose {e.chosen})" if e.chosen else "")
            out.append((label, describe_estimate(e)))
        return out

    def to_html(self) -> str:
        from safeshare.risk.html import render_risk_html

        return render_risk_html(self.to_dict())


def _frame(data: TableSource | pd.DataFrame) -> tuple[pd.DataFrame, str, MemoryEngine]:
    from safeshare.data.engines.memory import MemoryEngine
    from safeshare.data.source import TableSource

    engine = MemoryEngine(data)
    name = data.path.name if isinstance(data, TableSource) else "DataFrame"
    return engine.frame, name, engine


def check_quasi_identifiers(engine: MemoryEngine, qi: Sequence[str], label: str) -> None:
    """``anonymize``'s checks of the input's QIs: known columns, and none empty in most records
    (:func:`~safeshare.data.schema.check_not_empty`, the same function)."""
    from safeshare.data.engines.base import COUNT_COLUMN
    from safeshare.data.schema import check_not_empty

    missing = [c for c in qi if c not in engine.columns()]
    if missing:
        known = ", ".join(engine.columns())
        raise InputError(f"unknown quasi-identifier {missing[0]!r}: {label} has columns {known}")
    check_not_empty(
        engine.grouped_counts(list(qi)), list(qi), COUNT_COLUMN, label, RISK_EMPTY_HINT, engine.missing
    )


def risk(
    data: str | Path | pd.DataFrame,
    out: str | Path | None = None,
    *,
    monitor: Monitor = SILENT,
    **options: Any,
) -> RiskAssessment:
    """``safeshare risk DATA --qi A,B --population-size N --out OUT``: the exact measures of
    ``data`` and the requested estimates of B (see the module doc).

    ``out``: the folder that receives ``risk.json`` and ``risk.html``, published as one unit
    (``None``: nothing is written). Keywords are the command's options: ``qi`` (columns, a
    list or a comma text), ``population_size`` (N), ``estimator`` (``"default"``, ``"all"``,
    a name or a list of names), ``population`` (the population file: B exact),
    ``data_is_population``, ``seed``, ``simulations`` (synthetic populations per copula
    estimate), ``correlation`` (``mi`` | ``rank``), ``bootstrap`` (class resamples of the
    class-size estimators' intervals), ``threshold`` (of the exact measures' shares),
    ``max_synthetic_records``, and the data-reading options ``delimiter``, ``header``,
    ``names``, ``missing``, ``skip_rows`` (of both files).
    """
    from safeshare.config.commands import RiskOptions
    from safeshare.config.commands import options as validated
    from safeshare.io import OutputDirectory

    opts = validated(RiskOptions, options)
    if out is not None:  # a foreign, locked or unwritable folder is refused before any data is read
        OutputDirectory(Path(out)).preflight()
    if isinstance(data, str | Path):  # a missing file is said before pandas and the estimators load
        opts.source(data).check_readable()

    import numpy as np
    import pandas as pd

    from safeshare.risk.classes import SampleTable
    from safeshare.risk.drivers import risk_drivers
    from safeshare.risk.html import risk_distribution
    from safeshare.risk.measures import class_sizes, risk_measures
    from safeshare.risk.persons import person_risk_measures

    N = opts.population_size
    columns = list(opts.qi)
    with monitor.phase("reading the data"):
        frame, name, engine = _frame(data if isinstance(data, pd.DataFrame) else opts.source(data))
        check_quasi_identifiers(engine, columns, name)
        warnings: tuple[dict[str, Any], ...] = ()
        people: dict[str, Any] | None = None
        spread = False
        if opts.person is None:  # issue 32: a column that looks like a person key and repeats
            warnings = tuple(_repeated_persons(engine, columns, monitor))
        else:
            people, frame, spread = _people(engine, frame, columns, opts.person)
        unit = "records" if opts.person is None else "people"
        table = SampleTable.from_frame(frame, columns)
        n = table.n if people is None else int(people["people"])
        check_population(N, n, "data", unit, "--population-size")
        pop_frame = None
        if opts.population is not None:
            if opts.person is not None:
                raise InputError(
                    "--population: not supported with --person yet (the population counted in people)"
                )
            pop_frame, pop_name, pop_engine = _frame(opts.source(opts.population))
            check_quasi_identifiers(pop_engine, columns, pop_name)
            if len(pop_frame) != opts.population_size:
                raise InputError(f"--population-size {N} differs from {pop_name}'s {len(pop_frame)} records")
        if opts.data_is_population and n != N:
            raise InputError(f"--data-is-population: --population-size {N} differs from {n} {unit}")
        f, F = class_sizes(frame, columns, pop_frame)
        if people is None:
            measures = risk_measures(f, F, population_size=N, threshold=opts.threshold)
        else:
            exposure = np.asarray(people.pop("_exposure"), dtype=np.int64)
            known = exposure if n == N else None
            measures = person_risk_measures(exposure, known, N, int(people["classes"]), opts.threshold)

    params: dict[str, Any] = {
        "random_state": opts.seed,
        "repetitions": opts.simulations,
        "correlation": opts.correlation,
    }
    if opts.bootstrap is not None:
        params["n_bootstrap"] = opts.bootstrap
    budget = _Budget(opts.max_synthetic_records or DEFAULT_MAX_SYNTHETIC_RECORDS)
    wanted = opts.estimator
    for name_ in wanted:  # refuse an explicitly named estimator beyond its budget before any fit
        if not opts.every_estimator and is_synthetic(name_):
            reason = budget.refusal(name_, table, N, opts.simulations)
            if reason is not None:
                raise InputError(f"--estimator {name_}: {reason}")
    estimates: dict[str, Estimate] = {}
    for i, name_ in enumerate(wanted):
        est = make_estimator(name_, **params)
        reason = budget.refusal(name_, table, N, opts.simulations) if is_synthetic(name_) else None
        if spread:  # the estimators assume one class per person
            reason = (
                f"{people['people_in_several_classes']:,} people have records in several classes: the "
                "estimators assume one class per person (the exact measures above count people)"
                if people is not None
                else None
            )
        if reason is not None:
            estimates[name_] = Estimate.skipped(name_, reason, est.get_params())
            continue
        with monitor.phase(f"estimating B with {name_} ({i + 1} of {len(wanted)})"):
            start = time.process_time()
            est.fit(table, N)
            estimates[name_] = Estimate.of(est, time.process_time() - start)
    known_F = F if F is not None else (f if n == N else None)
    assessment = RiskAssessment(
        data=name,
        quasi_identifiers=columns,
        n=n,
        population_size=N,
        seed=opts.seed,
        measures=measures,
        estimates=estimates,
        risk_distribution=risk_distribution(f),
        risk_drivers=risk_drivers(f, known_F),
        unit=unit,
        people=people,
        warnings=warnings,
    )
    if out is None:
        return assessment
    return replace(assessment, out=publish_assessment(assessment, Path(out)))


def _repeated_persons(engine: MemoryEngine, columns: Sequence[str], monitor: Monitor) -> list[dict[str, Any]]:
    """The columns (not quasi-identifiers) that look like a person identifier and repeat: warned by
    name, now and in risk.json (issue 32)."""
    from safeshare.data.person_key import repeated_persons

    roles: dict[str, str | None] = {c: ("quasi" if c in columns else None) for c in engine.columns()}
    found = repeated_persons(engine, roles)
    for item in found:
        monitor.note(f"warning: {item.message()}")
    return [{"code": "likely-repeated-persons", "columns": [item.column], **item.to_dict()} for item in found]


def _people(
    engine: MemoryEngine, frame: pd.DataFrame, columns: Sequence[str], person: str
) -> tuple[dict[str, Any], pd.DataFrame, bool]:
    """With a person key: the people figures, the sample with one record per person when every
    person lies in one class (the estimators then see people), and whether some person spreads
    over several classes. ``_exposure``: each person's most exposed class's people."""
    import numpy as np
    import pandas as pd

    from safeshare.core.tabulate import check_person_values
    from safeshare.data.engines.base import COUNT_COLUMN
    from safeshare.workflows.inspection import rows_per_person

    if person not in engine.columns():
        raise InputError(
            f"--person: unknown column {person!r}: the data has columns {', '.join(engine.columns())}"
        )
    if person in columns:
        raise InputError(f"--person: {person!r} is a quasi-identifier; the person key identifies a person")
    grain = engine.grouped_counts([*columns, person])
    check_person_values(grain, person, engine.label, engine.missing)
    cls = grain.groupby(list(columns), sort=False, dropna=False).ngroup().to_numpy()
    codes, uniques = pd.factorize(grain[person].astype(str))
    pairs = pd.DataFrame({"c": cls, "p": codes}).drop_duplicates()
    people = np.bincount(pairs["c"].to_numpy(), minlength=int(cls.max()) + 1)
    exposure = pairs.assign(f=people[pairs["c"].to_numpy()]).groupby("p")["f"].min()
    classes_per_person = pairs.groupby("p").size()
    several = int((classes_per_person > 1).sum())
    rows = np.bincount(codes, weights=grain[COUNT_COLUMN].to_numpy(np.float64), minlength=len(uniques))
    doc = {
        "column": person,
        "people": len(uniques),
        "records": int(rows.sum()),
        "classes": int((people > 0).sum()),
        "rows_per_person": rows_per_person(rows),
        "people_in_several_classes": several,
        "_exposure": exposure.to_numpy(),
    }
    one = frame.drop_duplicates(subset=[person]) if not several else frame
    return doc, one, several > 0


class _Budget:
    def __init__(self, max_records: int) -> None:
        self.max_records = max_records
        self._memory: int | None = None

    def refusal(self, name: str, table: SampleTable, N: int, simulations: int) -> str | None:
        """Why ``name``'s synthesis is not run (``None``: it fits the budget)."""
        cost = synthesis_cost(name, table, N, simulations)
        if cost.records > self.max_records:
            return (
                f"not run: its synthesis would take {cost.describe()} (N = {N:,} x {simulations} "
                f"simulation{'s' if simulations > 1 else ''}), above --max-synthetic-records "
                f"{self.max_records:,}"
            )
        if self._memory is None:
            self._memory = available_memory()
        if cost.memory_bytes > 0.8 * self._memory:
            return (
                f"not run: its synthesis would need about {cost.memory_bytes / 2**30:.2g} GiB, more than "
                f"the {self._memory / 2**30:.2g} GiB of memory available"
            )
        return None


def publish_assessment(assessment: RiskAssessment, out_dir: Path) -> Path:
    """Write ``risk.json`` and ``risk.html`` into ``out_dir`` as one unit (:class:`OutputDirectory`)."""
    from safeshare.io import OutputDirectory

    text, html = assessment.to_json(), assessment.to_html()  # rendered before anything is written
    output = OutputDirectory(Path(out_dir))
    with output as stage:
        (stage / "risk.json").write_text(text, encoding="utf-8")
        (stage / "risk.html").write_text(html, encoding="utf-8")
        output.publish()
    return output.out_dir


def describe_estimate(e: Estimate) -> str:
    """``0.0621 (95 % 0.0564-0.0683)``, or ``no estimate: <reason>``: the terminal's cell."""
    if e.B is None:
        return f"no estimate: {e.reason}"
    text = number(e.B)
    if e.interval is not None:
        text += f" (95 % {number(e.interval[0])}–{number(e.interval[1])})"
    return text
