"""The "Get forecasts for this log" panel and what a real signal has to beat (issue 34, docs/forecasts.md).

Shown on the Overview: open on a log without any forecast of its own, folded otherwise. It gives
the three ways to a per-step forecast, in order: the reference forecasters (already scored), a
probability elicited while the agent runs (the Inspect AI solver), and the replay of the finished
log to a model, with the exact command for this file (copyable). Then how to join the table the
replay writes: the reading options' forecasts table. :func:`reference_bar` says, in words a
stakeholder reads, the best reference's TPS and skill: the bar a real signal has to clear.
"""

from __future__ import annotations

import shlex

import streamlit as st

from tpsviz.core import formatting as Fm
from tpsviz.core.schema import clean_text
from tpsviz.forecasts.references import is_reference
from tpsviz.forecasts.versus import best_reference

from .evaluation import evaluation
from . import state as S
from .references import SWITCH, has_own_forecasts
from .text import code, md
from .wording import LABELS, READING

__all__ = ["TITLE", "REPLAY_FORMATS", "EXAMPLE_MODEL", "replay_log", "root_relative", "where_to_run",
           "replay_commands", "join_words",
           "forecasts_panel", "reference_bar", "TAU_BENCH_DEMO"]

TITLE = "Get forecasts for this log"
#: the formats the replay reads (tpsviz/cli/forecast.py): a harness log's messages
REPLAY_FORMATS = ("tau-bench", "tau2-bench", "inspect")
#: the model of the commands shown (an example: any PROVIDER/MODEL inspect_ai reaches)
EXAMPLE_MODEL = "openai/gpt-4o-mini"
OUT = "forecasts.parquet"
#: the demo scenario of a real log (state.DEMOS)
TAU_BENCH_DEMO = "tau-bench-airline"
ELICIT_SNIPPET = """\
from inspect_ai.agent import react
from tpsviz.forecasts.elicit import confidence_model

# after each assistant turn the model is asked P(eventual success);
# the answer goes into that message's metadata (read back as conf_elicited)
solver = react(tools=[...], model=confidence_model())
# or a separate judge: confidence_model(judge="openai/gpt-4o-mini")"""


def root_relative(src: S.Source) -> tuple[str, str] | None:
    """(the data root's name, the log's path inside it) of a server path, or None (not a server
    path, or the administrator shows the roots' full paths: ``TPSVIZ_SHOW_ROOT_PATHS=1``)."""
    if src.kind != "path" or not src.path:
        return None
    roots = S.data_roots()
    name, under, rel = roots.show(src.path).partition(":/")
    return (name, rel or ".") if under and not roots.show_paths else None


def replay_log(src: S.Source) -> str:
    """The log as the replay command names it: an upload by its file name, a server path by its path
    inside its readable folder (:func:`root_relative`; its full path only where the administrator
    shows them), a demo by its path in a tpsviz checkout; a tau2-bench folder uploaded as several
    files by the placeholder ``RESULTS_FOLDER``. Quoted for a shell where needed."""
    if src.kind == "upload" and src.parts:
        return "RESULTS_FOLDER"
    if src.kind == "demo":
        return shlex.quote(f"demo_data/{clean_text(src.name, 200)}")
    if src.kind == "path":
        inside = root_relative(src)
        return shlex.quote(clean_text(inside[1] if inside else S.data_roots().show(src.path), 400))
    return shlex.quote(clean_text(src.name, 200))


def where_to_run(src: S.Source) -> str:
    """Where the commands run (Markdown), for a server path named inside its readable folder; else ""."""
    inside = root_relative(src)
    if inside is None:
        return ""
    return (f"The log's path is inside the readable folder {code(inside[0], 60)} of this server (where that folder "
            "is on the server is not shown here; the administrator knows): run the commands on the server, from "
            f"inside that folder. The table is then written there, as {code(inside[0] + ':/' + OUT, 80)}.")


def replay_commands(src: S.Source, model: str = EXAMPLE_MODEL, out: str = OUT) -> str:
    """The replay's commands for this log: the dry run (prompts and an estimate of input tokens, no
    call), the run, and the score of the log with the table it writes."""
    log = replay_log(src)
    run = f"python -m tpsviz forecast {log} --model {model} --out {out}"
    return "\n".join(["# how many prompts, and an estimate of the input tokens (no call)", f"{run} --dry-run",
                      "# the replay (answers are cached: a stopped run resumes)", run,
                      "# the log scored with its new forecasts", f"python -m tpsviz score {log} --forecasts {out}"])


def join_words(src: S.Source, out: str = OUT) -> str:
    """Where the dashboard joins the table (Markdown)."""
    table = f'{READING} › "{LABELS["forecasts"]}"'
    if src.kind == "upload":
        return f"In the sidebar, open **{table}** and upload `{out}` beside this log: it is joined on (trajectory_id, step)."
    if src.kind == "path":
        inside = root_relative(src)
        there = f" ({code(inside[0] + ':/' + out, 80)} when written as above)" if inside else ""
        return (f'In the sidebar, give its path in **{READING} › "{LABELS["forecasts_path"]}"** (under the readable '
                f"folders){there}: it is joined on (trajectory_id, step).")
    return (f"A demo takes no reading options: switch the data source to **Upload**, upload the log "
            f"({code(src.name)}, from `demo_data/`) and `{out}` in **{table}**.")


def _references_step(cfg: S.Config, data) -> None:
    refs = [p for p in data.predictors if is_reference(p)]
    if refs:
        st.markdown(f"**1. Reference forecasters** (already scored on every page): {', '.join(code(r) for r in refs)}. "
                    "Yardsticks computed from the other runs' outcomes of this log, not the agent's forecasts: "
                    "the bar a real signal has to clear.")
    elif cfg.references:
        st.markdown("**1. Reference forecasters**: this log has too few runs with an outcome to fit them "
                    "(the loader's notes say why).")
    else:
        st.markdown(f"**1. Reference forecasters**: turn on **{SWITCH}** in the sidebar to score them beside "
                    "this log's predictors.")


def _elicit_step(data) -> None:
    inspect = data.reading.get("format") == "inspect"
    st.markdown("**2. Elicit a confidence while the agent runs** (Inspect AI"
                + (", as this log was written" if inspect else "") + "): wrap your agent's model with "
                "`tpsviz.forecasts.elicit`. The Inspect log it writes opens here as it is, with the predictor "
                "`elicited` (docs/forecasts.md, section 2; example task `examples/inspect_elicit.py`).")
    st.code(ELICIT_SNIPPET, language="python")
    st.code("inspect eval examples/inspect_elicit.py --model openai/gpt-4o-mini", language="bash")


def _replay_step(src: S.Source, data) -> None:
    fmt = data.reading.get("format", "table")
    if fmt not in REPLAY_FORMATS:
        st.markdown(f"**3. Replay the finished log to a model**: the replay reads a harness log's messages "
                    f"(tau-bench, tau2-bench, Inspect AI); this log is a {md(fmt)}, which holds no transcript. "
                    "Replay the harness log it came from, if you have it (docs/forecasts.md, section 3).")
        return
    st.markdown(f"**3. Replay the finished log to a model**: for each of its {data.n_steps:,} agent steps a "
                "model reads the transcript up to that step (never the outcome or later messages) and gives "
                "P(success). Run this where the log is, with the provider's key in its usual environment "
                "variable (`OPENAI_API_KEY`, …); `--dry-run` prints the prompts and an estimate of input "
                "tokens before any call, and answers are cached, so a stopped run resumes.")
    st.code(replay_commands(src), language="bash", wrap_lines=True)
    if where_to_run(src):
        st.caption(where_to_run(src))
    st.caption(f"`{EXAMPLE_MODEL}` is an example: any PROVIDER/MODEL inspect_ai reaches (openai, anthropic, "
               "google, vllm, ollama, an OpenAI-compatible server). Needs `pip install \"tpsviz[replay]\"`."
               + (" RESULTS\\_FOLDER: the folder holding results.json and simulations/." if src.parts else ""))
    st.markdown("**Then join the table here.** " + join_words(src))


def forecasts_panel(cfg: S.Config, data, src: S.Source | None = None) -> None:
    """The panel: open on a log without a forecast of its own, folded otherwise."""
    src = src or S.current_source()
    # drawn only while open (a rerun on opening): its code blocks cost the browser a syntax
    # highlighter pass on every view of a log that has forecasts, where it stays folded
    panel = st.expander(TITLE, expanded=not has_own_forecasts(data), icon=":material/add_chart:",
                        key=f"get_forecasts_{has_own_forecasts(data)}", on_change="rerun")
    if not panel.open:
        return
    with panel:
        st.caption("Three ways to a per-step probability of success F_t, each ending in a table "
                   "trajectory_id, step, conf_<name> that this dashboard and `python -m tpsviz score --forecasts` "
                   "join (docs/forecasts.md).")
        _references_step(cfg, data)
        _elicit_step(data)
        _replay_step(src, data)


def reference_bar(cfg: S.Config, data) -> None:
    """What a real signal would have to beat, in words: the best selected reference's TPS and skill
    (shown on a log without a forecast of its own; on the tau-bench demo with a word on the log)."""
    refs = [p for p in cfg.predictors if is_reference(p)]
    if not refs or has_own_forecasts(data):  # with a signal of its own, its verdict says "beats ref:…" or not
        return
    ev = evaluation(cfg, ci=False, verdicts=False, predictors=refs)  # the references' part of `score`'s Evaluation
    res, sk = ev.points, ev.skill
    best = best_reference(res)
    r, k = res.summary.loc[best], sk.loc[best] if best in sk.index else None
    worst = res.summary["tps_mean"].idxmin()
    demo = src_is_demo(TAU_BENCH_DEMO)
    with st.container(border=True):
        st.markdown("#### :material/flag: What a real signal would have to beat")
        if demo:
            st.markdown("This is a **real public log**: tau-bench's airline domain with gpt-4o as the agent (Sierra, "
                        "MIT licence), 50 tasks tried 4 times each. Like almost every harness log, it records "
                        "messages and rewards but no confidence, so the only forecasts here are references "
                        "built from the log itself.")
        skill = _skill_words(k) if k is not None else "no skill figure"
        st.markdown(
            f"The best yardstick is **{md(best)}**, with TPS **{Fm.num(r['tps_mean'], '.3f')} {cfg.unit} per run** "
            f"(± {Fm.num(r['tps_se'], '.3f')}, {int(r['n_trajectories']):,} runs) and {skill}. "
            f"It never reads the agent's words: it knows only {_knows(best)}. A confidence signal from the agent, "
            f"elicited during a run or replayed by a judge, earns its place only if it scores clearly above "
            f"that on the same runs: its verdict then says \"beats {md(best)} by … (Δ/SE …)\". A signal that "
            f"does not beat it tells you nothing that the other runs' outcomes did not already"
            + (f" (for scale: {md(worst)} scores {Fm.num(res.summary.loc[worst, 'tps_mean'], '.3f')})."
               if worst != best else "."))


def _skill_words(k) -> str:
    """The skill 1 − TPS/TPS_ref against the base rate, in words."""
    v, rate = float(k["skill"]), float(k["ref_rate"])
    if v != v:  # NaN: no skill (an infinite TPS)
        return "no skill figure"
    how = (f"its penalty is {abs(v):.0%} smaller than that of always saying the base rate {rate:.2f}" if v >= 0 else
           f"its penalty is {abs(v):.0%} larger than that of always saying the base rate {rate:.2f}")
    return f"a skill of {v:.2f} ({how})"


def _knows(name: str) -> str:
    return {"ref:step": "how far the run has got (the step number) and how often the other runs still going at "
                        "that step succeeded",
            "ref:task": "how often the same task succeeded in its other runs",
            "ref:task+step": "the step number and how often the same task succeeded in its other runs"}.get(
        name, "the other runs' outcomes")


def src_is_demo(name: str) -> bool:
    """Whether the session's data is the demo scenario ``name``."""
    src = S.current_source()
    return src is not None and src.key == f"demo:{name}"
