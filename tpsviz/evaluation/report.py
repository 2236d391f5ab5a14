"""The offline HTML report of an :class:`~tpsviz.evaluation.record.Evaluation`: the sections the
dashboard's Export page writes for the same numbers (settings, verdicts, warnings, leaderboard,
reliability diagrams, mean contribution by step) and the excess movement of rational updating.

Figures are drawn by :mod:`tpsviz.report.figures`, imported when a report is built: plotly stays out
of ``import tpsviz``.
"""

from __future__ import annotations

import pandas as pd

from tpsviz.core import formatting as Fm
from tpsviz.core.tps import settings_words
from tpsviz.diagnostics.reliability import reliability_panels
from tpsviz.diagnostics.verdict import RULES
from tpsviz.evaluation.tables import interval_kind, intervals, report_table, verdict_table
from tpsviz.report.html import Section

__all__ = ["report_settings", "report_sections", "leaderboard_figure", "leaderboard_svg", "REPORT_PANELS"]

#: reliability diagrams of the report: at most this many predictors (as on the Export page)
REPORT_PANELS = 6


def report_settings(ev) -> dict:
    """The settings block at the top of the report (label → value).

    Parameters
    ----------
    ev : Evaluation

    Returns
    -------
    dict
    """
    d, s = ev.data, ev.settings
    w = settings_words(s, ev.censoring_words())
    return {
        "Data": f"{d.source} ({d.n_trajectories} runs, {d.n_steps} steps, {d.n_censored} censored)",
        "Score family": f"{w['score']}; units: {w['unit']}",
        "Weight schedule": w["schedule"],
        "Verdict of the schedule": f"{w['schedule_status']} — {w['schedule_reason']}",
        "Censoring": w["censoring"],
        "ε (clipping)": w["eps"],
        "Bootstrap": f"TPS: {w['bootstrap']}; usual metrics: point estimates",
        "Predictors": ", ".join(ev.summary.index),
    }


def report_sections(ev) -> list:
    """The report's sections (:class:`tpsviz.report.html.Section`), in the Export page's order.

    Parameters
    ----------
    ev : Evaluation

    Returns
    -------
    list of Section
    """
    from tpsviz.report import figures as F  # plotly: only when a report is built

    s, settings = ev.summary, ev.settings
    colors = {n: c for n, c in F.predictor_colors(list(ev.data.predictors)).items() if n in s.index}
    secs = [Section("Verdict: which predictor to trust", "First rule that holds: " + "; ".join(
        f"{label}: {rule}" for label, rule in RULES) + ".", table=verdict_table(ev, F.display_name))]
    if ev.warnings.all():
        secs.append(Section("Warnings", " ".join(ev.warnings.all())))
    secs.append(_leaderboard(ev, F))
    names = ev.order[:REPORT_PANELS]
    panels, _ = reliability_panels(ev.data, names, "all", None, False, n_bins=10, n_boot=200, seed=settings.seed)
    if panels:
        secs.append(Section("Reliability (all steps, complete runs)", "", F.reliability_figure(
            panels, colors, "Reliability diagrams with CORP curves and consistency bands")))
    means = F.prepare_step_means(ev.result.step_contributions(list(s.index)))
    secs.append(Section("Mean contribution by step", "", F.step_means_figure(means, colors, settings.alpha,
                                                                             settings.beta)))
    mv = ev.excess_movement.loc[ev.order]
    moves = pd.DataFrame({"predictor": [F.display_name(n) for n in mv.index],
                          "excess movement": [Fm.num(v, "+.4f") for v in mv["value"]],
                          "± SE": [Fm.num(v) for v in mv["se"]], "z": [Fm.num(v, "+.1f") for v in mv["z"]],
                          "runs": mv["n_runs"].astype(int).to_numpy()})
    secs.append(Section("Rational updating", "Excess movement per run = Σ (F_t+1 − F_t)² − [F_1(1−F_1) − "
                        "F_end(1−F_end)]: 0 if truthful, > 0 over-reacts, < 0 under-reacts (docs/theory.md, "
                        "Rational updating).", table=moves))
    return secs


def leaderboard_figure(ev):
    """The leaderboard figure of an Evaluation: each predictor's mean TPS with its interval
    (:func:`tpsviz.evaluation.tables.intervals`, said in the title) and the reference's mean TPS
    (:attr:`~tpsviz.evaluation.record.Evaluation.reference_mean`), in the predictors' colours.

    Parameters
    ----------
    ev : Evaluation

    Returns
    -------
    plotly.graph_objects.Figure
    """
    from tpsviz.report import figures as F  # plotly: only when a figure is drawn

    return F.leaderboard_figure(*_leaderboard_args(ev, F))


def leaderboard_svg(ev, width: int = 720) -> str:
    """:func:`leaderboard_figure` as a static SVG picture
    (:func:`tpsviz.report.figures.comparison.leaderboard_svg`: what the dashboard's Overview shows).

    Parameters
    ----------
    ev : Evaluation
    width : int
        Width in pixels.

    Returns
    -------
    str
    """
    from tpsviz.report import figures as F

    return F.leaderboard_svg(*_leaderboard_args(ev, F), width=width)


def _leaderboard_args(ev, F) -> tuple:
    """The arguments both leaderboard pictures take, in order."""
    s, settings, iv = ev.summary, ev.settings, intervals(ev)
    colors = {n: c for n, c in F.predictor_colors(list(ev.data.predictors)).items() if n in s.index}
    boot = interval_kind(ev) == "bootstrap"
    return (s, colors, settings.alpha, settings.beta, ev.reference_mean, settings.level,
            {n: (iv.at[n, "low"], iv.at[n, "high"]) for n in s.index},
            ("bootstrap CI over tasks" if ev.clusters.clustered else "bootstrap CI") if boot
            else "± 1.96 SE (bootstrap off)")


def _leaderboard(ev, F) -> Section:
    """The leaderboard figure (TPS with its interval) and table."""
    settings = ev.settings
    boot = interval_kind(ev) == "bootstrap"
    unit = settings_words(settings)["unit"]
    rate = ev.reference_rate
    text = (f"TPS in {unit} per trajectory (higher is better, 0 is perfect), {settings.level:.0%} "
            f"{'bootstrap CI over ' + ev.clusters.bootstrap_words() if boot else 'interval ± 1.96 SE'}, "
            f"{ev.clusters.words()}; skill against the "
            f"constant forecast F ≡ {Fm.num(rate, '.3f')} ({ev.reference_rule or 'no base rate'}); usual metrics "
            "on complete runs, pooled over steps.")
    return Section("Leaderboard", text, leaderboard_figure(ev), report_table(ev, F.display_name))
