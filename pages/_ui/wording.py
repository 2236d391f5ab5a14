"""The core's messages in the dashboard's words: a setting a message names
(:mod:`tpsviz.core.wording`) is named by the widget that sets it, as the page shows it.

The labels of those widgets are defined here and drawn from here (``reading.py``, ``sidebar.py``),
so a message and the widget it points to cannot drift apart. Every place a page shows a core
error or note words it with :func:`say` (a :class:`~pages._ui.loading.LoadFailure` words its
problems when it is made), which also names a server path by its data root's name.
"""

from __future__ import annotations

from tpsviz.core.wording import Wording, word
from tpsviz.io.files import DataRoots

__all__ = ["READING", "UNCERTAINTY", "LABELS", "DASHBOARD", "say"]

#: the sidebar's expanders holding the reading options and the bootstrap
READING = "Reading options"
UNCERTAINTY = "Uncertainty"

#: widget labels, by the setting they set (drawn with these texts)
LABELS = {
    "conf": "Forecast fields of agent messages",
    "forecasts": "Forecasts table (optional)",
    "forecasts_path": "Forecasts table path (optional)",
    "success_threshold": "Success threshold",
    "scorer": "Scorer (Inspect AI)",
    "map": "Column mapping (tables)",
    "percent": "Predictors given in percent",
    "treat": "Termination reasons",
    "run_by": "Runs by attribute (traces)",
    "step_spans": "Step spans (traces)",
    "outcome": "Outcome score or attribute (traces)",
    "censor_when": "Censored when (traces)",
    "outcomes": "Outcomes table (traces)",
    "outcomes_path": "Outcomes table path (traces)",
    "eps": "ε (forecast clipping)",
    "n_boot": "Bootstrap replicates",
    "alpha": "α",
    "beta": "β",
    "score": "Preset",
    "censoring": "Censored runs",
    "q_z": "q_Z source (exact mode)",
    "rollouts": "Rollouts (optional)",
    "rollouts_path": "Rollouts path (optional)",
}


def _reading(name: str) -> str:
    return f'{READING} › "{LABELS[name]}"'


#: the dashboard's words for the settings the core's messages name; a value follows as "set to"
DASHBOARD = Wording(
    "dashboard",
    words={
        **{name: _reading(name) for name in ("conf", "forecasts", "success_threshold", "scorer", "map", "percent",
                                             "treat", "run_by", "step_spans", "outcome", "censor_when")},
        "outcomes": f'{READING} › "{LABELS["outcomes"]}" (or "{LABELS["outcomes_path"]}")',
        "eps": f'the sidebar\'s "{LABELS["eps"]}"',
        "alpha": f'the sidebar\'s "{LABELS["alpha"]}"',
        "beta": f'the sidebar\'s "{LABELS["beta"]}"',
        "n_boot": f'{UNCERTAINTY} › "{LABELS["n_boot"]}"',
        "out_of_core": "the section \"All runs (out of core)\" of a sampled dataset's pages",
        "in_memory": "the sample the pages read into memory",
        "distributed": "the command line's Dask engine",
        "recalibrate": 'the Recalibration page ("Add recalibrated predictor")',
        "multiclass": "the Other outcomes page",
        "continuous": "the Other outcomes page",
        "replay": "the command python -m tpsviz forecast {value} --model PROVIDER/MODEL --out FORECASTS.parquet",
        "model": "the forecast command's --model", "name": "the forecast command's --name",
        "steps": "the forecast command's --steps", "prices": "the forecast command's --prices",
        "score": f'the sidebar\'s "{LABELS["score"]}"',
        "censoring": f'the sidebar\'s "{LABELS["censoring"]}"',
        "q_z": f'the sidebar\'s "{LABELS["q_z"]}"',
        "rollouts": f'the sidebar\'s "{LABELS["rollouts"]}" (or "{LABELS["rollouts_path"]}")',
        "seed": "the bootstrap's seed (fixed in the dashboard; the command line's --seed)",
        "level": "the 95% level of the intervals (fixed in the dashboard; the command line's --level)",
        "cluster_by": ("the unit of the SEs (in the dashboard: the task where runs repeat tasks, else the run; "
                       "the command line's --cluster-by)"),
        "folds": "the folds of the Recalibration page's cross-fitting",
        "schedule": 'the sidebar\'s "Weight schedule w_t"',
        "interval": "the kind of bootstrap interval (studentized in the dashboard; the command line's --interval)",
        "rule": 'the Other outcomes page\'s "Score"',
        "censored_label": "the Other outcomes page's label of censored runs",
        "bins": 'the Other outcomes page\'s "Bins"',
        "engine": "the engine (memory in the pages; a sampled dataset's section \"All runs (out of core)\")",
        "verdict_sample": "the sample of runs the pages read (the command line's --verdict-sample)",
    },
    with_value="{word} set to {value}")


def say(message) -> str:
    """A message of the core (an exception, a problem, a note) in the dashboard's words.

    Parameters
    ----------
    message : str, exception or tpsviz.core.wording.Text

    Returns
    -------
    str
        Settings named by their widgets (``Reading options › "Column mapping (tables)"``), and a
        path under a data root by the root's name (``logs:/runs/a.json``, not the server's folder
        layout; :meth:`tpsviz.io.files.DataRoots.hide`).
    """
    return DataRoots.from_env().hide(word(message, DASHBOARD))
