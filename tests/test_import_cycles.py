"""No two project modules import each other, directly or through others, lazy imports (inside functions) included.

The modules are found by walking the tree: every ``.py`` file of the top-level packages (folders with an
``__init__.py``: ``envs``, ``agents``, ``distill``), of the top-level script folders (``benchmarks``,
``examples``: run as ``python benchmarks/x.py``, so a bare ``import runs`` there is the sibling
``benchmarks/runs.py``) and the root scripts (``train.py``, ``evaluate.py``, ``export.py``); ``tests/`` is not
part of it. Each file is parsed with :mod:`ast` (nothing is imported) and each ``import a.b`` /
``from a.b import c`` becomes an edge to ``a.b.c`` when that is a module, else to ``a.b`` (relative
imports resolved against the file's package). A cycle is a strongly connected component of two or more
modules; the failure names every edge inside it with its file and line.

Folders follow the same rule: the imports between modules of different folders (``agents/evaluation`` ->
``agents/export``) make a graph of folders, and no two folders import each other, even through modules that do not
(:func:`folder_graph`).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
NOT_PROJECT = {"tests"}  # top-level folders whose files are not project modules


class Edge(NamedTuple):
    """``path:line`` imports ``target`` (``lazy``: the import runs inside a function)."""

    target: str
    path: str
    line: int
    lazy: bool


def project_modules(root: Path) -> dict[str, Path]:
    """Module name -> file for every project ``.py`` file below ``root`` (module docstring)."""
    modules: dict[str, Path] = {}
    for path in sorted(root.glob("*.py")):
        modules[path.stem] = path
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if folder.name in NOT_PROJECT:
            continue
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _is_package(name: str, modules: dict[str, Path]) -> bool:
    return modules[name].name == "__init__.py"


class _Imports(ast.NodeVisitor):
    """The imports of one file: (module named, names imported from it, line, lazy, relative level)."""

    def __init__(self) -> None:
        self.found: list[tuple[str, tuple[str, ...], int, bool, int]] = []
        self._depth = 0  # how many function bodies we are in

    def _function(self, node: ast.AST) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function  # noqa: N815 - ast.NodeVisitor naming

    def visit_Import(self, node: ast.Import) -> None:  # noqa: N802 - ast.NodeVisitor naming
        for alias in node.names:
            self.found.append((alias.name, (), node.lineno, self._depth > 0, 0))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:  # noqa: N802 - ast.NodeVisitor naming
        names = tuple(alias.name for alias in node.names)
        self.found.append((node.module or "", names, node.lineno, self._depth > 0, node.level))


def _candidates(name: str, script_dir: str | None) -> list[str]:
    """The module names ``name`` may mean: in a script folder, first the sibling (``sys.path[0]`` is its folder)."""
    return [f"{script_dir}.{name}", name] if script_dir else [name]


def _module(name: str, modules: dict[str, Path], script_dir: str | None) -> str | None:
    """The project module ``name`` is, or None."""
    return next((c for c in _candidates(name, script_dir) if c in modules), None)


def _resolve(name: str, modules: dict[str, Path], script_dir: str | None) -> str | None:
    """The project module ``import name`` runs last (``name``'s longest prefix that is one), or None (not ours)."""
    for candidate in _candidates(name, script_dir):
        parts = candidate.split(".")
        for end in range(len(parts), 0, -1):
            if ".".join(parts[:end]) in modules:
                return ".".join(parts[:end])
    return None


def import_graph(root: Path) -> dict[str, list[Edge]]:
    """Module -> its imports of project modules (self-imports left out), for the tree below ``root``."""
    modules = project_modules(root)
    graph: dict[str, list[Edge]] = {}
    for module, path in modules.items():
        visitor = _Imports()
        visitor.visit(ast.parse(path.read_text(), filename=str(path)))
        in_package = module.split(".")[0] in modules and _is_package(module.split(".")[0], modules)
        script_dir = None if in_package or "." not in module else module.rsplit(".", 1)[0]
        package = module if _is_package(module, modules) else module.rpartition(".")[0]
        edges: list[Edge] = []
        for name, names, line, lazy, level in visitor.found:
            if level:  # relative: against the importer's package, ``level - 1`` steps up
                parts = package.split(".")
                name = ".".join(parts[: len(parts) - (level - 1)] + ([name] if name else []))
            if not names:  # import a.b.c
                targets = [_resolve(name, modules, script_dir)]
            else:  # from a.b import c: the submodule a.b.c, else a.b itself
                targets = [_module(f"{name}.{n}" if name else n, modules, script_dir) or
                           _resolve(name, modules, script_dir) for n in names]
            for target in dict.fromkeys(targets):
                if target is not None and target != module:
                    edges.append(Edge(target, path.relative_to(root).as_posix(), line, lazy))
        graph[module] = edges
    return graph


def cycles(graph: dict[str, list[Edge]]) -> list[list[str]]:
    """The strongly connected components of two or more modules (Tarjan), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for edge in graph.get(node, ()):
            if edge.target not in index:
                visit(edge.target)
                low[node] = min(low[node], low[edge.target])
            elif edge.target in on_stack:
                low[node] = min(low[node], index[edge.target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def describe(graph: dict[str, list[Edge]], found: list[list[str]]) -> str:
    """Each cycle's modules and the imports that close it, ``file:line`` (lazy ones marked)."""
    lines = []
    for component in found:
        members = set(component)
        lines.append(f"import cycle among {', '.join(component)}:")
        for module in component:
            for edge in graph[module]:
                if edge.target in members:
                    lazy = " (inside a function)" if edge.lazy else ""
                    lines.append(f"  {edge.path}:{edge.line} imports {edge.target}{lazy}")
    return "\n".join(lines)


def folder_graph(root: Path) -> dict[str, list[Edge]]:
    """Folder -> its imports of other folders' modules (the edges of :func:`import_graph` between folders; a folder
    is the directory of a module's file, ``agents`` for ``agents/factory.py``, ``.`` for the root scripts)."""
    modules = project_modules(root)

    def folder(module: str) -> str:
        return modules[module].parent.relative_to(root).as_posix()

    graph: dict[str, list[Edge]] = {folder(m): [] for m in modules}
    for module, edges in import_graph(root).items():
        graph[folder(module)] += [edge._replace(target=folder(edge.target)) for edge in edges
                                  if folder(edge.target) != folder(module)]
    return graph


def test_no_module_imports_one_that_imports_it_back():
    graph = import_graph(ROOT)
    assert {"envs", "agents", "distill", "train", "evaluate", "export"} <= set(graph)
    assert len(graph) > 50
    found = cycles(graph)
    assert not found, "project modules import each other (break each cycle):\n" + describe(graph, found)


def test_no_folder_imports_one_that_imports_it_back():
    graph = folder_graph(ROOT)
    assert {"envs", "distill", "coach", "coach/llm", "agents", "agents/students", "agents/evaluation"} <= set(graph)
    found = cycles(graph)
    assert not found, "folders import each other (move the module that closes each cycle):\n" + describe(graph, found)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_cycle_finder_finds_lazy_relative_and_script_cycles(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "import os\nfrom pkg import b\n",  # b is a submodule: an edge to pkg.b
        "pkg/b.py": "X = 1\n\ndef f():\n    from .a import g  # lazy and relative\n",
        "pkg/c.py": "from pkg.a import os\nfrom pkg import c\n",  # into a cycle, not in one; a self-import
        "pkg/sub/__init__.py": "from .. import c\nfrom ..d import Y\n",
        "pkg/d.py": "import pkg.sub.e\nY = 2\n",
        "pkg/sub/e.py": "import numpy\n",
        "scripts/runs.py": "import main\n",  # the root script main.py, not a sibling
        "scripts/job.py": "import runs\n",
        "main.py": "def run():\n    import scripts.job\n",
        "tests/test_x.py": "import pkg.a\nimport pkg.b\n",  # not project modules
    })
    graph = import_graph(tmp_path)
    assert set(graph) == {"pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.sub", "pkg.sub.e", "scripts.runs",
                          "scripts.job", "main"}
    assert [e.target for e in graph["pkg.c"]] == ["pkg.a"]
    assert {e.target for e in graph["pkg.sub"]} == {"pkg.c", "pkg.d"} and graph["pkg.d"][0].target == "pkg.sub.e"
    assert graph["scripts.job"] == [Edge("scripts.runs", "scripts/job.py", 1, False)]
    found = cycles(graph)
    assert found == [["main", "scripts.job", "scripts.runs"], ["pkg.a", "pkg.b"]]
    message = describe(graph, found)
    assert "pkg/b.py:4 imports pkg.a (inside a function)" in message
    assert "pkg/a.py:2 imports pkg.b\n" in message and "main.py:2 imports scripts.job (inside a function)" in message

    folders = folder_graph(tmp_path)
    assert {e.target for e in folders["pkg"]} == {"pkg/sub"} and {e.target for e in folders["pkg/sub"]} == {"pkg"}
    assert cycles(folders) == [[".", "scripts"], ["pkg", "pkg/sub"]]  # pkg/d.py -> pkg/sub/, pkg/sub/__init__.py -> pkg/

    _write(tmp_path, {"pkg/b.py": "X = 1\n", "main.py": "import pkg\n"})  # both module cycles broken
    assert cycles(import_graph(tmp_path)) == []
    assert cycles(folder_graph(tmp_path)) == [["pkg", "pkg/sub"]]  # pkg/d.py -> pkg/sub/, pkg/sub/__init__.py -> pkg
