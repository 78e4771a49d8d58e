"""The Python API: one function per command, with the command's options as keywords.

Every ``safeshare`` command is a use case in :mod:`safeshare.workflows` that takes the
command's options by their Python names and returns a typed result; the command line only
parses, calls it and prints the result. So a script (or a web page) runs exactly what a
command runs::

    from safeshare import api

    release = api.anonymize("examples/adult/adult.yaml", "out/adult", k=10, max_suppression="2%")
    release.report["levels"]            # the same report.json the command writes
    stats = api.inspect("examples/adult/adult.data", qi="age,sex,race", header=False,
                        names=",".join(ADULT_COLUMNS))

====================  =========================================  ==============================
command               function                                   result
====================  =========================================  ==============================
anonymize             :func:`anonymize` (``--dry-run``:          :class:`Release`
                      :func:`anonymize_dry_run`)
inspect               :func:`inspect`                            :class:`Inspection`
hierarchy check       :func:`hierarchy_check`                    :class:`HierarchyCheck`
hierarchy build       :func:`hierarchy_build`                    :class:`BuiltHierarchy`
flatten               :func:`flatten`                            :class:`Flattened`
utility               :func:`utility`                            :class:`UtilityResult`
sweep                 :func:`sweep`                              :class:`SweepResult`
dp params             :func:`dp_params`                          :class:`DPParams`
dp experiment         :func:`dp_experiment`                      :class:`DPExperiment`
surveil simulate      :func:`surveil_simulate`                   :class:`SurveilSimulation`
surveil search        :func:`surveil_search`                     :class:`SurveilSearch`
surveil select        :func:`surveil_select`                     :class:`SurveilSelection`
surveil evaluate      :func:`surveil_evaluate`                   :class:`SurveilEvaluation`
surveil release       :func:`surveil_release`                    :class:`SurveillanceRelease`
risk (estimate)       :func:`risk`                               :class:`RiskAssessment`
risk evaluate         :func:`risk_evaluate`                      :class:`RiskEvaluation`
attack                :func:`attack`                             :class:`AttackResult`
compare               :func:`compare`                            :class:`Comparison`
====================  =========================================  ==============================

The surveillance use cases take
the population table as ``population_table`` (``--population-table``) and the count of Monte
Carlo runs as ``simulations``; a surveillance release's ``to_dict()`` is its release.json.
Every result has ``to_dict()`` (what ``--json`` prints); a :class:`Release` has
``report`` (report.json). Bad input raises :class:`~safeshare.errors.InputError` (a
:class:`~safeshare.errors.ConfigError` for a configuration or an option) with a one-line
message naming the key or the option.
"""

from __future__ import annotations

from safeshare.attack.result import AttackResult
from safeshare.surveillance.release import SurveillanceRelease
from safeshare.workflows.anonymize import anonymize, anonymize_dry_run
from safeshare.workflows.attack import attack
from safeshare.workflows.compare import Comparison, compare
from safeshare.workflows.dp_experiment import DPExperiment, dp_experiment
from safeshare.workflows.dp_params import DPParams, dp_params
from safeshare.workflows.flatten import Flattened, flatten
from safeshare.workflows.hierarchy_build import BuiltHierarchy, hierarchy_build
from safeshare.workflows.hierarchy_check import HierarchyCheck, hierarchy_check
from safeshare.workflows.inspection import Inspection, inspect
from safeshare.workflows.result import Release, ReportWarning
from safeshare.workflows.risk import Estimate, RiskAssessment, risk
from safeshare.workflows.risk_evaluation import RiskEvaluation, risk_evaluate
from safeshare.workflows.surveil import (
    SurveilEvaluation,
    SurveilSearch,
    SurveilSelection,
    SurveilSimulation,
    surveil_evaluate,
    surveil_release,
    surveil_search,
    surveil_select,
    surveil_simulate,
)
from safeshare.workflows.sweep import SweepResult, sweep
from safeshare.workflows.utility import UtilityResult, utility

__all__ = [
    "AttackResult",
    "BuiltHierarchy",
    "Comparison",
    "DPExperiment",
    "DPParams",
    "Estimate",
    "Flattened",
    "HierarchyCheck",
    "Inspection",
    "Release",
    "ReportWarning",
    "RiskAssessment",
    "RiskEvaluation",
    "SurveilEvaluation",
    "SurveilSearch",
    "SurveilSelection",
    "SurveilSimulation",
    "SurveillanceRelease",
    "SweepResult",
    "UtilityResult",
    "anonymize",
    "anonymize_dry_run",
    "attack",
    "compare",
    "dp_experiment",
    "dp_params",
    "flatten",
    "hierarchy_build",
    "hierarchy_check",
    "inspect",
    "risk",
    "risk_evaluate",
    "surveil_evaluate",
    "surveil_release",
    "surveil_search",
    "surveil_select",
    "surveil_simulate",
    "sweep",
    "utility",
]
