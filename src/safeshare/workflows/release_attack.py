"""The attack run with the release (issue 34): the certificate shows it beside B.

A configuration's ``attack:`` section (:mod:`safeshare.config.attack`; ``safeshare anonymize
--attack-frame FILE``) names the identified frame an adversary holds. Then, in the one release
pipeline (:mod:`safeshare.workflows.publish`)::

    before the search: prepare_release_attack -- the frame (and control file) read, the
      quasi-identifiers and the id checked: a frame that cannot be read or lacks a column is a
      configuration error (exit 2) before any search, and nothing is written
    the release written into the private stage and verified
      -> attack_written_release: the STAGED file is read as its recipient reads it
         (:func:`safeshare.attack.view.read_release`, not the plan) and attacked with the frame
         by :func:`safeshare.workflows.attack.run_attack` (exact matching, distance linkage,
         residual risks, as ``safeshare attack``)
      -> report.json ``attack`` (every figure) and ``certificate.attack`` (the attack beside B)
      -> report.html renders both from report.json; then the release is published

The certificate's comparison (:func:`attack_certificate`): exact matching names, for each
released row, one of the frame records consistent with its labels, uniformly; its expected
success is ``(1/n) sum_s 1/|M(s)|``, which is B (Jiang et al. 2022, Eq. 2: ``B = (1/n) sum_s
1/F_s``) when the frame is the population. The measured correct-match rate ``k/n`` comes with its
Wilson 95 % interval (Wilson 1927, :func:`safeshare.attack.stats.wilson`), and the verdict says
whether it lies within, above or below the interval of B's estimate in the release's own risk
section (the same figures as report.json ``risk.release``), and whether that interval and the
attack's hold the exact B when the population is known.

Nothing of the frame reaches an output but counts and rates (report.json, report.html, the
terminal); the attack's seconds are the run's ``elapsed_s.attack``. An interrupt (SIGINT,
SIGTERM) during the attack unwinds through the stage like any other phase: nothing is published.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from safeshare.app_runner import SILENT, Monitor
from safeshare.errors import ConfigError, InputError
from safeshare.figures import number
from safeshare.report.content import ReportWarning
from safeshare.warning_codes import WarningCode


@dataclass(frozen=True)
class ReleaseAttack:
    """The checked ``attack:`` section of a run: the frame read, its options resolved."""

    cfg: Any
    frame: pd.DataFrame
    frame_name: str
    #: :class:`~safeshare.config.commands.AttackOptions` of the attack
    options: Any
    methods: tuple[str, ...]
    max_records: int | None
    inputs: pd.DataFrame
    monitor: Monitor = SILENT
    #: seconds spent reading and checking the frame before the search (part of ``elapsed_s.attack``)
    prepared_s: float = 0.0


def _where(cfg: Any, key: str) -> str:
    return f"{cfg.path}: attack.{key}"


def _reading(cfg: Any) -> dict[str, Any]:
    """The frame's reading options: the section's, else the input's."""
    spec, source = cfg.attack.frame, cfg.source
    return {
        "delimiter": spec.delimiter if spec.delimiter is not None else source.delimiter,
        "header": spec.header if spec.header is not None else source.header,
        "names": spec.names if spec.names is not None else (list(source.names) if source.names else None),
        "missing": spec.missing if spec.missing is not None else list(source.missing),
        "skip_rows": spec.skip_rows if spec.skip_rows is not None else source.skip_rows,
    }


def _path(cfg: Any, text: str) -> Path:
    path = Path(text)
    return path if path.is_absolute() else (cfg.base_dir / path).resolve()


def prepare_release_attack(cfg: Any, monitor: Monitor = SILENT) -> ReleaseAttack | None:
    """The configuration's ``attack:`` checked and its frame read, before the search (``None``
    without the section). Raises :class:`~safeshare.errors.ConfigError` (one line naming the
    key) when the frame or control file cannot be read, lacks a quasi-identifier or the ``id``
    column, when without ``id`` the frame is not the input row for row, or when ``residual`` has
    no control set."""
    section = cfg.attack
    if section is None:
        return None
    from safeshare.config.commands import AttackOptions
    from safeshare.config.commands import options as validated
    from safeshare.data.schema import Role
    from safeshare.workflows.attack import read_input

    if cfg.source.table is not None:
        raise ConfigError(
            f"{cfg.path}: attack: not supported with a Spark SQL table input (the attack reads the input "
            "in memory to score the attacker)"
        )
    t0 = time.perf_counter()
    reading = _reading(cfg)
    frame_path = _path(cfg, section.frame.path)
    control = _path(cfg, section.control) if section.control is not None else None
    try:
        opts = validated(
            AttackOptions,
            {
                **reading,
                "id": section.id,
                "control": control,
                "seed": section.seed,
                "max_pairs": section.max_pairs,
                "targets": section.targets,
            },
        )
    except InputError as exc:
        raise ConfigError(f"{cfg.path}: attack: {exc}") from None
    with monitor.phase(f"reading the attack's frame {frame_path.name}"):
        frame = _read(cfg, "frame", opts, frame_path)
        schema = cfg.schema
        qis = [q for q in schema.quasi_identifiers if schema.role(q) is not Role.SHIFTED_DATE]
        for q in qis:
            if q not in frame.columns:
                raise ConfigError(
                    f"{_where(cfg, 'frame')}: {frame_path.name} has no column {q!r}, a quasi-identifier "
                    f"(its columns: {', '.join(map(str, frame.columns[:12]))})"
                )
        if section.id is not None and section.id not in frame.columns:
            raise ConfigError(f"{_where(cfg, 'id')}: {frame_path.name} has no column {section.id!r}")
        inputs = read_input(cfg)
        if section.id is not None and section.id not in inputs.columns:
            raise ConfigError(f"{_where(cfg, 'id')}: the input has no column {section.id!r}")
        if section.id is None and (
            len(frame) != len(inputs)
            or any(not frame[q].astype(str).equals(inputs[q].astype(str)) for q in qis if q in inputs.columns)
        ):
            raise ConfigError(
                f"{_where(cfg, 'frame')}: {frame_path.name} is not the input row for row "
                f"({len(frame):,} records, the input {len(inputs):,}): name the column linking them "
                "in attack.id"
            )
        if "residual" in section.methods:
            if control is None and section.id is None:
                raise ConfigError(
                    f"{_where(cfg, 'methods')}: residual needs a control set: attack.control (records of "
                    "the population not in the release), or attack.id with a frame larger than the input"
                )
            if control is not None:
                _read(cfg, "control", opts, control)
    return ReleaseAttack(
        cfg=cfg,
        frame=frame,
        frame_name=frame_path.name,
        options=opts,
        methods=tuple(section.methods),
        max_records=section.max_records,
        inputs=inputs,
        monitor=monitor,
        prepared_s=time.perf_counter() - t0,
    )


def _read(cfg: Any, key: str, opts: Any, path: Path) -> pd.DataFrame:
    from safeshare.workflows.attack import read_frame

    if not path.is_file():
        raise ConfigError(f"{_where(cfg, key)}: {path.name}: no such file")
    try:
        frame = read_frame(opts.source(path))
    except InputError as exc:
        raise ConfigError(f"{_where(cfg, key)}: {path.name}: {exc}") from None
    return frame.reset_index(drop=True).astype(str)


def attack_written_release(release: Any, plan: ReleaseAttack | None, staged: Path | None) -> None:
    """Attack the release written at ``staged`` (module docstring) and add report.json's
    ``attack`` and the certificate's ``attack`` to ``release``; nothing without ``plan``. A
    release that is only described (not written) says so in its ``attack``."""
    if plan is None:
        return
    if staged is None:
        release.attack = {"skipped": "the release was not written: the attack reads the written file"}
        return
    from safeshare.workflows.attack import run_attack

    t0 = time.perf_counter()
    result = run_attack(
        staged,
        plan.cfg,
        plan.frame,
        plan.frame_name,
        plan.options,
        monitor=plan.monitor,
        methods=plan.methods,
        max_records=plan.max_records,
        record_risk=False,
        inputs=plan.inputs,
    )
    doc = result.to_report()
    doc["methods"] = list(plan.methods)
    release.attack = doc
    certificate = attack_certificate(doc, dict(release.risk), mixed=release.local_recoding is not None)
    release.certificate = {**(release.certificate or {}), "attack": certificate}
    release.warnings += attack_warnings(certificate)
    release.timings["attack"] = plan.prepared_s + time.perf_counter() - t0


def attack_warnings(certificate: dict[str, Any]) -> list[ReportWarning]:
    """``attack-above-estimate`` when an attack re-identifies measurably more records than the
    headline's B says: the lower end of its Wilson 95 % interval above B's upper end (B's
    interval where the estimator gives one, else B itself). Exact matching is the attack B
    models; the distance linkage also uses the kept columns the frame holds, which B ignores."""
    b = certificate.get("B")
    if b is None:
        return []
    interval = certificate.get("B_interval")
    top = float(interval[1]) if interval else float(b)
    out = []
    attacks = [("exact matching", certificate["interval"], certificate["correct_match_rate"])]
    link = certificate.get("linkage")
    if link:
        attacks.append(("the distance linkage", link["interval"], link["correct_match_rate"]))
    for name, (lo, _), rate in attacks:
        if float(lo) > top:
            out.append(
                ReportWarning(
                    WarningCode.ATTACK_ABOVE_ESTIMATE,
                    f"{name} re-identified {number(rate)} of the attacked records (95 % from {number(lo)}), "
                    f"above the headline's B {number(b)}"
                    + (f" (its interval up to {number(top)})" if interval else "")
                    + ": an adversary with the frame does better than B says; the measured rate, not B, "
                    "is the risk of this release against that adversary",
                    (),
                    float(rate),
                )
            )
    return out


def _maybe(value: float | None) -> str:
    return "n/a" if value is None else number(value)


def _where_in(value: float, lo: float, hi: float) -> str:
    return "within" if lo <= value <= hi else ("above" if value > hi else "below")


def attack_certificate(attack: dict[str, Any], risk: dict[str, Any], mixed: bool = False) -> dict[str, Any]:
    """``certificate.attack``: the exact-matching attack's correct-match rate and its Wilson 95 %
    interval beside B and its interval from the release's risk section, with the verdict; the
    linkage's rate and the residual risks (with their baselines) where they ran. ``mixed``: a
    locally recoded release, whose B counts each released class's own records while a row's
    labels also fit records released in finer classes (so the attack expects at most B)."""
    exact = attack["exact_matching"]["correct"]
    rate, (lo, hi) = float(exact["rate"]), exact["interval"]
    rel = risk.get("release") or {}
    estimator = risk.get("estimator")
    b = rel.get("B")
    b_exact = b is not None and not rel.get("estimated")
    b_estimate = (rel.get("B_estimate") or {}).get(estimator)
    interval = (rel.get("B_interval") or {}).get(estimator)
    shown = f"{number(rate)} (95 % {number(lo)}-{number(hi)})"
    position = exact_position = None
    if interval is not None:
        a, z = interval
        position = _where_in(rate, a, z)
        verdict = (
            f"the attack's rate {shown} lies {position} B's interval "
            f"{number(a)}-{number(z)} ({estimator} estimate {_maybe(b_estimate)})"
        )
    elif b is not None:
        verdict = f"the attack's rate {shown}: B {number(b)} lies {_where_in(b, lo, hi)} its interval"
    else:
        verdict = f"the attack's rate {shown}: no B to compare ({rel.get('no_estimate') or 'not computed'})"
    if b_exact and b is not None:
        exact_position = _where_in(b, lo, hi)
        verdict += f"; the exact B {number(b)} lies {exact_position} the attack's interval"
    records = attack["records"]
    caveats = []
    if not records.get("frame_is_population"):
        caveats.append(
            f"the frame holds {records['frame']:,} of the population's {records['population_size']:,} "
            "records: the attack's expectation is the mean of 1/(frame records consistent with a row), not B"
        )
    if mixed:
        caveats.append(
            "a locally recoded release: a row's labels also fit records released in finer classes, so "
            "the attack's expectation (the mean of 1/(frame records consistent with a row)) is at most "
            "B, which counts each released class's own records"
        )
    if risk.get("unit") == "people":
        caveats.append(
            "B counts people (each at their most exposed released class), the attack released records: "
            "a person with several records is attacked once per record"
        )
    caveat = "; ".join(caveats) or None
    if caveat:
        verdict += f" ({caveat})"
    doc: dict[str, Any] = {
        "method": "exact matching on the generalized quasi-identifiers, uniform choice among matches",
        "frame": attack["frame"],
        "records_released": records["release"],
        "records_attacked": exact["attempts"],
        "correct_matches": exact["successes"],
        "correct_match_rate": rate,
        "interval": [lo, hi],
        "expected_rate": attack["exact_matching"]["expected_rate"],
        "B": b,
        "B_exact": b_exact,
        "estimator": estimator,
        "B_estimate": b_estimate,
        "B_interval": list(interval) if interval is not None else None,
        #: where the attack's rate lies against B's interval: within, above or below
        "position": position,
        #: where the exact B lies against the attack's interval (when B is exact)
        "exact_B_position": exact_position,
        "verdict": verdict,
        "caveat": caveat,
    }
    link = attack.get("linkage") or {}
    if isinstance(link.get("correct"), dict):
        doc["linkage"] = {
            "correct_match_rate": link["correct"]["rate"],
            "interval": link["correct"]["interval"],
            "records_attacked": link["correct"]["attempts"],
        }
    residual = attack.get("residual_risks") or {}
    rates = {
        name: {
            "risk": res["risk"],
            "interval": res["risk_interval"],
            "attack_rate": res["attack"]["rate"],
            "baseline_rate": res["baseline"]["rate"],
            "better_than_baseline": res["better_than_baseline"],
        }
        for name in ("singling_out", "singling_out_univariate", "linkability", "inference")
        if isinstance(res := residual.get(name), dict) and "risk" in res
    }
    if rates:
        doc["residual"] = rates
    return doc
