"""UCI Adult as the thesis uses it: column names and quasi-identifiers, in one place.

The thesis' experiments (§5.3, §6.1) anonymize UCI Adult (Kohavi & Becker,
1996; ``examples/adult/``, CC BY 4.0) with nine quasi-identifiers. Tests,
benchmarks and the thesis comparisons all read these names from here.
"""

from __future__ import annotations

#: Column names of ``adult.data`` / ``adult.test`` (the files have no header), in file order.
ADULT_COLUMNS: tuple[str, ...] = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)

#: The nine quasi-identifiers of the thesis' Adult experiments, in file order.
ADULT_QUASI_IDENTIFIERS: tuple[str, ...] = (
    "age",
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "native-country",
)
