"""Estimators of the sample-to-population re-identification risk B, by name.

Each built-in estimator is one module of this package, named as the estimator (but for
``hypothesis_test``, in ``hypothesis_testing.py``: pytest collects files named ``*_test.py``), that
defines one :class:`~.base.RiskEstimator` and registers it with :func:`register`; its
module is imported the first time the estimator is asked for (:data:`ESTIMATORS` is a
lazy mapping), so a run that uses Pitman does not import the copulas' libraries
(pyvinecopulib, scipy.stats: about 1 s of a command's start-up). A new built-in
estimator is one new file and its name in :data:`PAPER_ESTIMATORS` or :data:`BASELINES`;
any other class decorated with :func:`register` is available once its module is imported.

The names the ``safeshare risk`` JSON output fixes: ``entropy``,
``hypothesis_test``, ``benedetti_franconi``, ``gaussian_copula``,
``dvine_copula``, ``average``; the population-uniqueness baselines
``pitman``, ``zayatz``, ``snb``, ``dankar``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from safeshare.errors import InputError

if TYPE_CHECKING:  # numpy and pandas load with the first estimator (the names need neither)
    from safeshare.risk.estimators.base import RiskEstimator

E = TypeVar("E", bound="type[RiskEstimator]")

PAPER_ESTIMATORS = (
    "entropy",
    "hypothesis_test",
    "benedetti_franconi",
    "gaussian_copula",
    "dvine_copula",
    "average",
)
BASELINES = ("pitman", "zayatz", "snb", "dankar")

#: The built-in estimators whose module is not named as the estimator.
_MODULES = {"hypothesis_test": "hypothesis_testing"}

#: The built-in estimators that need the sample's table, not only its class sizes
#: (``requires_table``), known without importing them: listing the estimators usable on a
#: release's class-size histogram must not import the copulas (pyvinecopulib, scipy.stats, matplotlib:
#: about 1.5 s of every command's start-up). The registry checks it against each class it loads.
TABLE_ESTIMATORS = frozenset({"entropy", "gaussian_copula", "dvine_copula", "average"})

DEFAULT_ESTIMATOR = "pitman"
"""The estimator ``safeshare risk`` uses unless told otherwise: the best on our own evaluation
(``safeshare risk evaluate`` on Adult, docs/risk.md "Evaluation results")."""


class _Registry(Mapping[str, "type[RiskEstimator]"]):
    """Name -> estimator class; a built-in estimator's module is imported on first access."""

    def __init__(self, builtin: tuple[str, ...]) -> None:
        self._builtin = builtin
        self._classes: dict[str, type[RiskEstimator]] = {}

    def add(self, cls: type[RiskEstimator]) -> None:
        if cls.name in self._classes and self._classes[cls.name] is not cls:
            raise ValueError(f"two estimators are named {cls.name!r}")
        self._classes[cls.name] = cls

    def __getitem__(self, name: str) -> type[RiskEstimator]:
        if name not in self._classes and name in self._builtin:
            importlib.import_module(f"{__name__}.{_MODULES.get(name, name)}")
            if name not in self._classes:  # the module must register its estimator under its own name
                raise RuntimeError(f"module {name} registers no estimator named {name!r}")
            if self._classes[name].requires_table != (name in TABLE_ESTIMATORS):
                raise RuntimeError(f"estimator {name!r}: requires_table disagrees with TABLE_ESTIMATORS")
        return self._classes[name]

    def requires_table(self, name: str) -> bool:
        """Whether estimator ``name`` needs the sample's table; a built-in one's module is not imported."""
        if name not in self._classes and name in self._builtin:
            return name in TABLE_ESTIMATORS
        return self[name].requires_table

    def __contains__(self, name: object) -> bool:
        return name in self._builtin or name in self._classes

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._builtin, *self._classes]))

    def __len__(self) -> int:
        return len(set(self._builtin) | set(self._classes))


ESTIMATORS: Mapping[str, type[RiskEstimator]] = _Registry((*PAPER_ESTIMATORS, *BASELINES))
"""Every estimator by name: the built-in ones (imported when first looked up) and any other
registered class."""


def register(cls: E) -> E:
    """Class decorator: make ``cls`` available under ``cls.name``."""
    assert isinstance(ESTIMATORS, _Registry)
    ESTIMATORS.add(cls)
    return cls


def requires_table(name: str) -> bool:
    """Whether estimator ``name`` needs the sample's table (``requires_table``), not only its class
    sizes; answered for a built-in estimator without importing its module."""
    assert isinstance(ESTIMATORS, _Registry)
    return ESTIMATORS.requires_table(name)


def estimator_names() -> list[str]:
    """Every registered name: the paper's six first, then the baselines, then any others."""
    known = [n for n in (*PAPER_ESTIMATORS, *BASELINES) if n in ESTIMATORS]
    return known + sorted(set(ESTIMATORS) - set(known))


def make_estimator(name: str, **params: Any) -> RiskEstimator:
    """A new estimator called ``name`` with ``params`` (those it does not take are ignored)."""
    if name not in ESTIMATORS:
        raise InputError(f"unknown estimator {name!r}: expected one of {', '.join(estimator_names())}")
    cls = ESTIMATORS[name]
    import inspect

    accepted = set(inspect.signature(cls.__init__).parameters) - {"self"}
    return cls(**{k: v for k, v in params.items() if k in accepted})


__all__ = [
    "BASELINES",
    "DEFAULT_ESTIMATOR",
    "ESTIMATORS",
    "PAPER_ESTIMATORS",
    "TABLE_ESTIMATORS",
    "estimator_names",
    "make_estimator",
    "register",
    "requires_table",
]
