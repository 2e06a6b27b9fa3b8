"""The modules of gausskl import each other without a cycle: every import statement of every
module (function-local ones too) read from its source, the graph searched for a cycle."""

from __future__ import annotations

import ast
import pathlib

import gausskl

ROOT = pathlib.Path(gausskl.__file__).parent


def _modules() -> dict:
    """Every module of the package by dotted name: its source file, or None for an extension
    module (a leaf: it imports none of the package)."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    for path in sorted([*ROOT.rglob("*.so"), *ROOT.rglob("*.pyd")]):
        parts = path.relative_to(ROOT.parent).parts
        out[".".join((*parts[:-1], path.name.split(".")[0]))] = None
    return out


def _imports(name: str, path: pathlib.Path, modules: dict) -> set:
    """The package's modules that the module `name` imports anywhere in its source."""
    if path is None:
        return set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # from X import Y: the module X.Y where there is one, else X
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                       for a in node.names]
        else:
            continue
        found.update(t for t in targets if t in modules and t != name)
    return found


def _cycle(graph: dict):
    """One cycle of the graph as a list of modules (first repeated at the end), or None."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, path)
                if found:
                    return found
        path.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


def test_the_package_has_modules_to_check():
    modules = _modules()
    assert {"gausskl", "gausskl._ext", "gausskl._ops", "gausskl._dispatch", "gausskl._autograd",
            "gausskl._compile", "gausskl.dask"} <= set(modules)


def test_no_import_cycle_among_the_modules():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_a_cycle_is_found(tmp_path):
    # The search itself: a -> b -> c -> a is reported.
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
