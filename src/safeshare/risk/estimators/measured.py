"""The estimators' accuracy measured on Adult, Census-Income KDD and German credit (written by
``tools/risk_accuracy.py``; empty until the evaluations are in)."""

from __future__ import annotations

from typing import Any

ACCURACY: dict[str, dict[str, dict[str, Any]]] = {}
