"""Every command spells a shared option the same way, with one type and one default (argparse
internals: the parsers are walked); older spellings are hidden aliases; options that would not
enter a command's result are refused by name."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tpsviz.cli.main import ALIASES, build_parser, main

DEMO = Path(__file__).resolve().parents[1] / "demo_data"

#: the shared concepts: attribute -> (the one spelling, type, default)
SHARED = {
    "n_boot": ("--n-boot", int, 2000),
    "seed": ("--seed", int, None),
    "level": ("--level", float, 0.95),
    "schedule": ("--schedule", None, "uniform"),
    "censoring": ("--censoring", None, None),
    "json": ("--json", None, False),
    "engine": ("--engine", None, "auto"),
}
#: the commands that have each concept
HAVE = {
    "n_boot": {"score", "compare", "check", "defer", "monitor"},
    "seed": {"score", "compare", "check", "defer", "monitor", "forecast"},
    "level": {"score", "compare", "check", "defer", "monitor"},
    "json": {"score", "compare", "check", "defer", "monitor"},
    "schedule": {"score", "compare", "check", "monitor"},
    "censoring": {"score", "compare", "check", "monitor", "forecast"},  # forecast: --method combined's labels
    "engine": {"score", "compare", "check"},
}


#: flags whose default is each command's own: what a command writes (demo-data: a folder, default
#: demo_data; forecast: the forecasts table, required)
OWN_DEFAULT = {"--out"}


def _commands(aliases: bool = False) -> dict:
    """The commands by name; an old spelling (``multiclass``, ``crps``: its command's parser again) only
    with ``aliases``."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {k: v for k, v in sub.choices.items() if aliases or k not in dict(ALIASES)}


def test_old_spellings_of_commands_are_left_out_of_the_list_and_parse_as_their_command(capsys):
    parser = build_parser()
    listed = parser.format_help()
    for old, command in ALIASES:
        assert f"    {old} " not in listed and f"    {command} " in listed
        a, b = parser.parse_args([old, "x.csv", "--json"]), parser.parse_args([command, "x.csv", "--json"])
        assert a.run is b.run and {k for k in vars(a)} == {k for k in vars(b)}


def _visible(sp):
    return [a for a in sp._actions if a.option_strings and a.help != argparse.SUPPRESS]


def test_every_shared_option_has_one_spelling_type_and_default():
    for command, sp in _commands().items():
        for a in _visible(sp):
            if a.dest in SHARED:
                flag, type_, default = SHARED[a.dest]
                assert a.option_strings == [flag], (command, a.option_strings)
                assert a.type is type_ and a.default == default, (command, flag, a.type, a.default)
        have = {a.dest for a in _visible(sp)}
        for dest, commands in HAVE.items():
            assert (dest in have) == (command in commands), (command, dest)


def test_a_flag_means_one_thing_on_every_command():
    """The same flag has the same attribute, type, default, action and kind of value (its metavar:
    a predictor NAME is not a FILE) wherever it is listed."""
    seen: dict = {}
    for command, sp in _commands().items():
        for a in _visible(sp):
            for flag in a.option_strings:
                if flag in ("-h", "--help"):
                    continue
                own = flag in OWN_DEFAULT  # the output path: a file or a folder, by command
                meaning = (a.dest, a.type, "per command" if own else repr(a.default), type(a).__name__,
                           "per command" if own else a.metavar)
                seen.setdefault(flag, {}).setdefault(meaning, []).append(command)
    mixed = {flag: m for flag, m in seen.items() if len(m) > 1}
    assert not mixed, mixed


def test_baseline_is_a_predictor_wherever_it_is_listed():
    """Issue 35: ``monitor --baseline`` was a number of runs and ``check --baseline`` a file, where
    ``compare --baseline`` is a predictor; they are ``--baseline-runs N`` and ``--baseline-score FILE``."""
    listed = {command: a for command, sp in _commands().items() for a in _visible(sp)
              if "--baseline" in a.option_strings}
    assert set(listed) == {"compare"} and listed["compare"].metavar == "NAME"
    names = {command: {f for a in _visible(sp) for f in a.option_strings} for command, sp in _commands().items()}
    assert "--baseline-runs" in names["monitor"] and "--baseline-score" in names["check"]


#: every hidden option: (command, flag) -> what it is (an older spelling of a listed option, or
#: an option refused by name)
HIDDEN = {("multiclass", "--bootstrap"): "n_boot", ("crps", "--bootstrap"): "n_boot",
          ("monitor", "--baseline"): "baseline_runs", ("monitor", "--by"): "by", ("check", "--baseline"): "baseline_score",
          **{("defer", f): "refused" for f in ("--alpha", "--beta", "--schedule", "--censoring", "--eps",
                                                "--rollouts", "--q-z")}}


def test_every_hidden_option_is_an_old_spelling_or_refused():
    hidden = {}
    for command, sp in _commands(aliases=True).items():
        listed = {a.dest for a in _visible(sp)}
        for a in sp._actions:
            if a.option_strings and a.help == argparse.SUPPRESS:
                for flag in a.option_strings:
                    refused = a.dest.startswith("refused_") and a.dest not in listed
                    hidden[(command, flag)] = "refused" if refused else a.dest
                    assert refused or a.dest in listed, (command, flag, a.dest)
    assert hidden == HIDDEN


@pytest.mark.parametrize("argv, dest, value", [
    (["multiclass", "x.csv", "--bootstrap", "300"], "n_boot", 300),
    (["crps", "x.csv", "--bootstrap", "300"], "n_boot", 300),
    (["monitor", "x.csv", "--baseline", "120"], "baseline_runs", 120),
    (["monitor", "x.csv", "--baseline-runs", "120"], "baseline_runs", 120),
    (["check", "x.csv", "--baseline", "b.json"], "baseline_score", "b.json"),
    (["check", "x.csv", "--baseline-score", "b.json"], "baseline_score", "b.json"),
])
def test_old_spellings_are_hidden_aliases(argv, dest, value):
    assert getattr(build_parser().parse_args(argv), dest) == value


def test_hidden_aliases_are_left_out_of_help():
    commands = _commands(aliases=True)
    for command, flag in [("multiclass", "--bootstrap"), ("crps", "--bootstrap"), ("monitor", "--baseline"),
                          ("check", "--baseline")]:
        assert flag not in {f for a in _visible(commands[command]) for f in a.option_strings}
        assert flag in commands[command]._option_string_actions


@pytest.mark.parametrize("options", [["--alpha", "1"], ["--schedule", "linear"], ["--beta", "2", "--eps", "0.1"],
                                     ["--censoring", "complete"], ["--rollouts", "r.csv"]])
def test_defer_refuses_the_score_s_rule_options(options, capsys):
    assert main(["defer", str(DEMO / "tau2-like.csv"), *options]) == 2
    err = capsys.readouterr().err
    assert all(o in err for o in options if o.startswith("--")) and "does not take" in err
    assert "Traceback" not in err


def test_defer_help_has_no_rule_options(capsys):
    with pytest.raises(SystemExit):
        main(["defer", "--help"])
    out = capsys.readouterr().out
    assert "--n-boot" in out and "--level" in out
    for flag in ("--alpha", "--beta", "--schedule", "--rollouts", "--eps"):
        assert flag not in out, flag


def test_score_takes_a_level(capsys):
    import json

    assert main(["score", str(DEMO / "tau2-like.csv"), "--json", "--n-boot", "200", "--level", "0.8"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["settings"]["level"] == 0.8
    rec = obj["predictors"]["truthful"]
    assert main(["score", str(DEMO / "tau2-like.csv"), "--json", "--n-boot", "200"]) == 0
    wide = json.loads(capsys.readouterr().out)["predictors"]["truthful"]
    assert wide["tps_ci_low"] < rec["tps_ci_low"] < rec["tps_ci_high"] < wide["tps_ci_high"]
    assert main(["score", str(DEMO / "tau2-like.csv"), "--level", "1.5"]) == 2
    assert "--level must be in (0, 1)" in capsys.readouterr().err


def test_no_option_is_taken_for_a_longer_one_it_begins():
    """argparse's abbreviations would read ``--score brier`` as ``--scorer brier`` (the Inspect AI scorer)
    and score the log with the log score, silently: every parser refuses abbreviations."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["score", "x.csv", "--score", "brier"])
    for command, sp in _commands(aliases=True).items():
        assert sp.allow_abbrev is False, command
