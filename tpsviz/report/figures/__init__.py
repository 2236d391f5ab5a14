"""Plotly figure builders for the dashboard and the HTML report (docs/architecture.md).

Compute and plot are separate: every ``*_figure`` function takes data frames or dicts that
the core returns (or small aggregates made by the ``prepare_*`` helpers) and returns a
``plotly.graph_objects.Figure``. Nothing here imports streamlit.

The builders live in modules by what they show; this package's namespace gathers their public
names, so that a page draws any figure through one name (``from tpsviz.report import figures as F``,
then ``F.leaderboard_figure(...)``):

- :mod:`~tpsviz.report.figures.style`: the palette, predictor names, axis labels and the common
  layout every figure uses (the conventions are stated there);
- :mod:`~tpsviz.report.figures.scoring`: the scoring rule (ω(c), score curves, schedules, Murphy diagram);
- :mod:`~tpsviz.report.figures.comparison`: leaderboard, paired Δ/SE matrix, demonstration bars;
- :mod:`~tpsviz.report.figures.steps`: per-step contributions and one run's forecasts;
- :mod:`~tpsviz.report.figures.censoring`: run lengths, censoring treatments, q_Z;
- :mod:`~tpsviz.report.figures.reliability`: reliability diagrams, histograms, CORP decomposition, drift;
- :mod:`~tpsviz.report.figures.monitoring`: windows over time, the CUSUM alarm, deferral;
- :mod:`~tpsviz.report.figures.outcomes`: multi-class reliability and PIT histograms.
"""

from tpsviz.report.figures.censoring import (
    artificial_check_figure, censoring_modes_figure, length_histogram_figure, mc_audit_figure, qz_band_figure)
from tpsviz.report.figures.comparison import delta_matrix_figure, demo_bars_figure, leaderboard_figure, leaderboard_svg
from tpsviz.report.figures.monitoring import cusum_figure, deferral_figure, monitor_figure
from tpsviz.report.figures.outcomes import ovr_reliability_figure, pit_figure
from tpsviz.report.figures.reliability import (
    band_steps, decomposition_by_step_figure, decomposition_figure, drift_figure, histogram_figure,
    reliability_figure)
from tpsviz.report.figures.scoring import (
    murphy_figure, omega_figure, omega_svg, schedule_figure, score_curves_figure)
from tpsviz.report.figures.steps import (
    contribution_heatmap_figure, prepare_heatmap, prepare_step_means, step_means_figure, trajectory_figure)
from tpsviz.report.figures.style import (
    BASE_RATE_LINE, PALETTE, REFERENCE_COLOR, REFERENCE_NAMES, TRUE_PROBABILITY, default_baseline, display_name, empty_figure,
    integer_ticks,
    is_reference, plot_label, predictor_colors, score_label, use_template_by_default, with_caption)

__all__ = [
    # style
    "PALETTE", "REFERENCE_COLOR", "REFERENCE_NAMES", "TRUE_PROBABILITY", "BASE_RATE_LINE", "is_reference", "default_baseline",
    "predictor_colors",
    "display_name", "plot_label", "score_label", "empty_figure", "with_caption", "integer_ticks",
    "use_template_by_default",
    # scoring
    "omega_figure", "omega_svg", "score_curves_figure", "schedule_figure", "murphy_figure",
    # comparison
    "leaderboard_figure", "leaderboard_svg", "delta_matrix_figure", "demo_bars_figure",
    # steps
    "prepare_heatmap", "contribution_heatmap_figure", "prepare_step_means", "step_means_figure",
    "trajectory_figure",
    # censoring
    "length_histogram_figure", "censoring_modes_figure", "qz_band_figure", "artificial_check_figure",
    "mc_audit_figure",
    # reliability
    "band_steps", "reliability_figure", "histogram_figure", "decomposition_figure",
    "decomposition_by_step_figure", "drift_figure",
    # monitoring
    "monitor_figure", "cusum_figure", "deferral_figure",
    # outcomes
    "ovr_reliability_figure", "pit_figure",
]
