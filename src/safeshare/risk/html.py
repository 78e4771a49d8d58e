"""risk.html: the human-readable page of ``safeshare risk estimate`` (beside risk.json).

Class sizes and counts only: each estimator's B, A, the exact measures, the per-record risk
distribution (records by the size of their class, hence by their prosecutor risk ``1/f``,
and by journalist risk ``1/F`` when the population is known) and the classes that drive the
risk, grouped by ``(f, F)`` (how many classes of each size pair, their records, their share of
B). No quasi-identifier value appears, so the page can travel with the release.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
import numpy as np

from safeshare.figures import count, number

TEMPLATES = Path(__file__).parent / "templates"

#: Class-size bins (lower bounds): the prosecutor risk 1/f of a record is fixed by its bin.
SIZE_EDGES = (1, 2, 3, 5, 11, 21, 51, 101)


def risk_distribution(
    sizes: Sequence[int] | np.ndarray, edges: Sequence[int] = SIZE_EDGES
) -> list[dict[str, Any]]:
    """Records and classes by class size (bins ``edges``), with the per-record risk range ``1/f``."""
    f = np.asarray(sizes, dtype=np.int64)
    n = int(f.sum())
    out = []
    for lo, hi in zip(edges, [*edges[1:], None], strict=True):
        mask = f >= lo if hi is None else (f >= lo) & (f < hi)
        records = int(f[mask].sum())
        label = str(lo) if hi == lo + 1 else (f"{lo}+" if hi is None else f"{lo}-{hi - 1}")
        risk = f"1/{lo}" if hi == lo + 1 else (f"≤ 1/{lo}" if hi is None else f"1/{hi - 1} – 1/{lo}")
        out.append(
            {
                "class_size": label,
                "risk": "1" if lo == 1 and hi == 2 else risk,
                "classes": int(mask.sum()),
                "records": records,
                "share": records / n if n else 0.0,
            }
        )
    return out


def render_risk_html(doc: Mapping[str, Any]) -> str:
    """The page for risk.json's ``doc`` (autoescaped; only numbers and names come from it)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
    env.filters["num"] = _num
    return env.get_template("risk.html.j2").render(doc=doc)


def _num(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return count(value)
    return number(value)
