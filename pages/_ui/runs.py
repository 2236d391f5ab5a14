"""The Runs page's results, cached like every other page's (``memo``), from the sidebar's Evaluation.

- :func:`table`: :func:`tpsviz.diagnostics.runs.run_table` of the Evaluation's per-run TPS (``ev.points``).
- :func:`steps_of_run`: one run's forecasts and contributions (``run_steps``).
- :func:`messages_of_run`: one run's transcript split at its steps (``transcript_steps``), read
  from the source's file for that run alone; one run's messages are cached (a few runs at most),
  never the whole file's.
"""

from __future__ import annotations

from pathlib import Path

import tpsviz
from tpsviz.diagnostics import run_messages as RM
from tpsviz.diagnostics import runs as RU
from tpsviz.io.files import PathRefused, limits_from_env

from . import evaluation as E
from .memo import memo
from .state import Source, data_roots
from .wording import say

__all__ = ["table", "steps_of_run", "points", "preset_counts", "messages_of_run", "MessagesUnavailable"]


def _points(cfg):
    """The Evaluation without the bootstrap (its ``ev.points``) and its cache key: the log, the
    predictors and the settings (:func:`pages._ui.evaluation.evaluation_and_key`)."""
    return E.evaluation_and_key(cfg, ci=False, verdicts=False)


@memo(max_entries=12)
def _preset_counts(log: tuple, names: tuple, _data):
    return RU.preset_counts(_data, list(names))


def preset_counts(ev, cfg=None):
    """:func:`tpsviz.diagnostics.runs.preset_counts` of an Evaluation's log and predictors, cached under the
    log and the predictors alone: the counts read the forecasts, not the score, so an α nudge finds them.

    Parameters
    ----------
    ev : BinaryEvaluation
        The sidebar's (any of its calls: the log and the predictors are the same).
    cfg : Config, optional

    Returns
    -------
    DataFrame
        Index the predictors (sorted), one column per preset.
    """
    return _preset_counts(E.log_key(cfg), tuple(sorted(ev.summary.index)), ev.data)


@memo(max_entries=12, spinner="Listing the runs…")
def _table(key: tuple, _ev):
    return RU.run_table(_ev.data, _ev.points, list(_ev.data.predictors))


@memo(max_entries=24, spinner="Scoring the run's steps…")
def _steps(key: tuple, run_id: str, _ev):
    return RU.run_steps(_ev.data, _ev.points, run_id, list(_ev.data.predictors))


def table(cfg):
    """run_table of the log under the sidebar's settings (per-run TPS of the Evaluation, no bootstrap)."""
    ev, key = _points(cfg)
    return _table(key, ev)


def steps_of_run(cfg, run_id: str):
    """run_steps of one run (raises KeyError for an id the log does not hold)."""
    ev, key = _points(cfg)
    return _steps(key, run_id, ev)


def points(cfg):
    """The per-run TPS the table and the run view read (``ev.points`` of the sidebar's Evaluation)."""
    return _points(cfg)[0].points


class MessagesUnavailable(Exception):
    """The run's messages cannot be shown; ``str()`` says why in the dashboard's words (never the
    file's content)."""


def _read_one(src: Source, run_id: str):
    """The run's Transcript (None: the log keeps no such run), read as the log was read."""
    limits = limits_from_env()
    outcomes = src.outcomes_raw or src.outcomes_path
    if src.parts:
        raise MessagesUnavailable("the messages of a tau2-bench folder uploaded as several files are not shown "
                                  "here; open the folder as a server path to see them")
    if src.raw is not None:
        return RM.read_run_transcript(src.name, run_id, src.options, limits, outcomes, raw=src.raw)
    if src.kind == "path":
        path = Path(src.path)
        if path.is_dir():  # a tau2-bench results folder (its place under the data roots was checked)
            data_roots().resolve(str(path), allow_dir=True)
            return RM.read_run_transcript(path, run_id, src.options, limits, outcomes)
        raw = data_roots().read(str(path), max_bytes=limits.max_bytes, label=src.name)
        return RM.read_run_transcript(src.name, run_id, src.options, limits, outcomes, raw=raw)
    if src.kind == "demo" and src.path:
        return RM.read_run_transcript(src.path, run_id, src.options, limits, outcomes)
    raise MessagesUnavailable("this source keeps no file to read messages from")


@memo(max_entries=4, spinner="Reading the run's messages…")
def _messages(key: str, run_id: str, _src: Source):
    transcript = _read_one(_src, run_id)
    return None if transcript is None else (RM.transcript_steps(transcript), transcript.steps)


def messages_of_run(src: Source, run_id: str):
    """(messages, agent steps) of one run, or None when the file keeps no run with this id.

    Raises
    ------
    MessagesUnavailable
        With the reason in words: a file that cannot be read (now), a refused path, a layout
        whose messages are not read here.
    """
    try:
        return _messages(src.key, str(run_id), src)
    except MessagesUnavailable:
        raise
    except PathRefused:
        raise MessagesUnavailable("the log's file cannot be opened from here any more") from None
    except tpsviz.LogFormatError as e:
        raise MessagesUnavailable("the log's messages could not be read: " + "; ".join(say(p) for p in e.problems[:3])) from None
    except OSError as e:
        raise MessagesUnavailable(f"the log's file could not be read ({say(str(e))})") from None
    except MemoryError:
        raise MessagesUnavailable("the server ran out of memory reading the log's messages") from None
