"""Inspect AI ``.eval`` archives read exactly as Inspect wrote them (issue 38, items 1 and 2).

- A member listed twice (a sample, ``header.json``) makes the archive malformed: zip readers differ
  on which copy they take (Python's ``zipfile`` the last, others the first), so tpsviz takes none.
  The message names the member, never what it holds; the command line exits 2.
- Only the member names Inspect writes are samples: ``samples/<id>_epoch_<n>.json`` (or a chunked
  sample's folder ``samples/<id>_epoch_<n>/``) with an id that holds no ``/``, no backslash and no
  ``..``. Any other member under ``samples/`` is skipped and counted in the reader's notes.

The archives are built from a real log written by inspect_ai itself (mock model, 30 samples, some
with ids of odd characters: Inspect writes the id as its text, unencoded), repacked with
:mod:`zipfile` (deflate) with members added.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest

import tpsviz
from tpsviz.cli.main import main
from tpsviz.core.errors import LogFormatError
from tpsviz.io.harness.evalzip import EvalZip
from tpsviz.io.harness.inspect_log import sample_members

#: 26 numeric ids and four of odd characters, as a dataset may give them (Inspect writes each as it is)
ODD_IDS = ["q 7: é?", "a.b", "x_epoch_3", "tab\tid"]
N_SAMPLES = 30
CANARY = "CANARY-3f9e1"  # a value only the altered copies hold: never printed

WRITER = r'''
import json, os, sys
os.environ.setdefault("INSPECT_LOG_LEVEL", "warning"); os.environ.setdefault("INSPECT_DISPLAY", "none")
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate
from inspect_ai.log._recorders.chunked.convert import convert_eval_logs_to_chunked

out, ids = sys.argv[1], list(range(1, 27)) + json.loads(sys.argv[2])

def reply(input, tools, tool_choice, config):
    question = next((m.text for m in input if m.role == "user"), "")
    output = ModelOutput.from_content(model="mockllm/model", content="yes" if len(question) % 2 else "no")
    output.usage = ModelUsage(input_tokens=3, output_tokens=1, total_tokens=4)  # nothing downloaded to count
    return output

task = Task(dataset=[Sample(id=i, input=f"Say {i}", target="yes") for i in ids], solver=generate(),
            scorer=includes())
log = eval(task, model=get_model("mockllm/model", custom_outputs=reply), log_dir=out + "/eval",
           display="none")[0]
convert_eval_logs_to_chunked(log.location, out + "/chunked")
chunked = next(p for p in os.listdir(out + "/chunked") if p.endswith(".eval"))
print(json.dumps({"eval": log.location, "chunked": os.path.join(out, "chunked", chunked)}))
'''


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, Path]:
    """A 30-sample ``.eval`` written by inspect_ai (in a fresh process: it runs its own event loop),
    and the same log converted to chunked per-sample folders."""
    out = tmp_path_factory.mktemp("eval38")
    done = subprocess.run([sys.executable, "-c", WRITER, str(out), json.dumps(ODD_IDS)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return {k: Path(v) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def members(path: Path) -> list[tuple[str, bytes]]:
    """Every member of a real ``.eval`` as (name, decompressed bytes), in the archive's order."""
    raw = path.read_bytes()
    z = EvalZip(raw, path.name, 1 << 30)
    return [(name, z.read(name)) for name in z.names]


def repack(path: Path, parts: list[tuple[str, bytes]]) -> Path:
    """An archive of ``parts`` (deflate, as logs of inspect_ai before 0.3.206 were written)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of a duplicate name: that is the point
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data in parts:
                z.writestr(name, data)
    return path


def altered(data: bytes, **fields) -> bytes:
    obj = json.loads(data)
    obj.update(fields)
    return json.dumps(obj).encode()


def cli(capsys, path: Path) -> tuple[int, str]:
    code = main(["score", str(path), "--n-boot", "0"])
    cap = capsys.readouterr()
    return code, cap.out + cap.err


def test_the_real_log_reads_all_30_samples_odd_ids_included(logs):
    """Inspect writes an id as its text (spaces, a colon, an accent, a dot, ``_epoch_``, a tab): all are
    sample names it writes, and all are read, in both layouts, without a skipped member."""
    names = [n for n, _ in members(logs["eval"])]
    assert "samples/q 7: é?_epoch_1.json" in names and "samples/tab\tid_epoch_1.json" in names
    for layout in ("eval", "chunked"):
        data = tpsviz.load(logs[layout])
        ids = set(data.trajectories["trajectory_id"])
        assert len(ids) == N_SAMPLES, layout
        assert {f"{i}-epoch1" for i in ODD_IDS} <= ids
        assert not any("skipped" in n for n in data.notes), layout


@pytest.mark.parametrize("member", ["samples/1_epoch_1.json", "header.json"])
def test_a_member_written_twice_is_a_malformed_file_named_without_its_content(logs, tmp_path, member, capsys):
    """The probe's reproduction: a second copy that flips run 1's outcome, or a second header with
    another model. Read silently before (the last copy won); now exit 2 naming the member."""
    parts = members(logs["eval"])
    first = dict(parts)[member]
    if member == "header.json":
        header = json.loads(first)
        header["eval"]["model"] = CANARY
        copy = json.dumps(header).encode()
    else:
        copy = altered(first, scores={"includes": {"value": "C", "explanation": CANARY}})
    bad = repack(tmp_path / "twice.eval", parts + [(member, copy)])
    with pytest.raises(LogFormatError) as err:
        tpsviz.load(bad)
    assert err.value.problems == [f"member '{member}' appears twice in the .eval archive (Inspect AI writes "
                                  "each member once: the file was altered or damaged)"]
    code, out = cli(capsys, bad)
    assert code == 2 and f"'{member}' appears twice" in out
    assert CANARY not in out and CANARY not in str(err.value)
    # each copy alone reads (the test's archives are sound but for the duplicate)
    assert len(tpsviz.load(repack(tmp_path / "once.eval", parts)).trajectories) == N_SAMPLES


def test_every_member_written_twice_is_named(logs, tmp_path, capsys):
    parts = members(logs["eval"])
    d = dict(parts)
    bad = repack(tmp_path / "both.eval", parts + [("samples/1_epoch_1.json", d["samples/1_epoch_1.json"]),
                                                 ("header.json", d["header.json"])])
    code, out = cli(capsys, bad)
    assert code == 2 and "2 problems" in out
    assert "'samples/1_epoch_1.json' appears twice" in out and "'header.json' appears twice" in out


def test_a_duplicated_name_is_shown_escaped_and_cut_as_other_member_names(logs, tmp_path):
    parts = members(logs["eval"])
    name = "samples/\x1b[31m" + "z" * 200 + "_epoch_1.json"
    bad = repack(tmp_path / "odd.eval", parts + [(name, b"{}"), (name, b"{}")])
    with pytest.raises(LogFormatError) as err:
        tpsviz.load(bad)
    (problem,) = err.value.problems
    assert "\x1b" not in problem and "z" * 61 not in problem and "appears twice" in problem


def test_a_name_inspect_never_writes_is_skipped_and_counted(logs, tmp_path, capsys):
    """The probe's reproduction: ``samples/..\\..\\w_epoch_1.json`` (a sound sample of another id)
    was read as a 31st run. Now 30 runs, and one member skipped, said in the reader's notes."""
    parts = members(logs["eval"])
    sample = altered(dict(parts)["samples/1_epoch_1.json"], id="w")
    bad = repack(tmp_path / "trick.eval", parts + [("samples/..\\..\\w_epoch_1.json", sample)])
    data = tpsviz.load(bad)
    assert len(data.trajectories) == N_SAMPLES and "w-epoch1" not in set(data.trajectories["trajectory_id"])
    (note,) = [n for n in data.notes if "skipped" in n]
    assert note.startswith("1 member under samples/ skipped: not a sample name Inspect writes")
    assert "'samples/..\\\\..\\\\w_epoch_1.json'" in note  # shown escaped, as every member name
    code, out = cli(capsys, bad)
    assert code == 0 and "1 member under samples/ skipped" in out


def test_every_other_name_under_samples_is_skipped_and_counted(logs, tmp_path):
    """Ids with ``/``, ``..`` or a backslash, a leading slash, a stray file, and a chunked sample's part
    without its ``sample.json``: each skipped, all counted; a folder entry holds nothing and is not a
    member."""
    parts = members(logs["eval"])
    sample = dict(parts)["samples/2_epoch_1.json"]
    odd = ["samples/a/b_epoch_1.json", "samples/.._epoch_1.json", "samples/x..y_epoch_1.json",
           "samples//abs_epoch_1.json", "samples/c\\d_epoch_1.json", "samples/readme.txt",
           "samples/2_epoch_x.json", "samples/y_epoch_1/messages/0.json"]
    bad = repack(tmp_path / "odd.eval", parts + [(n, altered(sample, id=f"odd{i}")) for i, n in enumerate(odd)]
                 + [("samples/", b"")])
    data = tpsviz.load(bad)
    assert len(data.trajectories) == N_SAMPLES
    (note,) = [n for n in data.notes if "skipped" in n]
    assert note.startswith(f"{len(odd)} members under samples/ skipped: not sample names Inspect writes (")
    assert note.endswith(", …)")  # three named, the rest counted


def test_sample_members_sorts_names_as_inspect_writes_them():
    names = ["header.json", "samples/0_epoch_1.json", "samples/q 7: é?_epoch_2.json", "samples/",
             "samples/s_epoch_1/sample.json", "samples/s_epoch_1/messages/0.json", "samples/s_epoch_1/events/0.json",
             "samples/s_epoch_1/skeleton.json", "samples/s_epoch_1/events/stats.json",
             "samples/t_epoch_1/messages/0.json", "samples/s_epoch_1/../x.json", "samples/..\\w_epoch_1.json",
             "reductions.json", "_journal/start.json"]
    monoliths, shells, skipped = sample_members(names)
    assert monoliths == ["samples/0_epoch_1.json", "samples/q 7: é?_epoch_2.json"]
    assert shells == ["samples/s_epoch_1"]
    assert sorted(skipped) == sorted(["samples/t_epoch_1/messages/0.json", "samples/s_epoch_1/../x.json",
                                      "samples/..\\w_epoch_1.json"])


def test_a_chunked_sample_with_a_duplicated_chunk_is_malformed(logs, tmp_path):
    parts = members(logs["chunked"])
    chunk = next(n for n, _ in parts if "/messages/" in n)
    bad = repack(tmp_path / "chunk.eval", parts + [(chunk, dict(parts)[chunk])])
    with pytest.raises(LogFormatError, match="appears twice"):
        tpsviz.load(bad)
