"""The ``attack`` use case (``safeshare attack RELEASE --config C --frame F --out DIR``, issue 34).

The adversary holds an identified frame (the population, or a sample of it: the quasi-identifiers
the configuration names, and whatever else he knows, e.g. the true dates of shifted ones) and the
release as its recipient has it, with the configuration's hierarchies (a recipient is told how
labels are made). He attacks every released row (:mod:`safeshare.attack`):

1. exact matching on the generalized quasi-identifiers (the attack behind B);
2. distance-based one-to-one linkage (Gower distance, linear assignment, blocked);
3. singling out, linkability and attribute inference as residual risks over a control set.

The custodian scores him: :mod:`safeshare.attack.truth` attributes each released row to the
configuration's input record it is (the key of pseudonyms and shifted dates is used there, never by
the attacker), and the frame is linked to the input by ``id`` (a column both have) or, without
it, row for row (the frame is then the input itself). Each released row's probability of correct
re-identification is reported (:mod:`safeshare.risk.record_risk`): exact when the frame is the
whole population, and from the Gaussian copula of the release (Rocher et al. 2019) always.

Nothing of the frame reaches an output but counts and rates. report.json and report.html are
rendered first and published together through :class:`~safeshare.io.OutputDirectory`; a
foreign or locked ``out`` is refused before anything is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare.app_runner import SILENT, Monitor
from safeshare.attack import linkage as linkage_mod
from safeshare.attack import residual as residual_mod
from safeshare.attack.exact import exact_match
from safeshare.attack.result import AttackResult
from safeshare.attack.truth import attribute
from safeshare.attack.view import QIMap, consistent_pairs, read_release
from safeshare.errors import DataError, InputError

#: Every attack :func:`run_attack` can run (exact matching always runs).
ALL_METHODS = ("exact", "linkage", "residual")


def read_input(cfg: Any) -> pd.DataFrame:
    """The configuration's input as the truth reads it: in memory, identifiers treated."""
    from safeshare.data.engines.memory import MemoryEngine

    frame: pd.DataFrame = MemoryEngine(cfg.source, identifiers=cfg.identifiers).frame
    return frame.reset_index(drop=True)


def read_frame(source: Any) -> pd.DataFrame:
    """A frame (or control) file as text, read with its :class:`~safeshare.data.source.TableSource`."""
    from safeshare.data.engines.memory import MemoryEngine

    return MemoryEngine(source).frame


def attack(
    release: str | Path,
    config: str | Path,
    frame: str | Path | pd.DataFrame,
    out: str | Path | None = None,
    *,
    monitor: Monitor = SILENT,
    **options: Any,
) -> AttackResult:
    """Attack ``release`` (made with ``config``) with the identified ``frame`` (module doc).

    Keywords: ``id`` (the column linking the frame to the configuration's input), ``control``
    (a file of records of the population not in the release), ``seed``, ``threshold`` (of the
    per-record risk), ``block`` (QIs blocking the linkage; ``[]``: none), ``max_pairs``,
    ``targets`` (of each residual-risk attack), ``secret`` (the inferred column),
    ``population_size`` and the frame's reading options (``delimiter``, ``header``, ``names``,
    ``missing``, ``skip_rows``).
    """
    from safeshare.config.commands import AttackOptions
    from safeshare.config.commands import options as validated
    from safeshare.config.file import load_config
    from safeshare.io import OutputDirectory

    if isinstance(options.get("control"), str):
        options = {**options, "control": Path(options["control"])}
    opts = validated(AttackOptions, options)
    if out is not None:
        OutputDirectory(Path(out)).preflight()
    with monitor.phase("reading the configuration and the frame"):
        cfg = load_config(config)
        fr = frame.copy() if isinstance(frame, pd.DataFrame) else read_frame(opts.source(frame))
        frame_name = "DataFrame" if isinstance(frame, pd.DataFrame) else Path(frame).name
    result = run_attack(Path(release), cfg, fr, frame_name, opts, monitor=monitor)
    if out is None:
        return result
    return replace(result, out=publish_attack(result, Path(out)))


def run_attack(
    release: Path,
    cfg: Any,
    fr: pd.DataFrame,
    frame_name: str,
    opts: Any,
    *,
    monitor: Monitor = SILENT,
    methods: Sequence[str] = ALL_METHODS,
    max_records: int | None = None,
    record_risk: bool = True,
    inputs: pd.DataFrame | None = None,
) -> AttackResult:
    """The attacks on the written ``release`` made with the loaded configuration ``cfg``
    (:func:`safeshare.config.load_config`), with the frame ``fr`` already read
    (:class:`~safeshare.config.commands.AttackOptions` ``opts``).

    ``methods``: the attacks run (exact matching always; ``linkage``, ``residual``);
    ``max_records``: attack a seeded uniform sample of at most this many of the attributed
    released rows (the truth is still decided over the whole release, and B's estimate is of
    the whole release); ``record_risk``: also each row's probability of re-identification;
    ``inputs``: the configuration's input as read (treated), when the caller has it already.
    """
    from safeshare.data.engines.memory import MemoryEngine
    from safeshare.data.schema import Role

    rng_root = np.random.SeedSequence([opts.seed, 34])
    # the seventh (univariate singling out) and the eighth (max_records' sample) came last: the
    # streams before them draw what they drew
    rngs = [np.random.default_rng(s) for s in rng_root.spawn(8)]
    notes: list[str] = []
    config = cfg.path
    with monitor.phase("reading the release and the input"):
        schema = cfg.schema
        rel = read_release(Path(release), cfg.output_delimiter)
        qis_all = list(schema.quasi_identifiers)
        missing = [q for q in qis_all if q not in rel.columns]
        if missing:
            raise InputError(
                f"{release}: the release has no column {missing[0]!r}, a quasi-identifier of {config}"
            )
        fr = fr.reset_index(drop=True).astype(str)
        shifted = [q for q in qis_all if schema.role(q) is Role.SHIFTED_DATE]
        qis = [q for q in qis_all if q in fr.columns and q not in shifted]
        if not qis:
            raise InputError(f"the frame has none of the quasi-identifiers {', '.join(qis_all)}")
        if len(qis) < len(qis_all):
            left = [q for q in qis_all if q not in qis]
            notes.append(
                "quasi-identifiers not matched exactly: "
                + ", ".join(left)
                + " (not in the frame, or shifted dates, whose released labels are of the shifted value)"
            )
        if inputs is None:
            inputs = read_input(cfg)
        other = [c for c in rel.columns if c not in qis_all]
    with monitor.phase("attributing the released rows to the input's records (the truth)"):
        input_maps = [
            QIMap.build(q, schema.hierarchy_spec(q), inputs[q].astype(str).tolist()) for q in qis_all
        ]
        truth = attribute(rel, inputs, qis_all, other, input_maps, opts.seed)
        record_of_row = truth.record_of_row
        if opts.id is not None:
            if opts.id not in fr.columns or opts.id not in inputs.columns:
                raise InputError(f"--id {opts.id}: the frame and the configuration's input must both have it")
            if opts.id in rel.columns and schema.role(opts.id) is not Role.PSEUDONYM:
                raise InputError(f"--id {opts.id}: the column is released as it is, so the attack is trivial")
            ids = fr[opts.id].astype(str)
            if ids.duplicated().any():
                raise DataError(f"--id {opts.id}: an identifier occurs twice in the frame")
            position = pd.Series(np.arange(len(fr)), index=ids.to_numpy())
            # the raw identifiers of the input (a pseudonym column is read treated above)
            raw = MemoryEngine(cfg.source).frame if opts.id in schema.identifier_columns else inputs
            in_ids = raw[opts.id].astype(str).to_numpy()
            frame_of_input = np.asarray(position.reindex(in_ids).fillna(-1).to_numpy(), dtype=np.int64)
        else:
            if len(fr) != len(inputs) or any(
                not fr[q].astype(str).equals(inputs[q].astype(str)) for q in qis if q in inputs.columns
            ):
                raise InputError(
                    "without --id the frame must be the configuration's input, row for row: give --id COLUMN "
                    "(a column the frame and the input both have) to link them"
                )
            frame_of_input = np.arange(len(inputs), dtype=np.int64)
        truth_in_frame = np.where(record_of_row >= 0, frame_of_input[np.maximum(record_of_row, 0)], -1)
        scored = truth.scored
        if truth.unscored_rows:
            notes.append(
                f"{truth.unscored_rows:,} released rows could not be attributed to one input record each "
                "(records consistent with several identical-looking rows); they are left out of every rate"
            )
    N = opts.population_size or cfg.population_size or len(inputs)
    frame_is_population = len(fr) == N
    full_rel, full_scored = rel, scored
    if max_records is not None and int(scored.sum()) > max_records:
        # a seeded uniform sample of the attributed rows (its own stream: the others are unchanged)
        keep = np.sort(rngs[7].choice(np.flatnonzero(scored), max_records, replace=False))
        notes.append(
            f"exact matching and the linkage attacked a seeded sample of {max_records:,} of the "
            f"{int(scored.sum()):,} attributed released rows (max_records)"
        )
        rel = rel.iloc[keep].reset_index(drop=True)
        truth_in_frame, scored = truth_in_frame[keep], scored[keep]
    with monitor.phase("exact matching on the generalized quasi-identifiers"):
        frame_maps = [QIMap.build(q, schema.hierarchy_spec(q), fr[q].tolist()) for q in qis]
        class_codes, class_labels = pd.factorize(pd.MultiIndex.from_frame(rel[qis].astype(str)))
        class_of_row = np.asarray(class_codes, dtype=np.int64)
        labels = pd.DataFrame(list(class_labels), columns=qis)
        f_rec, f_cls = consistent_pairs(frame_maps, fr[qis], labels)
        exact = exact_match(class_of_row, f_rec, f_cls, truth_in_frame, scored, rngs[0])
    estimate = _estimate(full_rel, qis_all, N, exact, frame_is_population, len(qis) == len(qis_all))
    link_doc: dict[str, Any] = {"skipped": "not asked for (attack methods)"}
    if "linkage" in methods:
        with monitor.phase("distance-based linkage"):
            link_doc = _linkage(
                opts,
                rel,
                fr,
                schema,
                qis,
                frame_maps,
                class_of_row,
                labels,
                f_rec,
                f_cls,
                truth_in_frame,
                scored,
                rngs[1],
                monitor,
                notes,
            )
    residual: dict[str, Any] = {"skipped": "not asked for (attack methods)"}
    if "residual" in methods:
        with monitor.phase("singling out, linkability and inference against the control set"):
            residual = _residual(
                opts,
                cfg,
                full_rel,
                inputs,
                record_of_row,
                frame_of_input,
                fr,
                qis,
                schema,
                [*rngs[2:5], rngs[6]],
            )
    record: dict[str, Any] = {"skipped": "not asked for"}
    if record_risk:
        with monitor.phase("per-record risk"):
            record = _record_risk(rel, qis, frame_maps, N, exact, scored, frame_is_population, opts, rngs[5])
    return AttackResult(
        release=Path(release).name,
        frame=frame_name,
        config=Path(config).name,
        quasi_identifiers=qis,
        records={
            "release": len(full_rel),
            "scored": int(full_scored.sum()),
            "attacked": int(scored.sum()),
            "unscored": truth.unscored_rows,
            "in_frame": int((truth_in_frame[scored] >= 0).sum()),
            "frame": len(fr),
            "population_size": N,
            "frame_is_population": frame_is_population,
        },
        exact=exact.to_dict(),
        estimate=estimate,
        linkage=link_doc,
        residual=residual,
        record_risk=record,
        notes=notes,
        seed=opts.seed,
    )


def _estimate(
    rel: pd.DataFrame, qis: list[str], N: int, exact: Any, frame_is_population: bool, all_qis: bool
) -> dict[str, Any]:
    """The release's B estimated from its class sizes, the exact B where the frame is the
    population, and where the measured rate sits against them."""
    from safeshare.risk.release_risk import release_risk_estimate
    from safeshare.risk.spread import recommended_estimator

    sizes = rel.groupby(qis, sort=False).size().to_numpy()
    estimator = recommended_estimator(int(sizes.sum()), N)  # choice.default_estimator at n/N
    est = release_risk_estimate(sizes, N, "B", estimator, interval=True)
    lo, hi = exact.rate.interval
    doc: dict[str, Any] = {
        "estimator": estimator,
        "population_size": N,
        "B": est.value,
        "interval": None if est.interval is None else list(est.interval),
        "no_estimate": est.reason,
        "B_exact": exact.expected if frame_is_population and all_qis else None,
    }
    verdicts = []
    for name, value in (("B exact", doc["B_exact"]), ("B estimated", est.value)):
        if value is not None:
            where = "within" if lo <= value <= hi else ("below" if value < lo else "above")
            verdicts.append(f"{name} {value:.4f} is {where} the measured rate's interval")
    if est.interval is not None:
        a, b = est.interval
        inside = a <= exact.rate.value <= b
        verdicts.append(f"the measured rate is {'inside' if inside else 'outside'} the estimate's interval")
    doc["verdict"] = "; ".join(verdicts)
    return doc


def _linkage(
    opts: Any,
    rel: pd.DataFrame,
    fr: pd.DataFrame,
    schema: Any,
    qis: list[str],
    frame_maps: list[QIMap],
    class_of_row: np.ndarray,
    labels: pd.DataFrame,
    f_rec: np.ndarray,
    f_cls: np.ndarray,
    truth_in_frame: np.ndarray,
    scored: np.ndarray,
    rng: np.random.Generator,
    monitor: Monitor,
    notes: list[str],
) -> dict[str, Any]:
    from safeshare.data.schema import Role

    columns = [
        linkage_mod.qi_column(m, rel[q].astype(str).to_numpy(dtype=object), fr[q])
        for q, m in zip(qis, frame_maps, strict=True)
    ]
    for c in rel.columns:
        if c in qis or c not in fr.columns or schema.role(c) is Role.PSEUDONYM:
            continue
        attr = schema.attributes.get(c)
        fmt = attr.date_format if attr is not None and attr.role is Role.SHIFTED_DATE else None
        columns.append(linkage_mod.other_column(c, rel[c], fr[c], fmt))
    block = list(qis) if opts.block is None else list(opts.block)
    unknown = [b for b in block if b not in qis]
    if unknown:
        raise InputError(f"--block {unknown[0]}: not a quasi-identifier the frame has ({', '.join(qis)})")
    if block == qis:
        block_of_row, b_rec, b_blk = class_of_row, f_rec, f_cls
    elif block:
        idx = [qis.index(b) for b in block]
        codes, uniq = pd.factorize(pd.MultiIndex.from_frame(rel[block].astype(str)))
        block_of_row = np.asarray(codes, dtype=np.int64)
        b_rec, b_blk = consistent_pairs(
            [frame_maps[i] for i in idx], fr[block], pd.DataFrame(list(uniq), columns=block)
        )
    else:
        block_of_row = np.zeros(len(rel), dtype=np.int64)
        b_rec, b_blk = np.arange(len(fr), dtype=np.int64), np.zeros(len(fr), dtype=np.int64)
    with monitor.progress("linking released rows", len(rel)) as update:
        result = linkage_mod.link(
            columns,
            block_of_row,
            b_rec,
            b_blk,
            len(fr),
            truth_in_frame,
            scored,
            rng,
            block,
            max_pairs=opts.max_pairs,
            progress=update,
        )
    return result.to_dict()


def _residual(
    opts: Any,
    cfg: Any,
    rel: pd.DataFrame,
    inputs: pd.DataFrame,
    record_of_row: np.ndarray,
    frame_of_input: np.ndarray,
    fr: pd.DataFrame,
    qis: list[str],
    schema: Any,
    rngs: list[np.random.Generator],
) -> dict[str, Any]:
    """The three residual risks: targets from the released people's frame records, control from
    ``control`` or the frame's records of people not in the input."""
    released_inputs = np.unique(record_of_row[record_of_row >= 0])
    in_frame = frame_of_input[released_inputs]
    attack_rows = in_frame[in_frame >= 0]
    if opts.control is not None:
        control = read_frame(opts.source(opts.control)).astype(str)
        missing = [c for c in fr.columns if c not in control.columns and c in rel.columns]
        if missing:
            raise InputError(
                f"--control: the control records have no column {missing[0]!r}, which the frame has"
            )
        targets = pd.concat(
            [
                fr.iloc[attack_rows][[c for c in fr.columns if c in control.columns]],
                control[[c for c in fr.columns if c in control.columns]],
            ],
            ignore_index=True,
        )
        n_attack = attack_rows.size
    elif opts.id is not None:
        used = np.zeros(len(fr), dtype=bool)
        used[frame_of_input[frame_of_input >= 0]] = True
        outside = np.flatnonzero(~used)
        if outside.size == 0:
            return {"skipped": "no control records: every frame record is in the input; give --control"}
        targets = pd.concat([fr.iloc[attack_rows], fr.iloc[outside]], ignore_index=True)
        n_attack = attack_rows.size
    else:
        return {
            "skipped": "no control set: give --control FILE (records of the population not in the release), "
            "or --id with a frame larger than the input"
        }
    if n_attack == 0:
        return {"skipped": "no released person is in the frame"}
    compared_qis = [q for q in qis if q in targets.columns]
    maps = [QIMap.build(q, schema.hierarchy_spec(q), targets[q].tolist()) for q in compared_qis]
    from safeshare.data.schema import Role

    columns = [
        linkage_mod.qi_column(m, rel[q].astype(str).to_numpy(dtype=object), targets[q])
        for q, m in zip(compared_qis, maps, strict=True)
    ]
    for c in rel.columns:
        if c in qis or c not in targets.columns or schema.role(c) is Role.PSEUDONYM:
            continue
        attr = schema.attributes.get(c)
        fmt = attr.date_format if attr is not None and attr.role is Role.SHIFTED_DATE else None
        columns.append(linkage_mod.other_column(c, rel[c], targets[c], fmt))
    side = residual_mod.Side(tuple(columns), len(rel), len(targets))
    k = opts.targets
    attack_pos = np.arange(n_attack)
    control_pos = np.arange(n_attack, len(targets))

    def pick(pos: np.ndarray, r: np.random.Generator) -> np.ndarray:
        return r.choice(pos, min(k, pos.size), replace=False) if pos.size else pos

    a_t, c_t = pick(attack_pos, rngs[0]), pick(control_pos, rngs[0])
    doc: dict[str, Any] = {
        "targets": {"attack": int(a_t.size), "control": int(c_t.size)},
        "control_source": "--control file" if opts.control is not None else "frame records not in the input",
        "columns": [col.name for col in columns],
    }
    so = residual_mod.singling_out(side, attack_pos, control_pos, k, min(3, len(columns)), rngs[0])
    doc["singling_out"] = residual_mod.to_dict(
        f"singling out (multivariate, {min(3, len(columns))} columns)", so, {}
    )
    uni = residual_mod.singling_out(side, attack_pos, control_pos, k, 1, rngs[3])
    doc["singling_out_univariate"] = residual_mod.to_dict("singling out (univariate)", uni, {})
    if len(columns) >= 2:
        half = len(columns) // 2
        split = (list(range(half)), list(range(half, len(columns))))
        li = residual_mod.linkability(side, a_t, c_t, split, rngs[1])
        doc["linkability"] = residual_mod.to_dict(
            "linkability", li, {"split": [[columns[i].name for i in s] for s in split]}
        )
        names = [col.name for col in columns]
        secret = opts.secret or next((s for s in schema.sensitive if s in names), names[-1])
        if secret not in names:
            raise InputError(
                f"--secret {secret}: not a released column the targets have ({', '.join(names)})"
            )
        inf = residual_mod.inference(side, a_t, c_t, names.index(secret), rngs[2])
        doc["inference"] = residual_mod.to_dict("inference", inf, {"secret": secret})
    else:
        doc["linkability"] = doc["inference"] = "needs two compared columns"
    return doc


def _record_risk(
    rel: pd.DataFrame,
    qis: list[str],
    frame_maps: list[QIMap],
    N: int,
    exact: Any,
    scored: np.ndarray,
    frame_is_population: bool,
    opts: Any,
    rng: np.random.Generator,
) -> dict[str, Any]:
    from safeshare.risk.record_risk import copula_record_risk, distribution, exact_record_risk

    doc: dict[str, Any] = {"threshold": opts.threshold}
    if frame_is_population:
        m = exact.candidates
        doc["exact"] = distribution(exact_record_risk(np.maximum(m[m > 0], 1)), opts.threshold)
        doc["exact"]["method"] = (
            "1/F: F = the frame records consistent with the row (the frame is the population)"
        )
    else:
        doc["exact"] = "the frame is not the whole population: no exact per-record risk"
    try:
        table = _ordered_table(rel, qis, frame_maps)
        fitted = copula_record_risk(table, N, int(rng.integers(2**31)))
        per_class = fitted.correctness
        keys = pd.MultiIndex.from_frame(rel[qis].astype(str))
        class_index = {
            tuple(str(table.categories[c][code]) for c, code in enumerate(row)): j
            for j, row in enumerate(table.codes)
        }
        per_row = per_class[np.asarray([class_index[tuple(k)] for k in keys], dtype=np.int64)]
        doc["copula"] = distribution(per_row, opts.threshold)
        doc["copula"]["method"] = (
            "Rocher et al. 2019: Gaussian copula of the release, kappa = E[1/(f + Binomial(N - n, p))]"
        )
        doc["copula"]["expected_population_uniques_in_release"] = float(fitted.uniqueness.sum())
    except InputError as exc:
        doc["copula"] = f"not computed: {exc}"
    return doc


def _ordered_table(rel: pd.DataFrame, qis: list[str], maps: list[QIMap]) -> Any:
    """The release's table on ``qis`` with each column's labels in hierarchy order (the copula's
    latent Gaussian reads the categories as ordered: ages in age order, not in text order)."""
    from safeshare.risk.classes import SampleTable

    codes = np.empty((len(rel), len(qis)), dtype=np.int64)
    cats = []
    for j, (q, m) in enumerate(zip(qis, maps, strict=True)):
        values = rel[q].astype(str)
        rank = m.label_rank
        labels = sorted(pd.unique(values), key=lambda v: (rank.get(v, len(rank)), v))
        codes[:, j] = pd.Categorical(values, categories=labels).codes
        cats.append(tuple(labels))
    return SampleTable.from_codes(codes, tuple(qis), tuple(cats))


def publish_attack(result: AttackResult, out_dir: Path) -> Path:
    """report.json and report.html of the attack, published as one unit."""
    from safeshare.io import publish_directory

    text, page = result.to_json(), result.to_html()

    def write(stage: Path) -> None:
        (stage / "report.json").write_text(text, encoding="utf-8")
        (stage / "report.html").write_text(page, encoding="utf-8")

    publish_directory(out_dir, write)
    return out_dir
