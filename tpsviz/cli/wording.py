"""The command line's words: the core's messages name a setting by a marker
(:mod:`tpsviz.core.wording`); :data:`CLI` words it as the option that sets it (``--n-boot``,
``--map``), :func:`say` a message in those words (one wording module per face: the core's
``tpsviz.core.wording``, this one, the dashboard's ``pages/_ui/wording.py``).
"""

from __future__ import annotations

from tpsviz.core.schema import plain_text
from tpsviz.core.wording import Wording, word

__all__ = ["CLI", "say", "say_all"]

#: the command line's words for the settings the core's messages name (:mod:`tpsviz.core.wording`):
#: the option (``--n-boot``; a setting not listed is its name with dashes), a value after it
CLI = Wording(
    "cli",
    words={
        "map": "--map", "percent": "--percent", "treat": "--treat", "conf": "--conf", "scorer": "--scorer",
        "success_threshold": "--success-threshold", "forecasts": "--forecasts",
        "run_by": "--run-by", "step_spans": "--step-spans", "outcome": "--outcome", "outcomes": "--outcomes",
        "censor_when": "--censor-when",
        "out_of_core": "--engine duckdb (score, or compare --baseline)", "in_memory": "--engine memory",
        "distributed": "--engine dask", "recalibrate": "--recalibrate", "eps": "--eps", "alpha": "--alpha",
        "beta": "--beta", "n_boot": "--n-boot",
        "multiclass": "'python -m tpsviz score'", "continuous": "'python -m tpsviz score'",
        "replay": "python -m tpsviz forecast {value} --model PROVIDER/MODEL --out FORECASTS.parquet",
        "model": "--model", "name": "--name",
        "steps": "--steps", "prices": "--prices",
        "seed": "--seed", "level": "--level", "cluster_by": "--cluster-by", "folds": "--folds", "censoring": "--censoring",
        "rollouts": "--rollouts", "q_z": "--q-z",
        "score": "--alpha and --beta (a preset's values)",
        "schedule": "--schedule", "interval": "--interval", "rule": "--rule", "censored_label": "--censored-label",
        "bins": "--bins", "verdict_sample": "--verdict-sample", "engine": "--engine",
    },
    with_value="{word} {value}", default="--{flag}")


def say(message) -> str:
    """A message of the core (an exception, a note) in the command line's words.

    Parameters
    ----------
    message : str, exception or tpsviz.core.wording.Text

    Returns
    -------
    str
        Settings named as options (``--map``, ``--percent verbal``).
    """
    return word(message, CLI)


def say_all(notes) -> list[str]:
    """Notes of the core in the command line's words, made safe for a terminal or JSON.

    Parameters
    ----------
    notes : iterable of str

    Returns
    -------
    list of str
    """
    return [plain_text(say(n)) for n in notes]
