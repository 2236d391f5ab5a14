"""One analysis, cached once (pages/_ui/results.py): a setting recomputes only what depends on it.

The core functions are counted while the real app reruns (AppTest): moving α must not recompute
what does not depend on it (AUROC/T-ECE, verdict tests, reliability diagrams), and deselecting a
predictor must recompute nothing at all (results are cached per predictor and combined).
"""

from collections import Counter

import pytest
from streamlit.testing.v1 import AppTest

import tpsviz
from apptest_helpers import APP
from pages._ui.results import SETTINGS, Analysis
from tpsviz import ScoreSettings
from tpsviz.diagnostics import decomposition, leaderboard as diagnostics, reliability, verdict
from tpsviz.core import tps


@pytest.fixture
def calls(monkeypatch):
    """Counts of the core calls behind the pages."""
    seen = Counter()

    def counted(module, name):
        real = getattr(module, name)

        def wrapper(*args, **kwargs):
            seen[name] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapper)

    counted(tpsviz, "compute_tps")
    counted(tps, "compute_tps")
    counted(diagnostics, "metric_table")
    counted(diagnostics, "skill_table")
    counted(verdict, "verdict_statistics")
    counted(reliability, "reliability_panels")
    counted(decomposition, "decompose_scope")
    return seen


def _run(at):
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def test_alpha_recomputes_scores_only(calls):
    at = AppTest.from_file(APP, default_timeout=180)
    _run(at)
    assert calls["compute_tps"] and calls["metric_table"] and calls["verdict_statistics"]
    calls.clear()
    at.slider(key="a").set_value(0.5)
    _run(at)
    assert calls["compute_tps"] > 0  # the score moved
    assert calls["metric_table"] == 0 and calls["verdict_statistics"] == 0  # they do not depend on α
    at.switch_page("pages/views/reliability.py")
    _run(at)
    calls.clear()
    at.slider(key="a").set_value(1.0)
    _run(at)
    assert calls["reliability_panels"] == 0  # no α in a reliability diagram
    assert calls["decompose_scope"] == 1  # the CORP decomposition decomposes S_{α,β}


def test_deselecting_a_predictor_recomputes_nothing(calls):
    at = AppTest.from_file(APP, default_timeout=180)
    _run(at)
    names = list(at.multiselect(key="pred").value)
    assert len(names) >= 3
    calls.clear()
    at.multiselect(key="pred").unselect(names[1])
    _run(at)
    assert sum(calls.values()) == 0, dict(calls)
    calls.clear()
    at.multiselect(key="pred").select(names[1])  # back: every predictor is still cached
    _run(at)
    assert sum(calls.values()) == 0, dict(calls)


def test_with_references_a_censoring_change_refits_only_the_references(monkeypatch):
    """The references are refitted under a new censoring mode; the log's own predictors' AUROC/T-ECE
    (which do not depend on it) are not computed again."""
    scored = []
    real = diagnostics.metric_table

    def recorded(data, settings=None, predictors=None, **kw):
        scored.append(tuple(predictors or ()))
        return real(data, settings, predictors, **kw)

    monkeypatch.setattr(diagnostics, "metric_table", recorded)
    at = AppTest.from_file(APP, default_timeout=300)
    _run(at)
    at.toggle(key="refs").set_value(True)
    _run(at)
    names = [n for n in at.multiselect(key="pred").value]
    assert any(n.startswith("ref:") for n in names) and any(not n.startswith("ref:") for n in names)
    scored.clear()
    modes = [m for m in at.selectbox(key="cens").options if m != at.selectbox(key="cens").value]
    at.selectbox(key="cens").set_value(modes[0])
    _run(at)
    again = {n for call in scored for n in call}
    assert again and all(n.startswith("ref:") for n in again), again


def test_analysis_key_keeps_only_what_a_result_depends_on():
    a = Analysis(data="demo:x", predictors=("p",), qz=("constant", 0.3),
                 settings=ScoreSettings(alpha=0.5, beta=1.0, censoring="exact", eps=1e-3, n_boot=200))
    b = Analysis(data="demo:x", predictors=("p",), qz=("constant", 0.7),
                 settings=ScoreSettings(alpha=2.0, beta=0.0, censoring="exact", eps=1e-3, n_boot=200))
    assert a.key(("eps", "n_boot")) == b.key(("eps", "n_boot"))  # α, β and q_Z do not count
    assert a.key(SETTINGS) != b.key(SETTINGS)
    assert a.key(("censoring",)).qz == ("constant", 0.3)  # exact mode: q_Z counts
    simple = Analysis(data="demo:x", qz=("constant", 0.3), settings=ScoreSettings(censoring="simple"))
    assert simple.key(SETTINGS).qz == ()  # q_Z plays no part in simple mode
    assert simple.key(SETTINGS + ("qz",)).qz == ("constant", 0.3)


def _same(a, b) -> None:
    """Two results are the same: frames equal to the last bit, dicts and TPSResults part by part."""
    import pandas as pd

    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            assert repr(a[k]) == repr(b[k])
    else:
        assert a.settings == b.settings and list(a._runs) == list(b._runs)
        _same(a.summary, b.summary)
        _same(a.per_trajectory, b.per_trajectory)


def test_a_joint_result_is_what_its_parts_combine_to():
    """The cache keeps a result computed for several predictors as parts of it (results.JointPart); a page
    asking for them all again gets the joint result itself, which must equal the parts cut out one by one and
    put together again, for every result cached per predictor."""
    from dataclasses import replace

    import pandas as pd

    from pages._ui.results import JointPart, assemble
    from tpsviz.diagnostics.updating import excess_movement

    log = tpsviz.load("demo_data/webshop-like.csv")
    names = list(log.predictors)
    s = ScoreSettings(alpha=0.35, n_boot=200)
    points = tpsviz.compute_tps(log, replace(s, n_boot=0), names)
    frames = [diagnostics.skill_table(log, s, names, n_boot=200, result=points.with_intervals(200)),
              diagnostics.metric_table(log, s, names, n_bins=10, n_boot=200), excess_movement(log, names)]
    cases = [(points, tps.TPSResult.combine, lambda r, n: r.only([n])),
             (points.with_intervals(200), tps.TPSResult.combine, lambda r, n: r.only([n])),
             (verdict.statistics_for(log, replace(s, n_boot=0), names), lambda ps: {k: v for p in ps for k, v in p.items()},
              lambda d, n: {n: d[n]})]
    cases += [(f, pd.concat, lambda f, n: f.loc[[n]]) for f in frames]
    for joint, combine, split in cases:
        parts = [JointPart(joint, n, tuple(names), split, 1) for n in names]
        assert assemble(parts, combine, split) is joint
        _same(joint, combine([split(joint, n) for n in names]))
        # a subset, or another order: cut out and combined as before
        _same(assemble(parts[:2][::-1], combine, split), combine([split(joint, n) for n in names[:2][::-1]]))


def test_a_part_cut_out_of_a_joint_result_is_counted_in_the_cache():
    """A page asking for one predictor of a jointly computed result gets a copy cut out of it and kept
    with the part (results.JointPart); the cache's byte count grows by that copy's size, which it did
    not before (the part counted only its share of the joint result)."""
    from dataclasses import replace

    from pages._ui import memo as M
    from pages._ui import results as R
    from pages._ui.loading import result_key
    from pages._ui.state import demo_source

    src = demo_source("webshop-like")
    a = Analysis(data=result_key(src), predictors=("verbal", "noisy", "truthful"), settings=ScoreSettings(n_boot=0))
    M.clear_all()
    joint = R.tps_points(a=a, src=src)
    before = M.stats()["bytes"]
    one = R.tps_points(a=replace(a, predictors=("noisy",)), src=src)
    assert one is not joint and list(one.summary.index) == ["noisy"]
    grown = M.stats()["bytes"] - before
    assert grown == M.approx_bytes(one) > 0
    R.tps_points(a=replace(a, predictors=("noisy",)), src=src)  # cut once: counted once
    assert M.stats()["bytes"] - before == grown
    M.clear_all()
