"""The vocabulary of warning codes (issue 31): one place (safeshare/warning_codes.py), one spelling
(kebab-case); both structured warnings refuse any other code; the docs name every code as it is
written (the disclosure warnings were ``homogeneous_classes`` beside ``uninformative-qi``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from safeshare.report.content import ReportWarning
from safeshare.verify.disclosure import DisclosureWarning
from safeshare.warning_codes import SPELLING, WarningCode, warning_code

ROOT = Path(__file__).resolve().parent.parent


def test_every_code_is_kebab_case_and_distinct() -> None:
    values = [code.value for code in WarningCode]
    assert len(set(values)) == len(values) == 14
    for value in values:
        assert SPELLING.fullmatch(value), value
    for bad in ("homogeneous_classes", "Uninformative-QI", "delta--above", "-qi", "qi-"):
        assert not SPELLING.fullmatch(bad), bad


@pytest.mark.parametrize("code", ["homogeneous_classes", "kept_column_identifying", "singleton_classes", ""])
def test_both_warning_classes_refuse_a_code_outside_the_vocabulary(code: str) -> None:
    with pytest.raises(ValueError, match="unknown warning code"):
        ReportWarning(code, "message")
    with pytest.raises(ValueError, match="unknown warning code"):
        DisclosureWarning(code, ("a",), 0.5, "message")
    with pytest.raises(ValueError, match="homogeneous-classes"):  # the message lists the known codes
        warning_code(code)


def test_a_warning_is_written_with_the_codes_spelling() -> None:
    """The code of a warning is the vocabulary's member, written as its text (report.json's
    ``code``); a warning built from a disclosure warning keeps it."""
    found = DisclosureWarning("homogeneous-classes", ("outcome", "age"), 0.25, "...")
    assert found.code is WarningCode.HOMOGENEOUS_CLASSES
    shown = ReportWarning(found.code, found.message, found.columns, found.value).to_dict()
    assert shown["code"] == "homogeneous-classes" and type(shown["code"]) is str
    assert found.to_dict()["code"] == "homogeneous-classes" and type(found.to_dict()["code"]) is str


def test_the_docs_name_every_code_and_no_code_is_spelled_another_way() -> None:
    docs = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md")}
    text = "\n".join(docs.values())
    for code in WarningCode:
        assert f"`{code.value}`" in text, code
        # a snake_case spelling of a code appears only in the note that says it was renamed
        old = code.value.replace("-", "_")
        mentions = [name for name, doc in docs.items() if re.search(rf"`{old}`", doc)]
        assert mentions in ([], ["report.md"]), (code, mentions)
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "src" / "safeshare").rglob("*.py"))
    for code in WarningCode:
        old = code.value.replace("-", "_")
        if old != code.value:
            assert f'"{old}"' not in source, old
