"""Write the golden files of ``tests/test_golden.py``: one JSON file per case in ``tests/golden/``.

Each case is a name and the argv of ``python -m tpsviz`` (run from the repository's root, with
``--json``); its golden file holds the argv, the exit code and the parsed JSON the command printed.
The goldens pin the numbers tpsviz printed before issue 48's restructuring (see README.md here):
regenerate them (``--force``) only for a deliberate change of numbers, and say so in the commit.

Usage, from the repository's root::

    python tests/golden/make_golden.py [--force] [CASE ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent
ROOT = GOLDEN.parents[1]

#: small and fixed so that the suite stays fast and the bootstrap reproducible
FAST = ["--json", "--n-boot", "200", "--seed", "7"]
WEBSHOP = "demo_data/webshop-like.csv"
DATASET = "tests/golden/fixtures/webshop-like_dataset"
INSPECT = "tests/fixtures/inspect/2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval"

#: (name, argv of ``python -m tpsviz``); paths relative to the repository's root
CASES: list[tuple[str, list[str]]] = [
    ("score_webshop_default", ["score", WEBSHOP, *FAST]),
    # the half-Brier score (alpha = beta = 1; ``--score`` is not an option of ``score``: argparse
    # would read it as an abbreviation of ``--scorer``) with a back-loaded schedule to the budget 30
    ("score_webshop_brier_back", ["score", WEBSHOP, *FAST, "--alpha", "1", "--beta", "1",
                                  "--schedule", "back:0.9:30"]),
    ("score_tau2_default", ["score", "demo_data/tau2-like.csv", *FAST]),
    ("score_drift_default", ["score", "demo_data/drift-like.csv", *FAST]),
    ("score_webshop_rollouts_exact", ["score", WEBSHOP, *FAST, "--rollouts", "demo_data/webshop-like_rollouts.csv",
                                      "--censoring", "exact"]),
    ("score_multiclass", ["score", "demo_data/multiclass-like.csv", *FAST]),
    ("score_continuous", ["score", "demo_data/continuous-like.csv", *FAST]),
    ("score_taubench_references", ["score", "demo_data/tau-bench-airline-gpt-4o.json", *FAST]),
    ("score_raw_only_platt_simple", ["score", "tests/golden/fixtures/tau2-like_raw_only.csv", *FAST,
                                     "--recalibrate", "platt", "--censoring", "simple"]),
    ("score_dataset_memory", ["score", DATASET, *FAST, "--engine", "memory"]),
    ("score_dataset_duckdb", ["score", DATASET, *FAST, "--engine", "duckdb"]),
    ("score_inspect_unscored_failure", ["score", INSPECT, *FAST, "--treat", "unscored=failure"]),
    ("score_webshop_cluster_run", ["score", WEBSHOP, *FAST, "--cluster-by", "run"]),
    ("score_webshop_percentile", ["score", WEBSHOP, *FAST, "--interval", "percentile"]),
    ("compare_webshop_flat", ["compare", WEBSHOP, *FAST, "--baseline", "flat"]),
    ("check_webshop_fails", ["check", WEBSHOP, *FAST, "--require", "trustworthy", "--min-skill", "0.1"]),
]


def clean_env() -> dict:
    """The environment of a golden run: without the ``TPSVIZ_*`` variables that change what is
    read or where it is scored (row limits, data roots, debugging)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("TPSVIZ_")}


def run_subprocess(argv: list[str]) -> tuple[int, dict | None, str]:
    """Run ``python -m tpsviz argv`` from the repository's root.

    Returns
    -------
    exit_code : int
    output : dict or None
        The JSON printed on stdout (None when nothing was printed).
    stderr : str
    """
    env = clean_env()
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run([sys.executable, "-m", "tpsviz", *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False)
    out = json.loads(proc.stdout) if proc.stdout.strip() else None
    return proc.returncode, out, proc.stderr


def golden_path(name: str) -> Path:
    """The golden file of case ``name``."""
    return GOLDEN / f"{name}.json"


def main(argv: list[str] | None = None) -> int:
    """Write the golden file of every case (or of the named ones); refuse to overwrite without ``--force``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="overwrite existing golden files")
    parser.add_argument("cases", nargs="*", help="case names (default: all)")
    args = parser.parse_args(argv)
    known = dict(CASES)
    unknown = [c for c in args.cases if c not in known]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(known)}")
    chosen = args.cases or list(known)
    existing = [golden_path(c) for c in chosen if golden_path(c).exists()]
    if existing and not args.force:
        print("refusing to overwrite (pass --force for a deliberate change of numbers):\n  "
              + "\n  ".join(str(p.relative_to(ROOT)) for p in existing), file=sys.stderr)
        return 1
    for name in chosen:
        code, out, err = run_subprocess(known[name])
        if out is None:
            print(f"{name}: no JSON printed (exit {code}): {err.strip()}", file=sys.stderr)
            return 1
        record = {"case": name, "argv": known[name], "exit_code": code, "output": out}
        golden_path(name).write_text(json.dumps(record, indent=1, sort_keys=False) + "\n")
        print(f"wrote {golden_path(name).relative_to(ROOT)} (exit {code})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
