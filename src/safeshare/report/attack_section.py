"""report.html's view of the attack run with the release (issue 34): a line in the certificate
beside B, and a section with every rate (from report.json's ``certificate.attack`` and
``attack``, :mod:`safeshare.workflows.release_attack`).

Every figure is written by the caller's ``figure(doc, key, kind)`` (:func:`safeshare.report.html.figure`),
so the page marks each with its report.json key and a test can read it back; the functions
take it as an argument, so this module does not import the page's module (which imports it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from markupsafe import Markup

Figure = Callable[..., Markup]

_RESIDUAL = {
    "singling_out": "singling out (multivariate)",
    "singling_out_univariate": "singling out (univariate)",
    "linkability": "linkability",
    "inference": "attribute inference",
}


def certificate_rows(doc: dict[str, Any], figure: Figure) -> list[tuple[str, Any]]:
    """The certificate's line of the attack: its correct-match rate and interval beside B."""
    cert = (doc.get("certificate") or {}).get("attack")
    if not isinstance(cert, dict):
        return []
    at = "certificate.attack"
    b_kind = "exact" if cert.get("B_exact") else "estimated"
    text = Markup(
        "exact matching with the identified frame {}: {} correct of {} released records attacked "
        "(of {}), rate {} "
        "(95 % {}–{}); B {} ({}), {} estimate {} (95 % {}–{}){}"
    ).format(
        cert.get("frame"),
        figure(doc, f"{at}.correct_matches", "count"),
        figure(doc, f"{at}.records_attacked", "count"),
        figure(doc, f"{at}.records_released", "count"),
        figure(doc, f"{at}.correct_match_rate"),
        figure(doc, f"{at}.interval.0"),
        figure(doc, f"{at}.interval.1"),
        figure(doc, f"{at}.B"),
        b_kind,
        cert.get("estimator"),
        figure(doc, f"{at}.B_estimate"),
        figure(doc, f"{at}.B_interval.0"),
        figure(doc, f"{at}.B_interval.1"),
        _verdict(cert),
    )
    rows: list[tuple[str, Any]] = [("attacked (beside B)", text)]
    if isinstance(cert.get("linkage"), dict):
        rows.append(
            (
                "attacked (linkage)",
                Markup("distance-based one-to-one linkage: rate {} (95 % {}–{}) of {} records").format(
                    figure(doc, f"{at}.linkage.correct_match_rate"),
                    figure(doc, f"{at}.linkage.interval.0"),
                    figure(doc, f"{at}.linkage.interval.1"),
                    figure(doc, f"{at}.linkage.records_attacked", "count"),
                ),
            )
        )
    return rows


def _verdict(cert: dict[str, Any]) -> str:
    """The verdict in words, beside the figures the line marks."""
    parts = []
    if cert.get("position"):
        parts.append(f"the attack's rate lies {cert['position']} B's interval")
    if cert.get("exact_B_position"):
        parts.append(f"the exact B lies {cert['exact_B_position']} the attack's interval")
    if cert.get("caveat"):
        parts.append(str(cert["caveat"]))
    return (": " + "; ".join(parts)) if parts else ""


def _rate(doc: dict[str, Any], at: str, figure: Figure) -> Markup:
    return Markup("{} (95 % {}–{}; {} of {})").format(
        figure(doc, f"{at}.rate"),
        figure(doc, f"{at}.interval.0"),
        figure(doc, f"{at}.interval.1"),
        figure(doc, f"{at}.successes", "count"),
        figure(doc, f"{at}.attempts", "count"),
    )


def attack_section(doc: dict[str, Any], figure: Figure) -> dict[str, Any] | None:
    """The section ``Attacked``: (what, value) rows of report.json's ``attack`` and its notes."""
    attack = doc.get("attack")
    if not isinstance(attack, dict):
        return None
    if "skipped" in attack:
        return {"rows": [("attack", f"not run: {attack['skipped']}")], "notes": [], "frame": None}
    rows: list[tuple[str, Any]] = [
        (
            "released rows / attacked / frame records",
            Markup("{} / {} / {}").format(
                figure(doc, "attack.records.release", "count"),
                figure(doc, "attack.records.attacked", "count"),
                figure(doc, "attack.records.frame", "count"),
            ),
        ),
        ("exact matching: correct-match rate", _rate(doc, "attack.exact_matching.correct", figure)),
        (
            "exact matching: expected rate (B when the frame is the population)",
            figure(doc, "attack.exact_matching.expected_rate"),
        ),
    ]
    cert = (doc.get("certificate") or {}).get("attack") or {}
    if cert.get("verdict"):
        rows.append(("against B", str(cert["verdict"])))
    link = attack.get("linkage") or {}
    if isinstance(link.get("correct"), dict):
        rows.append(("distance linkage: correct-match rate", _rate(doc, "attack.linkage.correct", figure)))
        rows.append(("distance linkage: method", str(link.get("method", ""))))
    elif link.get("skipped"):
        rows.append(("distance linkage", f"not run: {link['skipped']}"))
    residual = attack.get("residual_risks") or {}
    if residual.get("skipped"):
        rows.append(("residual risks", f"not run: {residual['skipped']}"))
    for name, label in _RESIDUAL.items():
        res = residual.get(name)
        at = f"attack.residual_risks.{name}"
        if isinstance(res, dict) and "risk" in res:
            rows.append(
                (
                    f"{label}: residual risk",
                    Markup("{} (95 % {}–{}); attack {}, control {}, baseline {}").format(
                        figure(doc, f"{at}.risk"),
                        figure(doc, f"{at}.risk_interval.0"),
                        figure(doc, f"{at}.risk_interval.1"),
                        figure(doc, f"{at}.attack.rate"),
                        figure(doc, f"{at}.control.rate"),
                        figure(doc, f"{at}.baseline.rate"),
                    ),
                )
            )
        elif isinstance(res, str):
            rows.append((f"{label}: residual risk", f"not run: {res}"))
    return {"rows": rows, "notes": [str(n) for n in attack.get("notes", [])], "frame": attack.get("frame")}
