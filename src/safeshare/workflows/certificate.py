"""The certificate's risk figures (issue 33): what B rests on, told on the page a privacy officer signs.

:func:`risk_certificate` adds to report.json's ``certificate``:

* ``population``: ``{size, source, assumed}``: N, where it comes from (``population.source``), and
  whether it was assumed (no N given: the input is the whole population,
  :class:`~safeshare.risk.population.Population`);
* ``sensitivity``: B at N/2, N and 2N with the run's estimator, and the N at which B would cross
  the threshold (:mod:`safeshare.risk.sensitivity`);
* ``estimators``: every class-size estimator's B at the chosen node, their spread, the caveat our
  evaluation measured for each at the sampling fraction n/N, the recommended one
  (:mod:`safeshare.risk.spread`);
* ``risk_kind``: the sentence that B is an average and what the threshold is set for
  (:func:`safeshare.risk.thresholds.risk_kind_sentence`; the headline states the same).

The figures come from the release's own class sizes (the released classes of the plan: people with
a person key) and the N of the report's risk section, so that every one can be recomputed from
report.json and the released file (tests/test_certificate_risk.py does).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from safeshare.figures import number
from safeshare.risk.estimators import DEFAULT_ESTIMATOR
from safeshare.risk.measures import DEFAULT_THRESHOLD
from safeshare.risk.sensitivity import ReleasedClasses, sensitivity
from safeshare.risk.spread import estimator_spread
from safeshare.risk.thresholds import derive_threshold, risk_kind_sentence, threshold_measure

if TYPE_CHECKING:
    from safeshare.workflows.release import ReleaseContext
    from safeshare.workflows.result import Release


def run_threshold(doc: Mapping[str, Any]) -> tuple[str, float, str]:
    """The measure, threshold and estimator B is judged by in report.json ``doc``: the risk privacy
    model's when it has one, else the risk section's (the paper's 0.09, the default estimator)."""
    model = ((doc.get("privacy") or {}).get("models") or {}).get("risk")
    section = doc.get("risk") or {}
    if isinstance(model, Mapping):
        estimator = str(model.get("estimator") or section.get("estimator") or DEFAULT_ESTIMATOR)
        return str(model.get("measure", "B")), float(model["threshold"]), estimator
    estimator = str(section.get("estimator") or DEFAULT_ESTIMATOR)
    return "B", float(section.get("threshold", DEFAULT_THRESHOLD)), estimator


def released_classes(release: Release) -> ReleasedClasses | None:
    """The released classes B is estimated from: the plan's, in people with a person key (the
    report's risk section's histogram); ``None`` when the plan's classes are not at hand."""
    result = release.fit
    if release.recoding is not None:
        return ReleasedClasses.of(release.recoding.released_class_sizes)
    if result is None or result.classes is None or result.assessment is None:
        return None
    if result.table.persons is not None:
        classes = result.classes
        released = result.assessment.acceptable & (classes.sizes > 0)
        side = (release.risk or {}).get("release") or {}
        people = np.asarray(classes.people)[released]
        return ReleasedClasses.of(people, int(side.get("n") or people.sum()), "people")
    return ReleasedClasses.of(result.released_class_sizes)


def risk_certificate(release: Release, context: ReleaseContext) -> dict[str, Any]:
    """report.json's ``certificate`` keys ``population``, ``sensitivity``, ``estimators`` and
    ``risk_kind`` of ``release`` (module docstring)."""
    doc = release.report
    section = doc.get("risk") or {}
    N = section.get("population_size")
    measure, threshold, estimator = run_threshold(doc)
    set_for, source = threshold_measure(threshold)
    out: dict[str, Any] = {
        "population": context.population.to_dict(int(N) if N is not None else None),
        "risk_kind": {
            "measure": measure,
            "threshold": threshold,
            "threshold_set_for": set_for,
            "threshold_source": source,
            "text": risk_kind_sentence(measure, threshold),
        },
        "derived_threshold": derived_threshold(context.governance, threshold),
    }
    classes = released_classes(release)
    if classes is None or N is None or classes.n == 0:
        out["sensitivity"] = None
        out["estimators"] = None
        return out
    if measure != "B":  # the band is of B: judged by the risk section's threshold
        threshold = float(section.get("threshold", DEFAULT_THRESHOLD))
    band = sensitivity(classes, int(N), estimator, threshold)
    side = section.get("release") or {}
    band["report_B"] = side.get("B")  # the risk section's B: exact when the input is the population
    band["report_B_exact"] = side.get("estimated") is False
    if band["report_B_exact"]:
        band["note"] = (
            "the report's B is exact (the input is the population: every class's population size is known); "
            f"the band is {estimator}'s estimate from the released class sizes, at N and as N changes"
        )
    out["sensitivity"] = band
    out["estimators"] = estimator_spread(classes, int(N), threshold, estimator)
    return out


def derived_threshold(governance: Mapping[str, Any] | None, threshold: float) -> dict[str, Any] | None:
    """The threshold the release context calls for (``governance.release_model`` and
    ``invasiveness``: :func:`~safeshare.risk.thresholds.derive_threshold`) beside the run's:
    whether the run's is at or below it (as strict), ``None`` without both fields."""
    gov = governance or {}
    model, invasiveness = gov.get("release_model"), gov.get("invasiveness")
    if not model or not invasiveness:
        return None
    derived = derive_threshold(str(model), str(invasiveness))
    strict = threshold <= derived.value + 1e-12
    return {
        **derived.to_dict(),
        "run_threshold": threshold,
        "run_at_most_derived": strict,
        "text": (
            f"the context ({model}, {invasiveness} invasiveness) calls for {number(derived.value)} on the "
            f"{derived.measure} risk; the run's threshold {number(threshold)} is "
            + ("at most that" if strict else "ABOVE it: less strict than the context calls for")
        ),
    }


__all__ = ["derived_threshold", "released_classes", "risk_certificate", "run_threshold"]
