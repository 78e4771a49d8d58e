"""The residual-risk attacks (attack/residual.py) against Anonymeter's own results on the same inputs.

Anonymeter (Giomi et al., PoPETs 2023; PyPI ``anonymeter``, installed by the Makefile without its
dependencies, whose pins are older than the project's numpy) is the outside oracle. The inputs are
continuous (uniform columns, a release perturbed by noise): no two distances tie, so the nearest
neighbours of both implementations are the same records, and the rates must agree; singling out
draws random queries in both, so its rates are compared within their Wilson intervals.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from safeshare.attack import residual
from safeshare.attack.linkage import other_column
from safeshare.attack.stats import Rate, Residual, wilson

anonymeter = pytest.importorskip(
    "anonymeter.evaluators", reason="anonymeter is installed by `make .venv/.installed-test`"
)


def _data(seed: int = 0, n: int = 1200) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)

    def draw(size: int) -> pd.DataFrame:
        x = rng.random((size, 4))
        secret = np.where(x[:, 0] + x[:, 1] + 0.3 * rng.random(size) > 1.15, "high", "low")
        return pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "c": x[:, 2], "d": x[:, 3], "s": secret})

    ori, control = draw(n), draw(n)
    syn = ori.copy()
    for c in "abcd":
        syn[c] = np.clip(syn[c] + rng.normal(0, 0.02, n), 0, 1)
    syn = syn.sample(frac=1.0, random_state=seed).reset_index(drop=True)  # a release is not in input order
    return ori, syn, control


def _side(ori: pd.DataFrame, syn: pd.DataFrame, control: pd.DataFrame) -> residual.Side:
    targets = pd.concat([ori, control], ignore_index=True)
    cols = tuple(other_column(c, syn[c].astype(str), targets[c].astype(str), None) for c in syn.columns)
    return residual.Side(cols, len(syn), len(targets))


def test_wilson_and_residual_equal_anonymeters_formulas() -> None:
    from anonymeter.stats.confidence import EvaluationResults, success_rate

    for k, n in [(0, 10), (3, 11), (500, 1000), (999, 1000)]:
        theirs = success_rate(n, k, 0.95)
        assert wilson(k, n) == pytest.approx((theirs.value, theirs.error), rel=1e-12)
    ours = Residual(Rate(300, 1000), Rate(120, 1000), Rate(10, 1000))
    theirs_r = EvaluationResults(n_attacks=1000, n_success=300, n_baseline=10, n_control=120).risk()
    assert ours.risk[0] == pytest.approx(theirs_r.value, rel=1e-12)
    assert ours.risk[1] == pytest.approx(theirs_r.ci, rel=1e-12)


def test_linkability_equals_anonymeters() -> None:
    from anonymeter.evaluators import LinkabilityEvaluator

    ori, syn, control = _data(1)
    aux = (["a", "b"], ["c", "d"])
    theirs = LinkabilityEvaluator(
        ori=ori, syn=syn, control=control, aux_cols=aux, n_attacks=len(ori)
    ).evaluate(n_jobs=1)
    res = theirs.results()
    side = _side(ori, syn, control)
    names = list(syn.columns)
    split = ([names.index(c) for c in aux[0]], [names.index(c) for c in aux[1]])
    ours = residual.linkability(
        side, np.arange(len(ori)), np.arange(len(ori), 2 * len(ori)), split, np.random.default_rng(0)
    )
    assert ours.attack.successes == res.n_success
    assert ours.control.successes == res.n_control
    assert ours.attack.successes > 20 * max(ours.control.successes, 1)  # the test has power
    assert ours.risk[0] == pytest.approx(theirs.risk().value, abs=1e-12)


def test_inference_equals_anonymeters() -> None:
    from anonymeter.evaluators import InferenceEvaluator

    ori, syn, control = _data(2)
    theirs = InferenceEvaluator(
        ori=ori, syn=syn, control=control, aux_cols=["a", "b", "c", "d"], secret="s", n_attacks=len(ori)
    ).evaluate(n_jobs=1)
    res = theirs.results()
    side = _side(ori, syn, control)
    ours = residual.inference(
        side, np.arange(len(ori)), np.arange(len(ori), 2 * len(ori)), 4, np.random.default_rng(0)
    )
    assert ours.attack.successes == res.n_success
    assert ours.control.successes == res.n_control
    assert ours.risk[0] == pytest.approx(theirs.risk().value, abs=1e-12)


def test_singling_out_agrees_with_anonymeter_within_the_intervals() -> None:
    from anonymeter.evaluators import SinglingOutEvaluator

    ori, syn, control = _data(3, n=800)
    n = 300
    theirs = SinglingOutEvaluator(
        ori=ori[list("abcd")],
        syn=syn[list("abcd")],
        control=control[list("abcd")],
        n_attacks=n,
        n_cols=3,
        seed=5,
    ).evaluate(mode="multivariate")
    res = theirs.results()
    side = _side(ori[list("abcd")], syn[list("abcd")], control[list("abcd")])
    ours = residual.singling_out(
        side, np.arange(len(ori)), np.arange(len(ori), 2 * len(ori)), n, 3, np.random.default_rng(5)
    )
    assert ours.attack.attempts == n
    lo, hi = ours.attack.interval
    theirs_rate = res.attack_rate.value
    t_lo, t_hi = theirs_rate - res.attack_rate.error, theirs_rate + res.attack_rate.error
    assert t_lo <= ours.attack.center <= t_hi or lo <= theirs_rate <= hi
    assert ours.attack.successes > ours.baseline.successes  # better than random queries


def _rare_categories(seed: int, n: int = 1000) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Categorical columns with a long tail of rare values (Zipf-like), a release that is the
    people's records with 10 % of each column's values redrawn, and a control of other people."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, 401) ** 1.3
    weights /= weights.sum()

    def draw(size: int) -> pd.DataFrame:
        return pd.DataFrame({c: [f"{c}{v}" for v in rng.choice(400, size, p=weights)] for c in "abc"})

    ori, control = draw(n), draw(n)
    syn = ori.copy()
    for c in "abc":
        redraw = rng.random(n) < 0.1
        syn.loc[redraw, c] = draw(int(redraw.sum()))[c].to_numpy()
    return ori, syn.sample(frac=1.0, random_state=seed).reset_index(drop=True), control


def test_univariate_singling_out_agrees_with_anonymeter_within_the_intervals() -> None:
    """Anonymeter's univariate mode (a value one synthetic record alone has) against ours with one
    column per query: the attack rates within each other's Wilson intervals, and the attack far
    above the control (a value rare in the release is the released person's, not a stranger's)."""
    from anonymeter.evaluators import SinglingOutEvaluator

    ori, syn, control = _rare_categories(11)
    n = 200
    theirs = SinglingOutEvaluator(ori=ori, syn=syn, control=control, n_attacks=n, seed=11).evaluate(
        mode="univariate"
    )
    res = theirs.results()
    side = _side(ori, syn, control)
    ours = residual.singling_out(
        side, np.arange(len(ori)), np.arange(len(ori), 2 * len(ori)), n, 1, np.random.default_rng(11)
    )
    assert ours.attack.attempts >= 50  # the long tail gives queries enough for the intervals to bite
    lo, hi = ours.attack.interval
    theirs_rate = res.attack_rate.value
    t_lo, t_hi = theirs_rate - res.attack_rate.error, theirs_rate + res.attack_rate.error
    assert t_lo <= ours.attack.center <= t_hi or lo <= theirs_rate <= hi
    assert ours.attack.center > ours.control.center + 0.3
