"""The Overview is a thin user of ``tpsviz.evaluate``: its leaderboard, details and verdicts are the
Evaluation's, cell for cell, for the same log and settings (issue 35, point 4), also after α moves
(the dashboard's parts are cached one by one; the CLI's Evaluation computes them at once)."""

import numpy as np
import pandas as pd
import pytest

import tpsviz
from apptest_helpers import DEMO, texts
from pages._ui.text import md
from tpsviz.core.inference import DEFAULT_SEED
from tpsviz.evaluation import tables as T
from tpsviz.report.figures import display_name

#: the details' metric CIs: the dashboard bootstraps the metrics, the CLI's Evaluation gives points
METRIC_CIS = ["AUROC 95% CI", "AUPRC 95% CI", "T-ECE 95% CI"]


def _evaluate(**settings):
    return tpsviz.evaluate(DEMO / "tau2-like.csv", n_boot=2000, seed=DEFAULT_SEED, **settings)


def _check(at, ev):
    at.session_state["ov_details"] = True  # "All columns" is drawn only when open
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    board, details = at.dataframe[0].value, at.dataframe[1].value
    want = T.leaderboard_table(ev, display_name)
    pd.testing.assert_frame_equal(board.reset_index(drop=True), want, check_dtype=False)
    got = details.drop(columns=METRIC_CIS)
    pd.testing.assert_frame_equal(got.reset_index(drop=True),
                                  T.leaderboard_details(ev, display_name).drop(columns=METRIC_CIS), check_dtype=False)
    assert list(board["predictor"]) == [display_name(n) for n in ev.order]
    t = texts(at)
    for r in T.verdict_rows(ev):  # every verdict, word for word
        assert f"-badge[{r['label']}] **{md(display_name(r['name']))}** — {md(r['reason'])}" in t
    assert f"F ≡ {ev.reference_rate:.3f}" in {m.label: m.value for m in at.metric}["Constant forecast (base rate)"]


def test_overview_shows_what_tpsviz_evaluate_returns(app):
    ev = _evaluate()
    assert ev.settings.censoring == "simple" and ev.settings.n_boot == 2000
    _check(app, ev)
    # the figures are an independent check of the cells: the TPS column is the summary's mean
    tps = [float(v) for v in app.dataframe[0].value["TPS"]]
    np.testing.assert_allclose(tps, ev.summary.loc[ev.order, "tps_mean"], atol=6e-5)


@pytest.mark.parametrize("alpha", [1.0])
def test_after_alpha_moves_the_overview_is_still_the_evaluation(app, alpha):
    app.slider(key="a").set_value(alpha).run()
    assert not app.exception
    _check(app, _evaluate(alpha=alpha, beta=0.0))


def test_a_large_log_ends_with_the_evaluation_too(monkeypatch):
    """Points first (an Evaluation without the bootstrap), then the CIs: the page ends with the
    same cells as tpsviz.evaluate's, and nothing of the points is left on it."""
    from apptest_helpers import fresh
    from pages._ui import loading as L

    monkeypatch.setattr(L, "LARGE_ROWS", 1000)  # the demo counts as large
    at = fresh()
    ev = _evaluate()
    _check(at, ev)
    assert "(large log)" not in texts(at) and "mean ± 1.96 SE for now" not in texts(at)
    assert ev.clusters.clustered  # (the demo's runs repeat its tasks: the CI resamples tasks, docs/theory.md §6.1)
    assert "95% bootstrap CI over tasks</title>" in _leaderboard_picture(at)  # one picture: the points' was replaced


def test_every_pair_is_drawn_on_request_with_the_cores_numbers(app):
    """The Δ/SE matrix of every pair is a table in an expander drawn only when open: each cell is
    compare.z_matrix's entry (row − column), the diagonal empty, antisymmetric."""
    from tpsviz.diagnostics.compare import z_matrix

    n = len(app.dataframe)
    app.session_state["ov_pairs"] = True
    app.run()
    assert not app.exception and len(app.dataframe) == n + 1
    shown = next(d.value for d in app.dataframe if "verbal" in d.value.columns)
    data = tpsviz.load(DEMO / "tau2-like.csv")
    z = z_matrix(data, tpsviz.ScoreSettings(censoring="simple", n_boot=0))
    assert list(shown.columns) == [display_name(c) for c in z.columns]
    for i, row in enumerate(z.index):
        for j, col in enumerate(z.columns):
            cell = shown.iloc[i, j]
            assert cell == ("" if i == j else f"{z.loc[row, col]:+.1f}"), (row, col, cell)
    assert shown.iloc[0, 1] == f"{-float(shown.iloc[1, 0]):+.1f}"


def _comparison_section(at) -> list[str]:
    """The main area's elements from the comparison's heading to the "Every pair" expander, flattened
    (containers opened), as type: first words."""
    out = []

    def walk(node):
        for child in (node.children.values() if isinstance(node.children, dict) else node.children):
            kind = getattr(child, "type", type(child).__name__)
            text = next((v for v in (getattr(child, "label", None), getattr(child, "value", None))
                         if isinstance(v, str)), "")
            if kind in ("flex_container", "vertical", "container"):
                walk(child)
            else:
                out.append(f"{kind}: {' '.join(text.split()[:3])}")

    walk(at.main)
    start = next(i for i, x in enumerate(out) if x.startswith("subheader: Paired comparison"))
    end = next(i for i, x in enumerate(out) if x.startswith("expander: Every pair"))
    return out[start:end + 1]


def test_the_comparison_is_drawn_in_place_and_in_the_order_a_large_log_ends_with(monkeypatch):
    """A log that is not large draws the paired comparison once, in place (no placeholder: one element
    less for the browser after each change of α); a large log fills placeholders, TPS first and the
    metrics' bootstrap last. Both end with the same elements in the same order."""
    from apptest_helpers import fresh
    from pages._ui import loading as L

    small = _comparison_section(fresh())
    monkeypatch.setattr(L, "LARGE_ROWS", 1000)  # the demo counts as large
    big = _comparison_section(fresh())
    assert small == big
    kinds = [x.split(":")[0] for x in small]
    assert kinds[:4] == ["subheader", "selectbox", "dataframe", "caption"], small
    assert small[4].startswith("markdown: #### :material/lightbulb: Where"), small  # heading and list: one element
    assert kinds[5:] == ["expander"], small  # its list in the same element (a markdown per line before)


def _leaderboard_picture(at) -> str:
    """The SVG document of the Overview's leaderboard picture (its element's data URL)."""
    import base64

    found = []

    def walk(node):
        for child in (node.children.values() if isinstance(node.children, dict) else node.children):
            if getattr(child, "type", "") == "image":
                found.append(child.proto.imgs[0].url)
            elif hasattr(child, "children"):
                walk(child)

    walk(at.main)
    assert len(found) == 1, found
    head, body = found[0].split(",", 1)
    assert head == "data:image/svg+xml;base64"
    return base64.b64decode(body).decode()


def test_the_leaderboard_is_a_picture_of_the_evaluation_not_a_chart_redrawn_on_each_nudge(app):
    """Issue 35, point 5: a plotly chart on the Overview was redrawn in full by the browser after every
    change of α (about 0.1 s of a nudge, docs/deployment.md). The picture shows the Evaluation's rows,
    best first, and its title and axis follow the settings."""
    import xml.etree.ElementTree as ET

    ns = "{http://www.w3.org/2000/svg}"
    for alpha in (None, 1.0):
        if alpha is not None:
            app.slider(key="a").set_value(alpha).run()
        assert not app.exception
        assert not app.main.get("plotly_chart")
        ev = _evaluate(**({} if alpha is None else {"alpha": alpha, "beta": 0.0}))
        root = ET.fromstring(_leaderboard_picture(app))
        labels = [t.text for t in root.iter(f"{ns}text") if t.get("text-anchor") == "end"]
        assert labels == [display_name(n) for n in ev.order]
        # (the demo's runs repeat its tasks: the CI resamples tasks)
        assert root.find(f"{ns}title").text == "Mean TPS with 95% bootstrap CI" + (
            " over tasks" if ev.clusters.clustered else "")
        assert ("nats" in ET.tostring(root, encoding="unicode")) == (alpha is None)
