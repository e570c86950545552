"""The layering of docs/architecture.md, read from the source: which layer may import which,
no import circles, one module that imports Kompute. Every import counts, those inside
functions and under `if TYPE_CHECKING:` too: a circle hidden in a function is still one
a reader has to untangle."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# the public vocabulary every layer uses; the package root holds nothing else
VOCABULARY = {f"vksycl.{m}" for m in ("access", "config", "exceptions", "info", "properties",
                                      "ranges", "types", "_version")}
# each layer and the layers it may import, lowest first (a layer may import itself)
ALLOWED = {
    "spirv_gen": set(),
    "vocabulary": set(),
    "vksycl.compiler": {"spirv_gen", "vocabulary"},
    "vksycl.runtime": {"spirv_gen", "vocabulary"},
    "vksycl.graph": {"vocabulary", "vksycl.runtime"},
    "vksycl.kernels": {"spirv_gen", "vocabulary", "vksycl.compiler", "vksycl.runtime"},
    "vksycl.ext": {"spirv_gen", "vocabulary", "vksycl.compiler", "vksycl.runtime",
                   "vksycl.graph", "vksycl.kernels"},
}
# the package's own front doors sit above every layer, with what chooses how its modules
# load (compiled or interpreted), which the root imports first
TOP = {"vksycl", "vksycl.__main__", "vksycl.mypyc_modules"}
# the patched Kompute binding, a compiled module private to vksycl (no source here)
KOMPUTE = "vksycl._kp"
# vksycl's own C (native/), on CPython's API alone: part of the vocabulary, which builds
# on it, so every layer may import it
NATIVE = "vksycl._native"

Edge = tuple[str, str, int]  # (imported module, importing file, line)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, module: str, known: set[str]) -> list[tuple[str, int]]:
    """Every module `path` imports, resolved to a module of `known` where it is one (a
    name imported from a package is the package's submodule when it has one)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                found.append((sub if sub in known or sub == KOMPUTE else source, node.lineno))
    return found


def import_graph(root: Path) -> dict[str, list[Edge]]:
    """The imports of every module of vksycl and spirv_gen under `root`."""
    files = {module_name(p, root): p for top in ("vksycl", "spirv_gen")
             for p in sorted((root / top).rglob("*.py"))}
    known = set(files)
    return {m: [(t, str(p.relative_to(root)), line) for t, line in imports_of(p, m, known)]
            for m, p in files.items()}


def layer_of(module: str) -> str | None:
    if module in VOCABULARY or module == NATIVE:
        return "vocabulary"
    if module in TOP:
        return "top"
    for layer in ALLOWED:
        if module == layer or module.startswith(layer + "."):
            return layer
    return None


def layer_violations(graph: dict[str, list[Edge]]) -> list[str]:
    """Imports that run from a layer to one it may not use, and modules in no layer."""
    found = []
    for module, edges in graph.items():
        layer = layer_of(module)
        if layer is None:
            found.append(f"{module} belongs to no layer")
            continue
        if layer == "top":
            continue
        for target, path, line in edges:
            to = layer_of(target)
            if target.partition(".")[0] not in ("vksycl", "spirv_gen") or to == layer or \
                    target == KOMPUTE:
                continue
            if to not in ALLOWED[layer]:
                found.append(f"{path}:{line}: {layer} imports {target} ({to})")
    return found


def import_cycles(graph: dict[str, list[Edge]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w, _, _ in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for v in graph:
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return cycles


def kompute_importers(graph: dict[str, list[Edge]]) -> list[str]:
    return sorted({m for m, edges in graph.items() for t, _, _ in edges
                   if t == KOMPUTE})


def test_no_layer_imports_one_above_it():
    assert layer_violations(import_graph(ROOT)) == []


def test_no_import_circles():
    assert import_cycles(import_graph(ROOT)) == []


def test_only_the_engine_imports_kompute():
    assert kompute_importers(import_graph(ROOT)) == ["vksycl.runtime.engine"]


def test_the_package_root_holds_only_the_public_vocabulary():
    loose = {module_name(p, ROOT) for p in (ROOT / "vksycl").glob("*.py")}
    assert loose - TOP == VOCABULARY


def test_the_fuzzer_uses_only_the_public_api():
    """fuzz/ tests vksycl from outside, as a user's program would: it imports `vksycl` and
    `vksycl.ext.oneapi`, never a module inside them."""
    public = {"vksycl", "vksycl.ext.oneapi", "vksycl.ext.oneapi.experimental"}
    found = [f"{path.relative_to(ROOT)}:{line}: {target}"
             for path in sorted((ROOT / "fuzz").rglob("*.py"))
             for target, line in imports_of(path, module_name(path, ROOT), set())
             if target.partition(".")[0] == "vksycl" and target not in public]
    assert found == []


def documented_orders(text: str, modules: set[str]) -> dict[str, list[str]]:
    """The modules each folder's paragraph under "Inside each folder" names, in the order
    it first names them. A name in backquotes is a module of the folder, or of one of its
    sub-packages when the folder has no module of that name (`frontend/`'s `base`)."""
    section = text.split("## Inside each folder", 1)[1].split("\n## ", 1)[0]
    orders = {}
    for folder, body in re.findall(r"\*\*`([\w/]+)/`\*\*(.*?)(?=\n\*\*`|\Z)", section, re.S):
        package = folder.replace("/", ".")
        found: list[str] = []
        for token in re.findall(r"`([^`]+)`", body):
            name = token.rstrip("/").split(".")[0]
            nested = sorted(m for m in modules
                            if m.startswith(package + ".") and m.endswith("." + name))
            candidates = [f"{package}.{name}", *nested]
            module = next((m for m in candidates if m in modules), None)
            if module is not None and module not in found:
                found.append(module)
        orders[package] = found
    return orders


def test_the_architecture_page_lists_each_folder_top_to_bottom():
    graph = import_graph(ROOT)
    orders = documented_orders((ROOT / "docs" / "architecture.md").read_text(), set(graph))
    assert set(orders) == {"spirv_gen", "vksycl.compiler", "vksycl.runtime", "vksycl.graph",
                           "vksycl.kernels"}
    for package, order in orders.items():
        inside = {m for m in graph if m.startswith(package + ".")}
        assert set(order) == inside, f"{package}: unlisted {inside - set(order)}"
        place = {m: i for i, m in enumerate(order)}
        upward = [f"{m} imports {t}, listed below it" for m in order
                  for t, _, _ in graph[m] if place.get(t, -1) > place[m]]
        assert upward == []


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_checks_find_an_upward_import_a_circle_and_a_second_kompute_user(tmp_path):
    _tree(tmp_path, {
        "spirv_gen/__init__.py": "",
        "vksycl/__init__.py": "from .runtime import queue\n",
        "vksycl/exceptions.py": "",
        "vksycl/compiler/__init__.py": "",
        "vksycl/compiler/ir.py": "from ..exceptions import errc\n",
        "vksycl/runtime/__init__.py": "",
        "vksycl/runtime/engine.py": "from .. import _kp as kp\n",
        "vksycl/runtime/queue.py": "from .handler import handler\n",
        "vksycl/runtime/handler.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from .queue import queue\n"
            "def build():\n    from ..compiler import ir\n    import vksycl._kp\n"),
        "vksycl/loose.py": "",
    })
    graph = import_graph(tmp_path)
    assert layer_violations(graph) == [
        "vksycl.loose belongs to no layer",
        "vksycl/runtime/handler.py:5: vksycl.runtime imports vksycl.compiler.ir "
        "(vksycl.compiler)",
    ]
    assert import_cycles(graph) == [["vksycl.runtime.handler", "vksycl.runtime.queue"]]
    assert kompute_importers(graph) == ["vksycl.runtime.engine", "vksycl.runtime.handler"]


def test_the_public_api_tests_import_only_the_public_api():
    """tests/public_api.txt lists what ci/test_wheel.sh runs against an installed wheel:
    test files importing vksycl's public modules only, and no module of the checkout."""
    known = set(import_graph(ROOT))
    listed = [line for line in (ROOT / "tests" / "public_api.txt").read_text().splitlines()
              if line and not line.startswith("#")]
    checkout = {p.stem for p in (ROOT / "tests").glob("*.py")} | {"tests", "fuzz", "spirv_gen"}
    private = []
    for name in listed:
        path = ROOT / "tests" / name
        for target, line in imports_of(path, f"tests.{path.stem}", known):
            top = target.partition(".")[0]
            public = target == "vksycl" or target.startswith("vksycl.ext")
            if (top == "vksycl" and not public) or top in checkout - {"vksycl"}:
                private.append(f"{name}:{line}: {target}")
    assert listed and private == []
