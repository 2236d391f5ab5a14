"""Settings named in the core's messages, worded by each front end (docs/architecture.md, "Messages").

A message of the core that tells its reader to change a setting names the setting by a *marker*,
``setting("map")`` or ``setting("percent", "verbal")`` (a value to suggest), never by a command-line
option or a dashboard widget: the same problem reaches a Python user (``tpsviz.load``,
``tpsviz.evaluate``), a terminal (``python -m tpsviz``) and a browser (the dashboard), and each
knows the setting by another name. A text holding markers is a *template*; each front end words it
with its own :class:`Wording` (:func:`word`):

- Python (:data:`PYTHON`, here: the core's own interface): the keyword of ``tpsviz.evaluate`` /
  ``tpsviz.load``, e.g. ``mapping``, ``percent='verbal'``;
- the command line (``tpsviz.cli.wording.CLI``): the option, e.g. ``--map``, ``--percent verbal``;
- the dashboard (``pages/_ui/wording.py``): the widget as the page shows it.

What carries a template: :class:`Text`, a ``str`` whose value is the Python wording (so printing it,
comparing it or writing it to JSON from Python reads naturally) with the template in ``.template``;
:class:`tpsviz.core.errors.SettingError` and :class:`tpsviz.core.errors.LogFormatError`, whose
``str()`` is worded for Python and whose ``.template`` the other front ends word. Text composed
from a :class:`Text` by string operations keeps the Python wording only: word it before composing,
or compose the template and make a :class:`Text` of it.

Markers are delimited by control characters, which text from a log never holds in a message
(:func:`tpsviz.core.schema.clean_text` removes them), so a log cannot forge one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

__all__ = ["SETTINGS", "Wording", "PYTHON", "Text", "setting", "text", "word", "named"]

#: every setting a message of the core may name: what it sets (for the vocabularies' completeness test)
SETTINGS = {
    "map": "columns of other names read as the long format's (tables)",
    "percent": "predictors given in percent (0–100)",
    "treat": "the treatment of a termination reason (harness logs)",
    "conf": "forecast fields of the agent's messages (harness logs)",
    "scorer": "the Inspect AI scorer whose value is the outcome",
    "success_threshold": "the reward counted as success (harness logs)",
    "forecasts": "a sidecar table of forecasts joined to the log",
    "run_by": "the attribute whose value groups traces into one run (trace files)",
    "step_spans": "the rules naming the spans that are steps (trace files)",
    "outcome": "the score or attribute holding a run's outcome (trace files)",
    "outcomes": "a table of the runs' outcomes, trajectory_id, outcome[, censored] (trace files)",
    "censor_when": "ATTRIBUTE=VALUE marking a run without an outcome as censored (trace files)",
    "out_of_core": "scoring a dataset larger than memory out of core (the DuckDB engine)",
    "in_memory": "scoring a log read into memory (needed for what takes the step rows)",
    "distributed": "scoring a dataset on a cluster (the Dask engine)",
    "recalibrate": "cross-fitted recalibration of every predictor and raw signal",
    "eps": "the clipping of forecasts to [ε, 1 − ε]",
    "alpha": "the beta family's α",
    "beta": "the beta family's β",
    "n_boot": "the bootstrap replicates of the intervals",
    "schedule": "the weight schedule w_t",
    "interval": "the kind of bootstrap interval of a mean (studentized or percentile)",
    "rule": "the multi-class score (log or brier)",
    "censored_label": "the label a censored run counts as (multi-class logs)",
    "bins": "the bins of a reliability diagram or PIT histogram",
    "engine": "where the rows are scored: memory, or out of core (duckdb, dask)",
    "verdict_sample": "the runs of the sample the verdicts are decided on out of core",
    "multiclass": "scoring a log whose outcome is one of k labels",
    "continuous": "scoring a log whose outcome is a number",
    "replay": "the replay of a finished log to a model (docs/forecasts.md section 3); value: the log",
    "model": "the model the replay asks, PROVIDER/MODEL",
    "name": "the name of the replay's predictor (its column conf_<name>)",
    "steps": "the agent steps the replay asks: every:K, first:N, last:N or sample:N",
    "prices": "the replay's price table (USD per million tokens by model)",
    "seed": "the seed of the bootstrap and the folds",
    "level": "the confidence level of the intervals",
    "cluster_by": "the unit of the SEs and bootstraps: auto, run or a task column",
    "folds": "the folds by trajectory of cross-fitted fits",
    "q_z": "the source of q_Z, the continuation success of censored runs (exact censoring)",
    "rollouts": "a table of continuation rollouts from censored runs (their q_Z)",
    "censoring": "how censored runs enter the score (simple, exact, bounds)",
    "score": "a preset of the beta family (log, brier, boosting)",
}

_OPEN, _VALUE = "\x1e", "\x1f"
_MARK = re.compile("\x1e([a-z_]+)(?:\x1f([^\x1e\x1f]*))?\x1e")
_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")


def setting(name: str, value=None) -> str:
    """The marker of a setting in a message template.

    Parameters
    ----------
    name : str
        One of :data:`SETTINGS`, e.g. ``"map"``.
    value : optional
        A value to suggest, e.g. ``setting("percent", "verbal")``; text from a log is safe here
        (control characters are dropped).

    Returns
    -------
    str
        The marker, to be placed in a template (an f-string) and worded by :func:`word`.
    """
    if value is None:
        return f"{_OPEN}{name}{_OPEN}"
    return f"{_OPEN}{name}{_VALUE}{_UNSAFE.sub('', str(value))}{_OPEN}"


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Wording:
    """How one front end names the settings of :data:`SETTINGS`.

    Attributes
    ----------
    front_end : str
        ``"python"``, ``"cli"`` or ``"dashboard"``.
    words : mapping of str to str
        The setting's name for this front end; a text with ``{value}`` takes the suggested value
        in its place (for a setting whose name changes with the value).
    with_value : str
        How a suggested value follows the name: ``{word}``, ``{value}`` (and ``{value!r}``-like
        quoting for Python: ``{quoted}``, the value as a literal).
    default : str
        A setting missing from ``words``: ``{name}`` (the neutral name) and ``{flag}`` (the
        name with dashes) may appear.
    """

    front_end: str
    words: Mapping[str, str] = field(default_factory=dict)
    with_value: str = "{word} {value}"
    default: str = "{name}"

    def name(self, setting_name: str, value: str | None = None) -> str:
        """One setting in this front end's words.

        Parameters
        ----------
        setting_name : str
        value : str, optional
            A value to suggest.

        Returns
        -------
        str
        """
        w = self.words.get(setting_name)
        if w is None:
            w = self.default.format(name=setting_name, flag=setting_name.replace("_", "-"))
        if "{value}" in w:
            return w.replace("{value}", value or "")
        if value is None:
            return w
        quoted = value if _is_number(value) else repr(value)
        return self.with_value.format(word=w, value=value, quoted=quoted)


#: the words of the core's own interface: keywords of tpsviz.evaluate and tpsviz.load
PYTHON = Wording(
    "python",
    words={
        "map": "mapping",
        "out_of_core": "tpsviz.engines.get_engine('duckdb')",
        "in_memory": "tpsviz.evaluate",
        "distributed": "tpsviz.engines.get_engine('dask')",
        "multiclass": "tpsviz.evaluate (it reads every outcome kind)",
        "continuous": "tpsviz.evaluate (it reads every outcome kind)",
        "replay": "the replay forecaster (the command line's forecast command, docs/forecasts.md section 3) "
                  "on {value}",
    },
    with_value="{word}={quoted}")


def word(message, wording: Wording = PYTHON) -> str:
    """A message in one front end's words.

    Parameters
    ----------
    message : str, Text or exception
        A template, a :class:`Text`, or an exception with a ``template`` attribute
        (:class:`~tpsviz.core.errors.SettingError`, :class:`~tpsviz.core.errors.LogFormatError`);
        any other exception is its ``str()``, any other text is returned as it is.
    wording : Wording
        The front end's (default :data:`PYTHON`).

    Returns
    -------
    str
        A plain ``str`` without markers.
    """
    template = getattr(message, "template", None)
    if not isinstance(template, str):
        template = str(message)
    if _OPEN not in template:
        return template
    return _MARK.sub(lambda m: wording.name(m.group(1), m.group(2)), template)


def named(message) -> set[str]:
    """The settings a message names (e.g. ``{"multiclass"}`` for a log of another outcome kind).

    Parameters
    ----------
    message : str, Text or exception

    Returns
    -------
    set of str
    """
    template = getattr(message, "template", None)
    return {m.group(1) for m in _MARK.finditer(template if isinstance(template, str) else str(message))}


class Text(str):
    """A message worded for Python (its ``str`` value) that keeps its template for other front ends.

    Parameters
    ----------
    template : str or Text
        A text with :func:`setting` markers.

    Attributes
    ----------
    template : str
    """

    template: str

    def __new__(cls, template):
        template = str(getattr(template, "template", template))
        obj = super().__new__(cls, word(template))
        obj.template = template
        return obj

    def __reduce__(self):  # pickled (a cache, a Dask worker's notes) with its template
        return (Text, (self.template,))


def text(template) -> str:
    """A template as a message: a :class:`Text` when it names a setting, else the plain ``str``.

    Parameters
    ----------
    template : str

    Returns
    -------
    str
    """
    template = getattr(template, "template", template)
    return Text(template) if _OPEN in str(template) else str(template)
