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
ledger verify         :func:`verify_ledger`                      :class:`LedgerVerification`
certificate pdf       :func:`certificate_pdf`                    the PDF's :class:`~pathlib.Path`
compare               :func:`compare`                            :class:`Comparison`
====================  =========================================  ==============================

and :mod:`workbench` (:mod:`safeshare.workflows.workbench`), the use cases of the browser workbench
(``safeshare ui``), which reaches the library through this module only.

The surveillance use cases take
the population table as ``population_table`` (``--population-table``) and the count of Monte
Carlo runs as ``simulations``; a surveillance release's ``to_dict()`` is its release.json.
Every result has ``to_dict()`` (what ``--json`` prints); a :class:`Release` has
``report`` (report.json). Bad input raises :class:`~safeshare.errors.InputError` (a
:class:`~safeshare.errors.ConfigError` for a configuration or an option) with a one-line
message naming the key or the option.

Every name is imported on first use (PEP 562: :func:`__getattr__`), so ``import safeshare.api``
loads none of numpy, pandas, numba, scipy, scikit-learn, matplotlib or the surveillance release
(``tests/test_startup.py``), and a command imports only its own use case. Type checkers and IDEs
see the names through the ``TYPE_CHECKING`` imports below, which are the same as :data:`_EXPORTS`
(``tests/test_startup.py`` checks that they agree).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from safeshare.attack.result import AttackResult
    from safeshare.report.content import ReportWarning
    from safeshare.report.pdf import certificate_pdf
    from safeshare.surveillance.release import SurveillanceRelease
    from safeshare.workflows import workbench
    from safeshare.workflows.anonymize import anonymize, anonymize_dry_run
    from safeshare.workflows.attack import attack
    from safeshare.workflows.compare import Comparison, compare
    from safeshare.workflows.dp_experiment import DPExperiment, dp_experiment
    from safeshare.workflows.dp_params import DPParams, dp_params
    from safeshare.workflows.flatten import Flattened, flatten
    from safeshare.workflows.hierarchy_build import BuiltHierarchy, hierarchy_build
    from safeshare.workflows.hierarchy_check import HierarchyCheck, hierarchy_check
    from safeshare.workflows.inspection import Inspection, inspect
    from safeshare.workflows.ledger import LedgerVerification, verify_ledger
    from safeshare.workflows.result import Release
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

#: public name -> the module that defines it (imported when the name is first used)
_EXPORTS: dict[str, str] = {
    "ReportWarning": "safeshare.report.content",
    "SurveillanceRelease": "safeshare.surveillance.release",
    "anonymize": "safeshare.workflows.anonymize",
    "anonymize_dry_run": "safeshare.workflows.anonymize",
    "AttackResult": "safeshare.attack.result",
    "attack": "safeshare.workflows.attack",
    "Comparison": "safeshare.workflows.compare",
    "compare": "safeshare.workflows.compare",
    "DPExperiment": "safeshare.workflows.dp_experiment",
    "dp_experiment": "safeshare.workflows.dp_experiment",
    "DPParams": "safeshare.workflows.dp_params",
    "dp_params": "safeshare.workflows.dp_params",
    "Flattened": "safeshare.workflows.flatten",
    "flatten": "safeshare.workflows.flatten",
    "BuiltHierarchy": "safeshare.workflows.hierarchy_build",
    "hierarchy_build": "safeshare.workflows.hierarchy_build",
    "HierarchyCheck": "safeshare.workflows.hierarchy_check",
    "hierarchy_check": "safeshare.workflows.hierarchy_check",
    "Inspection": "safeshare.workflows.inspection",
    "inspect": "safeshare.workflows.inspection",
    "LedgerVerification": "safeshare.workflows.ledger",
    "verify_ledger": "safeshare.workflows.ledger",
    "certificate_pdf": "safeshare.report.pdf",
    "Release": "safeshare.workflows.result",
    "Estimate": "safeshare.workflows.risk",
    "RiskAssessment": "safeshare.workflows.risk",
    "risk": "safeshare.workflows.risk",
    "RiskEvaluation": "safeshare.workflows.risk_evaluation",
    "risk_evaluate": "safeshare.workflows.risk_evaluation",
    "SurveilEvaluation": "safeshare.workflows.surveil",
    "SurveilSearch": "safeshare.workflows.surveil",
    "SurveilSelection": "safeshare.workflows.surveil",
    "SurveilSimulation": "safeshare.workflows.surveil",
    "surveil_evaluate": "safeshare.workflows.surveil",
    "surveil_release": "safeshare.workflows.surveil",
    "surveil_search": "safeshare.workflows.surveil",
    "surveil_select": "safeshare.workflows.surveil",
    "surveil_simulate": "safeshare.workflows.surveil",
    "SweepResult": "safeshare.workflows.sweep",
    "sweep": "safeshare.workflows.sweep",
    "UtilityResult": "safeshare.workflows.utility",
    "utility": "safeshare.workflows.utility",
}

#: public module name -> the module (the browser workbench's use cases: ``api.workbench.profile``...)
_MODULES: dict[str, str] = {"workbench": "safeshare.workflows.workbench"}

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
    "LedgerVerification",
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
    "certificate_pdf",
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
    "verify_ledger",
    "workbench",
]


def __getattr__(name: str) -> Any:
    """``api.<name>``: imported from its module on first use, then kept in this module."""
    if name in _MODULES:
        value: Any = import_module(_MODULES[name])
    elif name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
    else:
        raise AttributeError(f"module 'safeshare.api' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
