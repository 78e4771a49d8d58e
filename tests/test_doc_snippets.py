"""Every Python snippet of README.md and docs/*.md runs (issue 19).

Each ```python block is executed on its own, in a fresh namespace, in a scratch directory
that holds the repository's ``examples`` (so ``examples/adult/adult.yaml`` resolves and
``out/...`` is written there). A snippet that would take minutes is marked by an HTML
comment ``<!-- snippet: slow -->`` on the line before its fence and runs with the slow tests
(``make test-all``); no snippet is skipped.
"""

from __future__ import annotations

import os
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def snippets() -> list[Any]:
    out = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            before = text[: match.start()].rstrip().splitlines()[-1:] or [""]
            slow = before[0].strip() == "<!-- snippet: slow -->"
            line = text[: match.start()].count("\n") + 1
            marks = [pytest.mark.slow] if slow else []
            out.append(pytest.param(doc, line, match.group(1), id=f"{doc.name}:{line}", marks=marks))
    return out


def test_the_docs_have_snippets() -> None:
    assert len(snippets()) >= 10


@pytest.mark.parametrize(("doc", "line", "code"), snippets())
def test_snippet_runs(
    doc: Path, line: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    compiled = compile(code, f"{doc.relative_to(ROOT)}:{line}", "exec")
    module = types.ModuleType(f"snippet_{doc.stem}_{line}")  # a module of its own (dataclasses look it up)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compiled, module.__dict__)
    assert os.getcwd() == str(tmp_path)
