"""The shape of the code, measured from its imports (docs/architecture.md, "Layers").

Run ``python tests/importgraph.py`` for the table the architecture test checks: import circles,
imports that run back up the layers, private names imported across modules, files over 600 lines,
functions over 80 lines and the entries at the top of ``tpsviz/``. Every import counts, including
those inside functions.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: rank of each package of the core; a module may import only from its own package or a lower rank,
#: never from another package of the same rank
LAYERS = {
    "tpsviz.core": 0,
    "tpsviz.io": 1,
    "tpsviz.synthetic": 2,
    "tpsviz.diagnostics": 3,
    "tpsviz.outcomes": 4,
    "tpsviz.engines": 4,
    "tpsviz.forecasts": 4,  # forecasts for a log without any: references, elicitation, replay
    "tpsviz.report": 5,
    "tpsviz.evaluation": 6,  # tpsviz.evaluate(): what the CLI prints, as one Python object
    "tpsviz.cli": 7,
    "tpsviz": 8,  # the public API: tpsviz/__init__.py and __main__.py
    "pages._ui": 9,
    "pages.views": 10,
    "pages": 10,
}
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80


@dataclass
class Graph:
    """Modules of ``tpsviz`` and ``pages`` and the imports between them."""
    files: dict[str, Path] = field(default_factory=dict)
    edges: dict[str, set[str]] = field(default_factory=dict)
    private: list[tuple[str, str, str]] = field(default_factory=list)
    in_functions: int = 0
    long_functions: list[tuple[int, str, str]] = field(default_factory=list)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _targets(graph: Graph, module: str, node, is_package: bool) -> list[tuple[str, str | None]]:
    """(imported module, imported name or None) for one import statement, inside our packages."""
    if isinstance(node, ast.Import):
        pairs = [(a.name, None) for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = module.split(".")[: len(module.split(".")) - (node.level - (1 if is_package else 0))]
            base = ".".join(parts + ([node.module] if node.module else []))
        pairs = [(base, a.name) for a in node.names]
    out = []
    for base, name in pairs:
        if name and f"{base}.{name}" in graph.files:
            out.append((f"{base}.{name}", None))
            continue
        parts = base.split(".")
        while parts and ".".join(parts) not in graph.files:
            parts.pop()
        if parts:
            out.append((".".join(parts), name))
    return out


def build(packages=("tpsviz", "pages")) -> Graph:
    graph = Graph()
    for pkg in packages:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            graph.files[module_name(path)] = path
    for module, path in graph.files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_package = path.name == "__init__.py"
        edges = graph.edges.setdefault(module, set())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    graph.long_functions.append((n, module, node.name))
                graph.in_functions += sum(
                    1 for sub in ast.walk(node) if isinstance(sub, (ast.Import, ast.ImportFrom))
                    for t, _ in _targets(graph, module, sub, is_package) if t != module)
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target, name in _targets(graph, module, node, is_package):
                    if target == module:
                        continue
                    edges.add(target)
                    if name and name.startswith("_") and not name.startswith("__"):
                        graph.private.append((module, target, name))
    return graph


def circles(graph: Graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = 0
    for root in graph.files:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.edges.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def layer_of(module: str) -> str:
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        key = ".".join(parts[:i])
        if key in LAYERS:
            return key
    return module


def upward(graph: Graph) -> list[tuple[str, str]]:
    """Imports from a higher layer, or between two packages of the same rank."""
    bad = []
    for module, targets in graph.edges.items():
        a = layer_of(module)
        for target in targets:
            b = layer_of(target)
            if a == b:
                continue
            if LAYERS.get(b, 99) > LAYERS.get(a, 99) or (LAYERS.get(b) == LAYERS.get(a)):
                bad.append((module, target))
    return sorted(bad)


def long_files(graph: Graph) -> list[tuple[int, str]]:
    out = []
    for module, path in graph.files.items():
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_FILE_LINES:
            out.append((n, module))
    return sorted(out, reverse=True)


def top_entries() -> list[str]:
    return sorted(p.name for p in (ROOT / "tpsviz").iterdir()
                  if not p.name.startswith(".") and p.name != "__pycache__")


def main() -> None:
    g = build()
    rows = [("modules", len(g.files)), ("imports (arrows)", sum(map(len, g.edges.values()))),
            ("import circles", len(circles(g))), ("imports running back up", len(upward(g))),
            ("private names imported across modules", len(g.private)),
            ("imports inside functions", g.in_functions),
            (f"files over {MAX_FILE_LINES} lines", len(long_files(g))),
            (f"functions over {MAX_FUNCTION_LINES} lines", len(g.long_functions)),
            ("entries at the top of tpsviz/", len(top_entries()))]
    for k, v in rows:
        print(f"{k:42s} {v}")
    verbose = "-v" in sys.argv
    for c in circles(g):
        print("circle:", " ".join(c))
    for a, b in upward(g):
        print("up:", a, "->", b)
    for m, t, n in g.private:
        print("private:", m, "takes", n, "from", t)
    for n, m in long_files(g):
        print(f"file: {m} {n}")
    for n, m, f in sorted(g.long_functions, reverse=True) if verbose else []:
        print(f"function: {m}.{f} {n}")


if __name__ == "__main__":
    main()
