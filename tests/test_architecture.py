"""The shape of the code (docs/architecture.md, "Layers"), measured from its imports by
tests/importgraph.py: every import counts, including those inside functions."""

from __future__ import annotations

import ast
import re

import pytest

import importgraph as ig


@pytest.fixture(scope="module")
def graph():
    return ig.build()


def test_no_import_circles(graph):
    assert ig.circles(graph) == []


def test_no_import_runs_back_up_the_layers(graph):
    assert ig.upward(graph) == []


def test_every_package_has_a_layer(graph):
    """Each package at the top of tpsviz/ has its rank in the import rules (a module at the top
    belongs to the public API's layer)."""
    top = {".".join(m.split(".")[:2]) for m, p in graph.files.items()
           if m.startswith("tpsviz.") and m.count(".") >= 2 or p.name == "__init__.py" and m.count(".") == 1}
    assert sorted(t for t in top if t not in ig.LAYERS) == []


def test_no_private_name_is_imported_across_modules(graph):
    assert graph.private == []


def test_no_file_over_the_limit(graph):
    assert ig.long_files(graph) == []


def test_no_function_over_the_limit(graph):
    assert sorted(graph.long_functions, reverse=True) == []


def test_few_entries_at_the_top_of_the_core():
    # issue 35 asks for "at most ~12": eleven packages by concern, __init__ and __main__
    assert len(ig.top_entries()) <= 13, ig.top_entries()


def test_every_package_says_what_it_owns(graph):
    bare = [m for m, p in graph.files.items()
            if p.name == "__init__.py" and m.startswith("tpsviz")
            and not ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))]
    assert bare == []


def test_the_core_never_imports_streamlit(graph):
    offenders = [m for m, p in graph.files.items() if m.startswith("tpsviz")
                 and re.search(r"^\s*(import|from)\s+streamlit\b", p.read_text(encoding="utf-8"), re.M)]
    assert offenders == []


def test_the_documented_layers_match_the_code():
    """Every layer of the import rules appears in the picture of docs/architecture.md, in the
    same order from bottom to top."""
    text = (ig.ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    picture = text.split("<!-- layers -->")[1]
    names = [k for k in ig.LAYERS if k.startswith("tpsviz.")]
    positions = []
    for name in names:
        short = name.split(".", 1)[1] + "/"
        assert short in picture, f"{short} is not in the layer picture"
        positions.append((ig.LAYERS[name], picture.index(short)))
    # the picture is drawn top layer first: a higher rank is drawn above (earlier in the text)
    for (ra, pa), (rb, pb) in zip(positions, positions[1:]):
        if ra < rb:
            assert pa > pb
