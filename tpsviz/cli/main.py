"""Command line: ``python -m tpsviz score PATH …``, ``compare PATH --baseline NAME`` and friends: the
parser of every command and the dispatch to the command's module (``add_arguments(p)``, ``run(args)``).

Exit codes: 0 done; 1 only from ``check`` (a predictor failed a rule); 2 bad input or usage, or
nothing scored (:mod:`tpsviz.cli.unscored`), with a one-paragraph message on stderr, never a
traceback; 3 an unexpected failure (a bug in tpsviz).
Every number printed is computed by the core (``tps``, ``diagnostics``, ``compare``,
``calibrate``, ``audit``), the same functions the dashboard calls.
"""

from __future__ import annotations

import argparse
import os
import sys

from tpsviz.cli import check, compare, continuous, defer, demo, forecast, monitor, multiclass, score
from tpsviz.cli.common import EXIT_BAD_INPUT, EXIT_BUG, Fail
from tpsviz.cli.wording import say
from tpsviz.cli.options import DESCRIPTION, LOG_FORMAT, VERDICT_HELP, hidden_alias
from tpsviz.core.errors import LogFormatError
from tpsviz.core.schema import clean_text

__all__ = ["build_parser", "main", "COMMANDS", "ALIASES", "EXIT_BAD_INPUT", "EXIT_BUG"]

#: old spellings of a command: parsed as the command, left out of the list of commands
ALIASES = (("multiclass", "score"), ("crps", "score"))
OLD_SPELLINGS = ("old spellings: `multiclass PATH` and `crps PATH` are `score PATH` (score reads every outcome "
                 "kind; they are kept working)")

#: (command, module, keywords of its parser): the order of ``--help``
COMMANDS = (
    ("score", score, dict(help="score every predictor of a log with TPS (binary, multi-class or continuous outcome)",
                          description=DESCRIPTION, epilog="\n\n".join((
                              LOG_FORMAT, multiclass.EPILOG.rstrip(), continuous.EPILOG, VERDICT_HELP, OLD_SPELLINGS)))),
    ("compare", compare, dict(help="compare every predictor with a baseline: delta, SE, delta/SE",
                              description=compare.DESCRIPTION, epilog=LOG_FORMAT)),
    ("check", check, dict(help="exit 1 unless every predictor meets the rules (a CI gate on the agent's confidence)",
                          description="Gate a release on the agent's confidence (for CI pipelines): the log is scored "
                                      "as `score` scores it, then every predictor must meet every rule given. Exit 0 "
                                      "when all pass, 1 with one line per failing predictor saying why, 2 for bad "
                                      "input or usage, 3 for a bug in tpsviz.",
                          epilog=check.EPILOG + "\n\n" + VERDICT_HELP)),
    ("defer", defer, dict(help="what handing off below a confidence threshold is worth: best tau, utility, "
                               "risk-coverage",
                          description="Policy: hand the task to a person at the first step with F < tau. For a utility "
                                      "table (value of a success, costs of a failure, a hand-off and a step) the mean "
                                      "utility per run over tau, the best tau with a bootstrap CI and the "
                                      "risk-coverage curve (docs/theory.md section 10). The score's rule options "
                                      "(alpha, beta, schedule, censoring, eps, rollouts) do not enter.",
                          epilog=LOG_FORMAT)),
    ("monitor", monitor, dict(help="TPS and skill over time in sliding windows, with a degradation alarm")),
    ("forecast", forecast, dict(help="forecasts for a log that has none: a model replays each transcript prefix "
                                     "and gives P(success) per step (writes a table for --forecasts)",
                                description=forecast.DESCRIPTION)),
    ("demo-data", demo, dict(help="regenerate the synthetic demo logs (byte-identical)")),
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m tpsviz``.

    Returns
    -------
    ArgumentParser
        Each command's parser sets ``run`` (its module's ``run``) and ``command_parser`` (itself,
        for the defaults of its options) in the parsed arguments.
    """
    parser = argparse.ArgumentParser(
        prog="python -m tpsviz", description=DESCRIPTION, epilog=LOG_FORMAT,
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = {}
    for command, module, kwargs in COMMANDS:
        # (no abbreviations: `--score brier` must not silently become `--scorer brier`)
        sp = sub.add_parser(command, formatter_class=argparse.RawTextHelpFormatter, allow_abbrev=False, **kwargs)
        module.add_arguments(sp)
        sp.set_defaults(run=module.run, command_parser=sp)
        modules[command] = (module, kwargs)
    for old, command in ALIASES:  # (no help=: argparse then leaves the alias out of the list)
        module, kwargs = modules[command]
        sp = sub.add_parser(old, formatter_class=argparse.RawTextHelpFormatter, allow_abbrev=False,
                            description=f"an old spelling of `{command}`: " + kwargs.get("description", ""),
                            epilog=kwargs.get("epilog"))
        module.add_arguments(sp)
        hidden_alias(sp, "--bootstrap", "n_boot", int)  # (the old commands' own old spelling)
        sp.set_defaults(run=module.run, command_parser=sp)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The process exit code: 0, 1 (``check`` failed, or a bug), 2 (bad input).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        return args.run(args)
    except (LogFormatError, Fail, OSError) as exc:
        print(f"error: {clean_text(say(exc))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError:
        print("error: not enough memory for this log; lower TPSVIZ_MAX_ROWS or split the log",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # a bug: say so in one line (TPSVIZ_DEBUG=1 shows the traceback)
        if os.environ.get("TPSVIZ_DEBUG"):
            raise
        print(f"error: unexpected failure ({type(exc).__name__}: {clean_text(exc, 300)}); this is a bug in "
              "tpsviz, please report it with the command you ran", file=sys.stderr)
        return EXIT_BUG
