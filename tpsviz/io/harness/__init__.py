"""Readers for the logs of agent-evaluation harnesses: tau2-bench, tau-bench (v1), Inspect AI.

:func:`detect_format` chooses a reader from the content (a format can be forced);
:func:`read_harness` turns a file into the long format with the record of how it was read
(the treatment table of termination reasons, what was dropped, where forecasts come from).
See docs/harness.md.
"""

from __future__ import annotations

import json
from pathlib import Path

from tpsviz.core.errors import LogFormatError
from tpsviz.core.schema import no_lone_surrogates
from tpsviz.io.tables import FORMATS
from tpsviz.io.harness.runs import (
    TREATMENTS, HarnessLog, ReadOptions, parse_conf, parse_mapping, parse_treat, runs_to_frame)
from tpsviz.io.harness.inspect_log import read_inspect_eval, read_inspect_json
from tpsviz.io.harness.tau2 import read_tau2
from tpsviz.io.harness.taubench import read_taubench
from tpsviz.io.files import read_file
from tpsviz.io.traces.detect import TRACE_FORMATS, sniff_trace_format, trace_format_of

__all__ = ["ReadOptions", "TREATMENTS", "HARNESS_FORMATS", "TABLE_FORMATS", "TRACE_FORMATS", "FORMAT_CHOICES",
           "detect_format", "read_harness", "read_harness_log", "read_tau2_dir", "read_tau2_parts",
           "read_tau2_dir_log", "read_tau2_parts_log", "parse_treat",
           "parse_conf", "parse_mapping", "HarnessLog"]

HARNESS_FORMATS = ("tau2", "tau-bench", "inspect")
TABLE_FORMATS = ("csv", "tsv", "parquet", "jsonl")
FORMAT_CHOICES = ("auto",) + TABLE_FORMATS + HARNESS_FORMATS + TRACE_FORMATS


DEFAULT_MAX_NODES = 10_000_000


def json_values(raw: bytes) -> int:
    """An upper bound of the values (objects, lists and their items) in a JSON text: every value
    but the first is preceded by ``,``, ``{`` or ``[`` (counted in strings too: an overcount)."""
    return raw.count(b"{") + raw.count(b"[") + raw.count(b",")


def check_nodes(raw: bytes, name: str, max_nodes: int) -> int:
    """Refuse JSON with more values than ``max_nodes`` before it is parsed (``{}`` or ``1,`` of two
    or three bytes become tens of bytes of Python objects; real logs hold one value per ~40 bytes);
    returns the count."""
    n = json_values(raw)
    if n > max_nodes:
        raise LogFormatError(name, [f"the JSON holds up to {n:,} values, more than the {max_nodes:,} "
                                    "this installation parses (TPSVIZ_MAX_JSON_NODES)"])
    return n


def _parse_json(raw: bytes, name: str, max_nodes: int = DEFAULT_MAX_NODES):
    check_nodes(raw, name, max_nodes)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise LogFormatError(name, ["the file is not valid UTF-8 text"]) from None
    try:
        return no_lone_surrogates(json.loads(text), raw)
    except RecursionError:
        raise LogFormatError(name, ["the JSON is nested too deeply to be a log"]) from None
    except json.JSONDecodeError:
        raise
    except ValueError:  # e.g. an integer of thousands of digits
        raise LogFormatError(name, ["the JSON holds a number too long to read"]) from None


def _json_kind(obj) -> str | None:
    if isinstance(obj, dict):
        if "simulations" in obj and ("info" in obj or "tasks" in obj):
            return "tau2"
        if "simulation_index" in obj and "info" in obj:
            return "tau2-index"
        if "eval" in obj and ("samples" in obj or "version" in obj or "plan" in obj):
            return "inspect"
        return None
    if isinstance(obj, list) and obj and all(isinstance(r, dict) for r in obj[:50]) and \
            any("traj" in r and "task_id" in r for r in obj[:50]):
        return "tau-bench"
    return None


def detect_format(raw: bytes, name: str, max_nodes: int = DEFAULT_MAX_NODES) -> tuple[str, object]:
    """The format of a file's bytes, and the parsed JSON when it had to be parsed to tell.

    Returns
    -------
    fmt : str
        ``inspect`` (an ``.eval`` zip or a ``.json`` log), ``tau2``, ``tau2-index`` (the index of
        a tau2-bench directory layout), ``tau-bench``, or a table format (``csv``, ``tsv``,
        ``parquet``, ``jsonl``) by the file's extension, or a trace format (``otlp``,
        ``openinference``, ``langfuse``; docs/traces.md).
    parsed : object or None
    """
    if raw[:4] == b"PK\x03\x04":
        return "inspect", None
    trace = sniff_trace_format(raw, name)
    if trace:
        return trace, None
    ext = Path(name).suffix.lower()
    head = raw[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head[:1] in (b"{", b"[") and ext not in (".jsonl", ".ndjson", ".csv", ".tsv", ".txt"):
        try:
            obj = _parse_json(raw, name, max_nodes)
        except json.JSONDecodeError:
            return FORMATS.get(ext, "jsonl"), None  # one object per line: JSON Lines
        kind = _json_kind(obj) or trace_format_of(obj)
        if kind:
            return kind, obj
        if isinstance(obj, list):
            raise LogFormatError(name, ["the file is one JSON list that is not a tau-bench log (a list "
                                        "of {task_id, trial, reward, info, traj}); a table needs one "
                                        "JSON object per line (.jsonl)"])
        return "jsonl", None
    fmt = FORMATS.get(ext)
    if fmt is None:
        raise LogFormatError(name, [f"unknown file type '{ext or '(none)'}'; use .csv, .tsv, .parquet, "
                                    ".jsonl, a harness log (.json, .eval) or a tau2-bench results folder"])
    return fmt, None


def read_harness(raw: bytes, name: str, fmt: str, options: ReadOptions, limits, parsed=None):
    """(long frame, reading record) of a harness log's bytes; see :func:`runs_to_frame`."""
    return runs_to_frame(read_harness_log(raw, name, fmt, options, limits, parsed), options, name, limits.max_rows)


def read_harness_log(raw: bytes, name: str, fmt: str, options: ReadOptions, limits, parsed=None) -> HarnessLog:
    """The runs of a harness log's bytes (:class:`HarnessLog`), before the treatment table.

    Parameters
    ----------
    raw : bytes
    name : str
        File name for messages.
    fmt : str
        ``inspect``, ``tau2``, ``tau-bench`` (or ``tau2-index``, refused with a message).
    options : ReadOptions
    limits : tpsviz.io.files.Limits
    parsed : object, optional
        The JSON already parsed by :func:`detect_format`.

    Returns
    -------
    HarnessLog
    """

    if fmt == "inspect" and raw[:4] == b"PK\x03\x04":
        log = read_inspect_eval(raw, name, options, limits)
    else:
        obj = parsed if parsed is not None else _parse_json_checked(raw, name, limits.max_json_nodes)
        kind = _json_kind(obj)
        if fmt == "tau2":
            if kind == "tau2-index":
                raise LogFormatError(name, ["this results.json is the index of a tau2-bench folder "
                                            "layout: open the folder that holds it and simulations/"])
            if not isinstance(obj, dict):
                raise LogFormatError(name, ["a tau2-bench results file is one JSON object with "
                                            "'simulations'"])
            log = read_tau2(obj, name, options)
        elif fmt == "tau-bench":
            if not isinstance(obj, list):
                raise LogFormatError(name, ["a tau-bench results file is one JSON list of runs"])
            log = read_taubench(obj, name, options)
        elif fmt == "inspect":
            if not isinstance(obj, dict):
                raise LogFormatError(name, ["an Inspect AI .json log is one JSON object with 'eval' and "
                                            "'samples'"])
            log = read_inspect_json(obj, name, options)
        elif fmt == "tau2-index":
            raise LogFormatError(name, ["this results.json is the index of a tau2-bench folder layout "
                                        "(results.json + simulations/): open the folder itself"])
        else:
            raise ValueError(f"unknown harness format {fmt!r}")
    return log


def _parse_json_checked(raw: bytes, name: str, max_nodes: int = DEFAULT_MAX_NODES):
    try:
        return _parse_json(raw, name, max_nodes)
    except json.JSONDecodeError as exc:
        raise LogFormatError(name, [f"not valid JSON (line {exc.lineno}: {exc.msg})"]) from None


def read_tau2_dir(folder: Path, options: ReadOptions, limits, label: str | None = None, read=None):
    """(long frame, reading record) of a tau2-bench folder layout on disk: ``results.json`` (with
    ``simulation_index``) and ``simulations/<id>.json``; the byte limit applies to the folder's
    files together. ``read(path, max_bytes, label)`` reads one file (default
    :func:`tpsviz.io.files.read_file`; the dashboard passes one that stays under its data roots)."""

    name = label or folder.name or str(folder)
    return runs_to_frame(read_tau2_dir_log(folder, options, limits, name, read), options, name, limits.max_rows)


def read_tau2_dir_log(folder: Path, options: ReadOptions, limits, label: str | None = None,
                      read=None) -> HarnessLog:
    """The runs (:class:`HarnessLog`) of a tau2-bench folder layout on disk, before the treatment
    table; see :func:`read_tau2_dir` (the replay reads a folder's transcripts with it)."""

    read = read or (lambda p, n, label: read_file(p, n, label=label))
    name = label or folder.name or str(folder)
    budget = limits.max_bytes
    index = read(folder / "results.json", budget, f"{name}/results.json")
    budget -= len(index)
    sim_dir = folder / "simulations"
    parts = []
    if sim_dir.is_dir():
        for p in sorted(sim_dir.iterdir()):
            if p.suffix == ".json":
                data = read(p, budget, f"{name}/simulations/{p.name}")
                budget -= len(data)
                parts.append((p.name, data))
    return read_tau2_parts_log(index, parts, options, limits, name)


def read_tau2_parts(index_raw: bytes, parts: list, options: ReadOptions, limits, name: str):
    """(long frame, reading record) of a tau2-bench folder layout given as bytes: the index
    ``results.json`` and the simulation files ``[(file name, bytes), …]`` (e.g. uploaded
    together)."""

    return runs_to_frame(read_tau2_parts_log(index_raw, parts, options, limits, name), options, name,
                         limits.max_rows)


def read_tau2_parts_log(index_raw: bytes, parts: list, options: ReadOptions, limits, name: str) -> HarnessLog:
    """The runs (:class:`HarnessLog`) of a tau2-bench folder layout given as bytes, before the
    treatment table; see :func:`read_tau2_parts`."""

    nodes = check_nodes(index_raw, f"{name}/results.json", limits.max_json_nodes)
    for label, raw in parts:
        nodes += check_nodes(raw, f"{name}/simulations/{label}", limits.max_json_nodes - nodes)
    index = _parse_json_checked(index_raw, f"{name}/results.json", limits.max_json_nodes)
    if not isinstance(index, dict):
        raise LogFormatError(f"{name}/results.json", ["not a tau2-bench results object"])
    if isinstance(index.get("simulations"), list):
        return read_tau2(index, name, options)
    if not parts:
        raise LogFormatError(name, ["results.json lists simulations, but no simulation file "
                                    "(simulations/<id>.json) came with it"])
    sims = [(f"simulations/{label}", _parse_json_checked(raw, f"{name}/simulations/{label}"))
            for label, raw in parts]
    log = read_tau2(index, name, options, simulations=sims)
    listed = [str(e.get("id")) for e in index.get("simulation_index") or [] if isinstance(e, dict)]
    missing = sorted(set(listed) - {r.trajectory_id for r in log.runs})
    if missing:
        log.notes.append(f"{len(missing)} simulation(s) listed in results.json have no file in "
                         "simulations/ and are missing")
    return log
