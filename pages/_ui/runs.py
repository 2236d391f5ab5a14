"""The Runs page's results, cached like every other page's (``results.result``, ``memo``).

- :func:`table`: :func:`tpsviz.diagnostics.runs.run_table` of the current analysis.
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

from . import results as Rs
from .memo import memo
from .state import Source, data_roots
from .wording import say

__all__ = ["POINT", "table", "steps_of_run", "messages_of_run", "MessagesUnavailable"]

#: the settings a point result depends on: all of the score's but the bootstrap
POINT = tuple(f for f in Rs.SETTINGS if f != "n_boot")


@Rs.result("Listing the runs…", keep=POINT, max_entries=12)
def table(a, x):
    """run_table of the log under the analysis' settings (per-run TPS without the bootstrap)."""
    return RU.run_table(x.data, Rs.tps_points(a=a, src=x.src), list(a.predictors))


@Rs.result("Scoring the run's steps…", keep=POINT, max_entries=24)
def steps_of_run(a, x, run_id: str):
    """run_steps of one run (raises KeyError for an id the log does not hold)."""
    return RU.run_steps(x.data, Rs.tps_points(a=a, src=x.src), run_id, list(a.predictors))


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
