"""A stalled provider, measured (issue 47, Done when): `tpsviz forecast --timeout 5` against a
server on 127.0.0.1 that accepts every connection and never answers (it never even reads the
request), for both model forms a local server is reached with; the wall time, the exit code and
the command's last error line.

The server is a bare listening socket started here (no HTTP at all: the kernel completes the TCP
handshake and the bytes sent wait unread), so the client sees exactly a provider that hangs. The
keys are dummies in the child's environment only; no other address is called.

Usage: .venv/bin/python bench/bench_stall.py [--runs 3] [--timeout 5] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "demo_data" / "tau-bench-airline-gpt-4o.json"
DUMMY = "dummy-key-not-a-secret-7c1e"
LIMIT = 120.0  # the Done-when bound, seconds


class StalledServer:
    """A socket on 127.0.0.1 that accepts connections and holds them open, unread, until closed."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(256)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.accepted = 0
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            self.held.append(conn)  # never read, never answered
            self.accepted += 1

    def close(self) -> None:
        self.stop.set()
        for c in self.held:
            c.close()
        self.sock.close()


def run_once(model: str, url: str, runs: int, timeout: float, concurrency: int, tmp: Path) -> dict:
    """One `forecast` against the stalled server: wall time, exit code, last stderr line."""
    out = tmp / (model.replace("/", "_") + ".parquet")
    env = {**os.environ, "OPENAI_API_KEY": DUMMY, "LLAMA_API_KEY": DUMMY, "PYTHONPATH": str(ROOT)}
    for var in ("OPENAI_BASE_URL", "LLAMA_BASE_URL"):
        env.pop(var, None)
    cmd = [sys.executable, "-m", "tpsviz", "forecast", str(LOG), "--model", model, "--model-base-url", url,
           "--out", str(out), "--max-runs", str(runs), "--timeout", f"{timeout:g}",
           "--concurrency", str(concurrency)]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=15 * 60)
    took = time.monotonic() - start
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    error = next((ln for ln in reversed(lines) if ln.startswith("error:")), lines[-1] if lines else "")
    timed = next((ln for ln in lines if ln.startswith("timed out:")), "")
    return {"model": model, "seconds": took, "code": proc.returncode, "error": error, "timed": timed,
            "table": out.exists()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="the demo log's first runs (default 3: 31 prompts)")
    ap.add_argument("--timeout", type=float, default=5.0)
    ap.add_argument("--concurrency", type=int, default=4)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in ("openai/SmolLM2-135M-Instruct", "openai-api/llama/SmolLM2-135M-Instruct"):
            server = StalledServer()
            try:
                r = run_once(model, f"http://127.0.0.1:{server.port}/v1", args.runs, args.timeout,
                             args.concurrency, Path(tmp))
                r["connections"] = server.accepted
            finally:
                server.close()
            rows.append(r)
    print(f"stalled provider: {LOG.name}, first {args.runs} runs, --timeout {args.timeout:g}, "
          f"--concurrency {args.concurrency}")
    print(f"{'model':<42} {'seconds':>8} {'exit':>5} {'conns':>6} {'table':>6}  within {LIMIT:g} s")
    for r in rows:
        print(f"{r['model']:<42} {r['seconds']:>8.1f} {r['code']:>5} {r['connections']:>6} "
              f"{'yes' if r['table'] else 'no':>6}  {'yes' if r['seconds'] <= LIMIT else 'NO'}")
    for r in rows:
        print(f"\n{r['model']}:\n  {r['timed']}\n  {r['error']}")


if __name__ == "__main__":
    main()
