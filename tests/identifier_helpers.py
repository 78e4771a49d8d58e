"""A small longitudinal clinical table (people with several visits) and its release with
pseudonyms and shifted dates, shared by the identifier, disclosure and evidence tests."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from safeshare import Anonymizer, KAnonymity
from safeshare.data.engines import factory
from safeshare.data.engines.base import Engine
from safeshare.data.identifiers import IdentifierTreatment, SecretKey
from safeshare.data.schema import Attribute, Role, Schema
from safeshare.data.source import TableSource
from safeshare.hierarchy.builders import DateBuilder
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.verify import Expectations, Verification, verify_release, with_identifiers
from safeshare.verify.identifiers import IdentifierExpectations
from safeshare.workflows.anonymizer import AnonymizationResult
from safeshare.workflows.release import release_expectations

#: Fixed keys for reproducible tests (never real keys: they are in the source). Random-looking
#: bytes: a counter such as bytes(range(32)) is refused as a key (issue 30).
TEST_KEY_BYTES = hashlib.sha256(b"safeshare test key").digest()
TEST_KEY = SecretKey(TEST_KEY_BYTES)
OTHER_KEY = SecretKey(hashlib.sha256(b"safeshare other test key").digest())

COLUMNS = ["mrn", "sex", "age", "admitted", "discharged", "dx"]


def visits(n_people: int = 150, seed: int = 0) -> pd.DataFrame:
    """``n_people`` people, 1-3 visits each: mrn, sex, age, admission and discharge dates, diagnosis."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_people):
        sex = str(rng.choice(["F", "M"]))
        age = int(rng.integers(20, 80))
        start = dt.date(2020, 1, 1) + dt.timedelta(days=int(rng.integers(0, 700)))
        for _ in range(int(rng.integers(1, 4))):
            admitted = start + dt.timedelta(days=int(rng.integers(0, 200)))
            stay = dt.timedelta(days=int(rng.integers(1, 15)))
            rows.append(
                {
                    "mrn": f"MRN{p:05d}",
                    "sex": sex,
                    "age": str(age),
                    "admitted": admitted.isoformat(),
                    "discharged": (admitted + stay).isoformat(),
                    "dx": str(rng.choice(["I21", "I50", "J18", "E11"])),
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)


def visits_schema(discharged_quasi: bool = True, max_days: int = 30) -> Schema:
    """mrn a pseudonym; sex, age quasi; admitted a kept shifted date; discharged a shifted
    date generalized by month/quarter/year (a quasi-identifier) or kept; dx sensitive."""
    age = Hierarchy([(str(a), f"{a // 10 * 10}-{a // 10 * 10 + 9}", "*") for a in range(20, 80)], "age")
    sex = Hierarchy([("F", "*"), ("M", "*")], "sex")
    dates = DateBuilder(levels=("month", "quarter", "year")) if discharged_quasi else None
    return Schema.from_attributes(
        [
            Attribute("mrn", Role.PSEUDONYM),
            Attribute("sex", Role.QUASI, sex),
            Attribute("age", Role.QUASI, age),
            Attribute("admitted", Role.SHIFTED_DATE, person="mrn", max_days=max_days),
            Attribute("discharged", Role.SHIFTED_DATE, dates, person="mrn", max_days=max_days),
            Attribute("dx", Role.SENSITIVE),
        ]
    )


def make_engine(name: str, source: TableSource, schema: Schema, key: SecretKey = TEST_KEY) -> Engine:
    """``name``'s engine over ``source`` with the schema's identifier treatment (the factory's path)."""
    return factory.make_engine(name, source, identifiers=IdentifierTreatment.from_schema(schema, key))


@dataclass
class Released:
    engine: Engine
    result: AnonymizationResult
    path: Path
    expected: Expectations
    verification: Verification


def identifier_expectations(
    engine: Engine, result: AnonymizationResult, schema: Schema, key: SecretKey, header: Sequence[str]
) -> Expectations:
    """The verifier's expectations with the identifier checks, built from the schema and key."""
    expected = release_expectations(result, header)
    table = result.table
    ids = IdentifierExpectations.from_schema(
        schema,
        key,
        engine.raw_grouped_batches,
        getattr(engine, "_missing", ()),
        {q: h.rows for q, h in zip(table.qi_names, table.hierarchies, strict=True)},
        result.levels,
    )
    roles = {n: a.role.value for n, a in schema.attributes.items()}
    return with_identifiers(expected, header, roles, None, ids)


def release(
    engine: Engine, schema: Schema, out: Path, fmt: str = "csv", key: SecretKey = TEST_KEY, k: int = 3
) -> Released:
    """Anonymize with k-anonymity, write the release with ``engine`` and verify it."""
    result = Anonymizer(schema, [KAnonymity(k)], max_suppression=0.1).fit(engine)
    plan = result.release_plan(engine.columns(), fmt)  # type: ignore[arg-type]
    engine.write_release(plan, out)
    expected = identifier_expectations(engine, result, schema, key, engine.columns())
    return Released(engine, result, out, expected, verify_release(out, fmt, expected))


def read_release(path: Path) -> pd.DataFrame:
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    return pd.read_csv(path, dtype=str, keep_default_na=False)
