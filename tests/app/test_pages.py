"""Every page on the demo data, and the interactions the issue asks for."""

import numpy as np
import pytest

from apptest_helpers import APP, DEMO, fresh, texts
from tests.wording_checks import assert_says

PAGES = ["pages/views/overview.py", "pages/views/reliability.py", "pages/views/steps.py", "pages/views/censoring.py", "pages/views/lab.py",
         "pages/views/recalibration.py", "pages/views/export.py"]


def _num(v: str) -> float:
    v = str(v).strip()
    return {"−∞": -np.inf, "+∞": np.inf, "—": np.nan}.get(v, None) if v in ("−∞", "+∞", "—") else float(v)


def _leaderboard(at):
    df = at.dataframe[0].value
    return df.set_index("predictor")["TPS"].map(_num)


def _webshop(qp=None):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({"demo": "webshop-like", **(qp or {})})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _all_cells(at) -> list[str]:
    out = []
    for d in at.dataframe:
        out += [str(v) for v in d.value.to_numpy().ravel()]
    return out


def test_starts_on_demo_with_nothing_to_click(app):
    labels = {m.label: m.value for m in app.metric}
    assert labels["Trajectories"] == "450"  # tau2-like is the landing (few censored runs)
    assert labels["Censored"] == "4 (0.9%)"  # one decimal below 1%, never "0%"
    lb = _leaderboard(app)
    assert "truthful = true probability (synthetic)" in lb.index and len(lb) == 6
    assert not app.error
    t = texts(app).replace("\\", "")
    # the settings in one line (issue 37): the score family with its α and β, the schedule in words
    score = app.session_state["_cfg"].score_settings()
    assert score.alpha == score.beta == 0 and score.schedule.name == "uniform"
    assert "log (α=" in assert_says(t, "every step weighs the same", score.alpha, score.beta)
    assert "**Weights**" not in t  # the details are drawn on request
    app.session_state["settings_details"] = True
    app.run()
    t = texts(app)
    assert "nats" in t and "strictly proper" in t


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders(app, page):
    app.switch_page(page).run()
    app.session_state["settings_details"] = True  # the settings' details, drawn on request
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    assert not app.error, [e.value for e in app.error]
    assert app.title[0].value
    # the settings banner (score, weights + verdict, censoring, ε, n) is on every page
    t = texts(app)
    assert "**Weights**" in t and "**Censoring**" in t and "**ε**" in t


def test_moving_alpha_beta_changes_the_numbers(app):
    before = _leaderboard(app)
    app.slider(key="a").set_value(1.0).run()
    app.slider(key="b").set_value(1.0).run()
    assert not app.exception
    after = _leaderboard(app)
    assert not np.allclose(before.to_numpy(), after.reindex(before.index).to_numpy())
    # (1, 1) is the Brier preset: the preset follows the sliders and the unit changes
    assert app.selectbox(key="preset").value == "brier"
    assert "half-Brier" in texts(app)


def test_preset_sets_alpha_beta(app):
    app.selectbox(key="preset").set_value("boosting").run()
    assert app.slider(key="a").value == -0.5 and app.slider(key="b").value == -0.5
    assert not app.exception


def test_an_exact_alpha_typed_moves_the_slider_and_an_old_entry_does_not(app, monkeypatch):
    """The entry beside each slider is keyed by the value it shows; a typed value moves the
    slider, while an entry the browser still shows from an earlier rerun (its value the slider's
    old one) changes nothing: that echo moved the slider back under fast key presses."""
    from pages._ui import sidebar

    app.number_input(key=f"a_in_{0.0!r}").set_value(1.5).run()
    assert app.slider(key="a").value == 1.5 and app.selectbox(key="preset").value == "custom"
    assert app.number_input(key=f"a_in_{1.5!r}").value == 1.5
    import streamlit as st

    state = {"a": 2.0, "a_in_0.0": 0.0}  # the slider moved on to 2.0; the old entry still says 0.0
    monkeypatch.setattr(st, "session_state", state)
    sidebar._on_ab_entry("a", "a_in_0.0", 0.0)
    assert state["a"] == 2.0
    state.update({"a_in_0.0": 0.7, "b": 0.0})  # typed into it: taken
    sidebar._on_ab_entry("a", "a_in_0.0", 0.0)
    assert state["a"] == 0.7 and state["preset"] == "custom"
    # a preset the browser still showed while the sliders moved is not applied
    state.update({"a": 0.25, "b": 0.0, "preset": "log", "_ab_shown": (0.2, 0.0)})
    sidebar._on_preset()
    assert state["a"] == 0.25 and state["preset"] == "custom"
    state.update({"a": 0.25, "b": 0.0, "preset": "brier", "_ab_shown": (0.25, 0.0)})  # chosen: applied
    sidebar._on_preset()
    assert (state["a"], state["b"]) == (1.0, 1.0)


def test_schedule_verdict_is_shown_next_to_it(app):
    app.selectbox(key="sched").set_value("per-length").run()
    assert "not proper" in texts(app)
    app.selectbox(key="sched").set_value("endpoint").run()
    assert "final forecast only" in texts(app)
    # one warning box on the schedule (the page's banner), not one more above the leaderboard
    boxes = [w.value for w in app.main.warning if "weight schedule endpoint" in w.value]
    assert len(boxes) == 1, boxes


def _current_mode_table(at):
    return next(d.value for d in at.dataframe if "censored runs scored" in d.value.columns)


def test_switching_censoring_mode_changes_censoring_page():
    app = _webshop()
    app.switch_page("pages/views/censoring.py").run()
    t_exact = texts(app)
    cur_exact = _current_mode_table(app).iloc[:, 1].map(_num).to_numpy()
    app.selectbox(key="cens").set_value("complete").run()
    assert not app.exception
    t_cc = texts(app)
    cur_cc = _current_mode_table(app).iloc[:, 1].map(_num).to_numpy()
    assert "complete-case" in t_cc and t_cc != t_exact
    assert not np.allclose(cur_exact, cur_cc)


def test_bad_upload_shows_error_and_app_stays_usable(app):
    app.radio(key="src").set_value("Upload").run()
    assert "No data loaded yet" in texts(app)
    app.file_uploader(key="upload").set_value(("broken.csv", b"trajectory_id,step\nt1,1\nt1,x\n", "text/csv")).run()
    assert not app.exception
    assert any("cannot be used" in e.value for e in app.error)
    problems = "\n".join(c.value for c in app.code)
    assert "outcome" in problems  # names the missing column
    # still usable: back to the demo
    app.radio(key="src").set_value("Demo").run()
    assert not app.error and not app.exception
    assert {m.label: m.value for m in app.metric}["Trajectories"] == "450"


def test_good_upload_is_scored(app):
    raw = (DEMO / "tau2-like.csv").read_bytes()
    app.radio(key="src").set_value("Upload").run()
    app.file_uploader(key="upload").set_value(("tau2-like.csv", raw, "text/csv")).run()
    assert not app.exception and not app.error
    assert {m.label: m.value for m in app.metric}["Trajectories"] == "450"


def test_log_text_is_not_rendered_as_markup(app):
    csv = ("trajectory_id,step,outcome,conf_a,conf_b,task\n" +
           "".join(f"<b>r{i}</b>,{s},{i % 2},{0.3 + 0.05 * s},{0.6},<script>x</script>\n"
                   for i in range(12) for s in (1, 2, 3))).encode()
    app.radio(key="src").set_value("Upload").run()
    app.file_uploader(key="upload").set_value(("evil.csv", csv, "text/csv")).run()
    assert not app.exception
    for page in PAGES:
        app.switch_page(page).run()
        assert not app.exception, (page, [e.value for e in app.exception])
        for m in app.markdown:
            assert "<script>" not in m.value and "<b>r" not in m.value


def test_url_reproduces_settings():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({"a": "1.0", "b": "2.0", "cens": "simple", "demo": "webshop-like", "eps": "0"})
    at.run()
    assert not at.exception
    assert at.slider(key="a").value == 1.0 and at.slider(key="b").value == 2.0
    assert at.selectbox(key="cens").value == "simple"
    assert {m.label: m.value for m in at.metric}["Trajectories"] == "600"
    assert at.session_state["_cfg"].eps == 0.0  # a hand-written ?eps=0 is a number, not a label


def test_no_predictor_selected_is_a_designed_state(app):
    app.multiselect(key="pred").set_value([]).run()
    assert not app.exception
    assert "No predictor selected" in texts(app)


def test_filters_restrict_the_runs(app):
    from pages._ui.sidebar import filter_key

    app.multiselect(key=filter_key("difficulty")).set_value(["easy"]).run()
    assert not app.exception
    n = int({m.label: m.value for m in app.metric}["Trajectories"].replace(",", ""))
    assert 0 < n < 450


def _recalibrate_verbal(at):
    """Open the Recalibration page and add verbal@platt."""
    at.switch_page("pages/views/recalibration.py").run()
    at.selectbox(key="rc_src").set_value("verbal")
    at.radio(key="rc_method").set_value("platt")
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]


def test_recalibration_adds_a_predictor_everywhere(app):
    _recalibrate_verbal(app)
    assert "verbal@platt" in app.session_state["pred"]
    assert "verbal@platt" in texts(app)
    app.switch_page("pages/views/overview.py").run()
    assert "verbal@platt" in _leaderboard(app).index


def test_a_second_recalibration_sets_the_view_without_a_streamlit_warning(caplog):
    """Adding a second recalibrated predictor logged "The widget with key "recal_view" was created
    with a default value but also had its value set via the Session State API" (helper-23)."""
    import logging

    at = fresh({"demo": "tau2-like"})
    with caplog.at_level(logging.WARNING):
        _recalibrate_verbal(at)
        at.selectbox(key="rc_src").set_value("verbal")
        at.radio(key="rc_method").set_value("isotonic")
        at.button[0].click().run()
        at.selectbox(key="recal_view").set_value("verbal@platt").run()
    assert not at.exception
    assert at.selectbox(key="recal_view").value == "verbal@platt"
    assert "default value but also had its value set" not in caplog.text


def test_steps_drill_down_censored_run(app):
    app.switch_page("pages/views/steps.py").run()
    app.radio(key="steps_group").set_value("censored").run()
    assert not app.exception
    assert "q_Z" in texts(app)


def test_export_builds_report(app):
    app.switch_page("pages/views/export.py").run()
    app.button(key="build_report").click().run()
    assert not app.exception
    rep = app.session_state["_report"][1]
    assert rep.startswith(b"<!DOCTYPE html>") and b"plotly" in rep


def test_export_renders_a_png_of_a_figure(app):
    """PNG export through kaleido (it drives the Debian chromium that `make test` installs)."""
    app.switch_page("pages/views/export.py").run()
    app.button(key="render_png").click().run()
    assert not app.exception, [e.value for e in app.exception]
    png = app.session_state["_png"][1]
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


# ------------------------------------------------------------------ first-user review, P1 items
@pytest.mark.parametrize("page", PAGES)
def test_column_schedule_without_weights_is_an_in_page_message(page):
    at = _webshop({"sched": "column"})
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value  # the page is drawn, not replaced by an error box
    t = texts(at)
    assert "no numeric `weight` column" in t  # sidebar hint
    if page.endswith(("overview.py", "steps.py", "censoring.py", "export.py")):
        msg = "\n".join(e.value for e in at.error)
        assert "weight" in msg and "Change the setting" in msg


def test_eps_zero_shows_minus_infinity_never_none():
    at = _webshop({"eps": "0"})
    cells = _all_cells(at)
    assert "None" not in cells and "nan" not in cells
    lb = at.dataframe[0].value.set_index("predictor")
    assert lb.loc["budget_aware", "TPS"] == "−∞" and lb.loc["budget_aware", "skill"] == "−∞"
    assert lb.loc["budget_aware", "95% CI"] == "—"
    assert lb.loc["budget_aware", "clipped"] > 0  # with ε = 0: the forecasts exactly 0 or 1
    warn = "\n".join(w.value for w in at.warning)
    assert "exactly 0 or 1" in warn and "Raise ε" in warn
    for page in PAGES[1:]:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.value for e in at.exception])
        assert "None" not in _all_cells(at), page


@pytest.mark.parametrize("mode", ["complete", "simple", "exact", "upper"])
def test_reference_rate_follows_censoring_mode(mode):
    import tpsviz
    from tpsviz.diagnostics.leaderboard import reference_rate, skill_table

    at = _webshop({"cens": mode})
    data = tpsviz.load(DEMO / "webshop-like.csv")
    settings = tpsviz.ScoreSettings(censoring=mode)
    rate, rule = reference_rate(data, settings)
    assert {m.label: m.value for m in at.metric}["Constant forecast (base rate)"] == f"F ≡ {rate:.3f}"
    assert rule in texts(at)  # the caption says which rate and why
    # the skill shown is the core's (the CLI prints the same number)
    sk = skill_table(data, settings, n_boot=0)
    shown = at.dataframe[0].value.set_index("predictor")["skill"].str.split(" ").str[0].map(_num)
    assert shown["verbal"] == pytest.approx(sk.loc["verbal", "skill"], abs=6e-4)


def test_reference_rates_differ_between_modes():
    rates = {m: {x.label: x.value for x in _webshop({"cens": m}).metric}["Constant forecast (base rate)"]
             for m in ("complete", "simple", "upper")}
    assert len(set(rates.values())) == 3


def test_leaderboard_numbers_are_the_cores():
    import tpsviz

    at = _webshop()
    data = tpsviz.load(DEMO / "webshop-like.csv")
    res = tpsviz.compute_tps(data, tpsviz.ScoreSettings(censoring="exact", n_boot=0))
    lb = _leaderboard(at)
    for name in ("verbal", "noisy"):
        assert lb[name] == pytest.approx(res.summary.loc[name, "tps_mean"], abs=6e-5)


def test_censored_data_reliability_explains_selection():
    at = _webshop()
    at.switch_page("pages/views/reliability.py").run()
    assert "selected population" in texts(at)
    at.toggle(key="rel_pseudo").set_value(True).run()
    assert "selected population" not in texts(at)


def test_banner_label_follows_qz_source():
    at = _webshop({"cens": "exact", "qzs": "one value", "qz": "0.7"})
    assert "of a success" in assert_says(texts(at).replace("\\", ""), "cut off by the step budget", 0.7)
    at.session_state["settings_details"] = True
    at.run()
    t = texts(at)
    assert "q_Z =" in assert_says(t, "for every censored run", 0.7)
    assert "q_Z from the log" not in t
    at.switch_page("pages/views/censoring.py").run()
    assert "exact (q_Z =" in assert_says(texts(at), "Under the current mode", 0.7)


def test_banner_n_under_complete_case():
    import pandas as pd

    runs = pd.read_csv(DEMO / "webshop-like.csv").groupby("trajectory_id")["censored"].first()
    censored, total = int(runs.sum()), len(runs)  # (271 of 600: the banner's numbers, counted from the file)
    at = _webshop({"cens": "complete"})
    assert "of" in assert_says(texts(at), "runs scored", total - censored, total)
    at.session_state["settings_details"] = True
    at.run()
    assert_says(texts(at), "censored left out", total - censored, censored, total)


def test_bootstrap_off_shows_se_interval():
    at = _webshop({"boot": "0"})
    lb = at.dataframe[0].value.set_index("predictor")
    assert lb.loc["verbal", "95% CI"].startswith("[")
    assert "± 1.96 SE" in texts(at)
    assert "None" not in _all_cells(at)


def test_lab_demo_two_gives_tps_difference_with_ci():
    at = _webshop()
    at.switch_page("pages/views/lab.py").run()
    assert not at.exception
    t = texts(at).replace("\\", "")  # markdown escapes
    assert "Paired Δ TPS (bin means" in t and "95% CI [" in t
    tables = [d.value for d in at.dataframe if "T-ECE (↓)" in d.value.columns]
    assert tables and "≈0" in tables[0]["T-ECE (↓)"].tolist()


def test_webshop_demo_rollouts_give_the_monte_carlo_audit(monkeypatch):
    """The demo's rollouts file is the app's own: read without data roots (a shared server has none
    for demo_data/, and the audit said "cannot open this path" before)."""
    monkeypatch.delenv("TPSVIZ_DATA_ROOTS", raising=False)
    at = _webshop()
    at.switch_page("pages/views/censoring.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "censored runs have rollouts" in texts(at)
    assert any("exact − simple" in " ".join(d.value.columns) and "of which MC noise (SE)" in d.value.columns
               for d in at.dataframe)


def test_censoring_on_a_large_log_ends_with_the_same_numbers(monkeypatch):
    """Issue 11: on a large log the Censoring page draws its treatments from point estimates first and
    replaces them with the bootstrap CIs at the end: the page it ends on is the small-log page."""
    from pages._ui import loading as L

    def tables(at):
        found = {}
        for d in at.dataframe:
            for name, column in (("cens_current", "censored runs scored"), ("cens_shift", "per step: simple − cc")):
                if column in d.value.columns:
                    assert name not in found, f"{name} is drawn twice"
                    found[name] = d.value
        assert len(found) == 2, list(found)
        return found

    small = _webshop()
    small.switch_page("pages/views/censoring.py").run()
    assert not small.exception
    monkeypatch.setattr(L, "LARGE_ROWS", 1000)  # the demo counts as large
    large = _webshop()
    large.switch_page("pages/views/censoring.py").run()
    assert not large.exception, [e.value for e in large.exception]
    assert "(large log)" not in texts(large) and "95% bootstrap CI" in texts(large)
    for k, v in tables(small).items():
        assert v.equals(tables(large)[k]), k
    assert all("[" in c for c in tables(large)["cens_shift"]["95% CI (simple − cc)"])


def test_recalibration_on_a_large_log_ends_with_the_same_numbers(monkeypatch):
    """Issue 11: the Recalibration page on a large log shows points first and ends as on a small log."""
    from pages._ui import loading as L

    def final(at):
        _recalibrate_verbal(at)
        tables = [d.value for d in at.dataframe if "AUROC CI" in d.value.columns]
        assert len(tables) == 1  # the points' table was replaced, not kept beside it
        delta = [m.value for m in at.markdown if "Recalibrated − original" in m.value]
        return tables[0], delta, texts(at)

    small = final(_webshop())
    monkeypatch.setattr(L, "LARGE_ROWS", 1000)  # the demo counts as large
    large = final(_webshop())
    assert small[0].equals(large[0]) and small[1] == large[1] and len(large[1]) == 1
    assert "(large log)" not in large[2]


def test_large_log_shows_points_first_then_full_metric_cis(tmp_path, monkeypatch):
    from pages._ui import loading as L

    monkeypatch.setattr(L, "LARGE_ROWS", 1000)  # the demo counts as large
    at = _webshop()
    assert not at.exception
    # the metric CIs, filled in last, use as many replicates as the TPS CI (the default 2,000)
    assert "metric CIs from 2000 replicates" in texts(at)
    assert "(large log)" not in texts(at)


def test_file_names_have_no_stray_underscores():
    from pages._ui.state import safe_filename

    assert safe_filename("tpsviz_tau2-like_Reliability (all steps, complete runs)") == \
        "tpsviz_tau2-like_Reliability_all_steps_complete_runs"
    assert safe_filename("../etc/passwd") == "etc_passwd" and safe_filename("(((") == "tpsviz"


def test_a_recalibration_that_lowers_auroc_is_told_to_try_the_other_map():
    """verbal@isotonic on tau2-like clearly lowers AUROC (helper-23: Δ/SE −2.6). The warning's advice
    read the spec's method from a name the page had rebound to a table row (KeyError: 'method')."""
    at = fresh({"demo": "tau2-like"})
    at.switch_page("pages/views/recalibration.py").run()
    at.selectbox(key="rc_src").set_value("verbal")
    at.radio(key="rc_method").set_value("isotonic")
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Something went wrong" not in texts(at)
    warn = " ".join(w.value for w in at.warning)
    assert "Recalibration clearly lowered AUROC" in warn and "Platt recalibration" in warn
