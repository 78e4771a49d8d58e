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
====================  =========================================  ==============================

(``safeshare risk`` and ``safeshare surveil`` move onto this layer in a later step.)
Every result has ``to_dict()`` (what ``--json`` prints); a :class:`Release` has
``report`` (report.json). Bad input raises :class:`~safeshare.errors.InputError` (a
:class:`~safeshare.errors.ConfigError` for a configuration or an option) with a one-line
message naming the key or the option.
"""

from __future__ import annotations

from safeshare.workflows.anonymize import anonymize, anonymize_dry_run
from safeshare.workflows.dp_experiment import DPExperiment, dp_experiment
from safeshare.workflows.dp_params import DPParams, dp_params
from safeshare.workflows.flatten import Flattened, flatten
from safeshare.workflows.hierarchy_build import BuiltHierarchy, hierarchy_build
from safeshare.workflows.hierarchy_check import HierarchyCheck, hierarchy_check
from safeshare.workflows.inspection import Inspection, inspect
from safeshare.workflows.result import Release, ReportWarning
from safeshare.workflows.sweep import SweepResult, sweep
from safeshare.workflows.utility import UtilityResult, utility

__all__ = [
    "BuiltHierarchy",
    "DPExperiment",
    "DPParams",
    "Flattened",
    "HierarchyCheck",
    "Inspection",
    "Release",
    "ReportWarning",
    "SweepResult",
    "UtilityResult",
    "anonymize",
    "anonymize_dry_run",
    "dp_experiment",
    "dp_params",
    "flatten",
    "hierarchy_build",
    "hierarchy_check",
    "inspect",
    "sweep",
    "utility",
]
