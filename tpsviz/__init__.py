"""tpsviz: is my agent's confidence honest?

The computation core of the tpsviz dashboard: trajectory logs, the beta family of proper
scores, the Trajectory Proper Score (TPS) with weight schedules and censoring, a synthetic
agent with known truth, and diagnostics. It never imports streamlit; scikit-learn is only
imported inside the functions that fit models.

Scores are rewards: higher is better, 0 is perfect (nats for the log score).

:func:`evaluate` gives every report of ``python -m tpsviz score`` as one :class:`Evaluation`
(docs/api.md); a predictor's verdict is a :class:`PredictorVerdict`, a weight schedule's
propriety label a :class:`ScheduleVerdict`.
"""

from tpsviz.diagnostics.calibrate import add_all_recalibrated, add_recalibrated
from tpsviz.diagnostics.decomposition import decompose, decompose_by_step
from tpsviz.diagnostics.combine import combine_logs
from tpsviz.diagnostics.groups import group_difference, group_table
from tpsviz.core.inference import Estimate, mean_estimate, paired_difference
from tpsviz.core.errors import LogFormatError
from tpsviz.core.data import TrajectoryData
from tpsviz.io.tables.longform import from_frame
from tpsviz.io.loading import load
from tpsviz.core.schedules import Schedule, ScheduleVerdict, parse_schedule
from tpsviz.core.scores import (
    PRESETS, ScoreFamily, beta_score, beta_score_pair, clip_forecasts, elementary_loss,
    expected_score, omega)
from tpsviz.core.artificial_censoring import artificial_censoring_check
from tpsviz.core.censoring import CENSORING_MODES, default_censoring
from tpsviz.core.tps import ScoreSettings, TPSResult, compute_tps
from tpsviz.diagnostics.verdict import Verdict as PredictorVerdict
from tpsviz.evaluation import Evaluation, ReadSettings, Settings, evaluate

__version__ = "0.1.0"

__all__ = [
    "evaluate", "Evaluation", "Settings", "ReadSettings", "PredictorVerdict",
    "add_all_recalibrated", "add_recalibrated",
    "decompose", "decompose_by_step",
    "combine_logs", "group_difference", "group_table",
    "Estimate", "mean_estimate", "paired_difference",
    "LogFormatError", "TrajectoryData", "from_frame", "load",
    "Schedule", "ScheduleVerdict", "parse_schedule",
    "PRESETS", "ScoreFamily", "beta_score", "beta_score_pair", "clip_forecasts",
    "elementary_loss", "expected_score", "omega",
    "CENSORING_MODES", "ScoreSettings", "TPSResult", "artificial_censoring_check",
    "compute_tps", "default_censoring",
]
