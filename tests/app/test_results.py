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
