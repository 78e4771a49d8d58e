"""Estimators of the sample-to-population re-identification risk B, by name.

Every module of this package defines one :class:`~.base.RiskEstimator` and
registers it with :func:`register`; modules are discovered at import time, so
a new estimator is one new file.

The names the ``safeshare risk`` JSON output fixes: ``entropy``,
``hypothesis_test``, ``benedetti_franconi``, ``gaussian_copula``,
``dvine_copula``, ``average``; the population-uniqueness baselines
``pitman``, ``zayatz``, ``snb``, ``dankar``.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, TypeVar

from safeshare.errors import InputError
from safeshare.risk.estimators.base import RiskEstimator

E = TypeVar("E", bound=type[RiskEstimator])

ESTIMATORS: dict[str, type[RiskEstimator]] = {}

PAPER_ESTIMATORS = (
    "entropy",
    "hypothesis_test",
    "benedetti_franconi",
    "gaussian_copula",
    "dvine_copula",
    "average",
)
BASELINES = ("pitman", "zayatz", "snb", "dankar")

DEFAULT_ESTIMATOR = "pitman"
"""The estimator ``safeshare risk`` uses unless told otherwise: the best on our own evaluation
(``safeshare risk evaluate`` on Adult, docs/risk.md "Evaluation results")."""


def register(cls: E) -> E:
    """Class decorator: make ``cls`` available under ``cls.name``."""
    if cls.name in ESTIMATORS and ESTIMATORS[cls.name] is not cls:
        raise ValueError(f"two estimators are named {cls.name!r}")
    ESTIMATORS[cls.name] = cls
    return cls


def _discover() -> None:
    for info in pkgutil.iter_modules(__path__):
        if info.name != "base" and not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


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


_discover()

__all__ = [
    "BASELINES",
    "DEFAULT_ESTIMATOR",
    "ESTIMATORS",
    "PAPER_ESTIMATORS",
    "RiskEstimator",
    "estimator_names",
    "make_estimator",
    "register",
]
