"""Harness readers on the committed fixtures (and Inspect logs written now by inspect_ai): counts,
and load time against only parsing the same file (``json.loads``; for ``.eval`` every member
decompressed and parsed), measured in the same run.

Usage: .venv/bin/python bench/bench_readers.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import tpsviz  # noqa: E402
from _timing import median_time  # noqa: E402
from tpsviz.io.harness.runs import ReadOptions  # noqa: E402


def _raw_read(path: Path):
    if path.is_dir():
        return [json.loads(p.read_bytes()) for p in path.rglob("*.json")]
    if path.suffix == ".eval":  # every member decompressed and parsed, nothing else
        from tpsviz.io.harness.evalzip import EvalZip

        z = EvalZip(path.read_bytes(), path.name, 1 << 30)
        return [z.json(n) for n in z.names if n.endswith(".json")]
    return json.loads(path.read_bytes())


def _sidecar(path: Path, tmp: Path) -> Path | None:
    """A forecasts table for a log without forecasts (one value per agent step)."""
    try:
        frame, _ = _frame_without_forecasts(path)
    except Exception:
        return None
    rows = ["trajectory_id,step,conf_fake"] + [
        f"{r.trajectory_id},{r.step},{int(hashlib.sha256(f'{r.trajectory_id}/{r.step}'.encode()).hexdigest()[:6], 16) / 2**24:.6f}"
        for r in frame.itertuples()]
    out = tmp / (path.stem + "_fc.csv")
    out.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return out


def _frame_without_forecasts(path: Path):
    from tpsviz.io.files import limits_from_env
    from tpsviz.io.harness import detect_format, read_harness, read_tau2_dir

    limits = limits_from_env()
    if path.is_dir():
        return read_tau2_dir(path, ReadOptions(), limits)
    raw = path.read_bytes()
    kind, parsed = detect_format(raw, path.name)
    return read_harness(raw, path.name, kind, ReadOptions(), limits, parsed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    fixtures = sorted((ROOT / "tests" / "fixtures" / "tau2").glob("*.json")) + [
        ROOT / "tests" / "fixtures" / "tau2" / "tau2v1_airline_whissle_dirlayout"] + sorted(
        (ROOT / "tests" / "fixtures" / "taubench").glob("*.json"))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        from inspect_logs import write_logs_in_subprocess

        logs = write_logs_in_subprocess(tmp / "inspect")
        print(f"{'log':<58} {'runs':>5} {'succ':>5} {'cens':>5} {'drop':>5} {'steps':>6} "
              f"{'load s':>8} {'json s':>8} {'ratio':>6}")
        for path in fixtures + [logs["eval"], logs["json"], logs["chunked"]]:
            if path.suffix in (".eval",) or path.parent.name in ("json",):
                opts, side = ReadOptions(conf=(("verbal", "metadata.confidence"),)), None
            else:
                opts, side = ReadOptions(), _sidecar(path, tmp)
            data = tpsviz.load(path, options=opts, forecasts=side)
            t_load = median_time(lambda: tpsviz.load(path, options=opts, forecasts=side), args.repeats)
            t_json = median_time(lambda: _raw_read(path), args.repeats)
            tr = data.trajectories
            label = (path.parent.name + "/" + path.name)
            label = label if len(label) <= 58 else label[:27] + "…" + label[-30:]
            print(f"{label:<58} {data.n_trajectories:>5} {int((tr['outcome'] == 1).sum()):>5} "
                  f"{data.n_censored:>5} {sum(data.reading['dropped'].values()):>5} {data.n_steps:>6} "
                  f"{t_load:>8.3f} {t_json:>8.3f} {t_load / t_json:>6.1f}")


if __name__ == "__main__":
    main()
