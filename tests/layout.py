"""The package's shape, read from its source with ``ast`` (nothing is imported or run):
the walker the layout tests use (:mod:`tests.unit.test_package_layout`), and the counts
the re-cut of issue 32 is measured by, printed by::

    python -m tests.layout [--json] [--root DIR]

``--root`` measures another checkout (``git worktree add /tmp/base <commit>``), so a
before and an after are taken the same way.

What is counted:

* ``arrows_up``: import statements (lazy ones included, ``TYPE_CHECKING`` ones not) from
  a room to a room above it in :data:`ROOMS`;
* ``circles``: groups of product modules that import each other round (strongly
  connected, two or more modules), by the imports that run at import time, and by all
  imports that run (lazy ones included);
* ``modules_over_500_lines``, ``functions_over_50_lines``;
* ``any_parameters``: parameters annotated with a bare ``Any``;
* ``literal_families`` and ``enums``: the named sentinel families;
* ``executor_files``: the product modules a Spark task loads, from
  ``executor/group_task.py`` and ``executor/stage_records.py`` through every import
  that runs;
* ``jobconfig_parameters``: parameters typed with the whole ``JobConfig``.
"""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

PACKAGE = Path(__file__).resolve().parents[1] / "storm_kafka_compat"
#: the rooms from the ground up (a top-level module is a room of its own): config time,
#: Kafka and the offsets' places, the contract between the sides (batch), what users
#: write, the executor side, the spout and the runtime, the driver side, the front ends,
#: the test doubles and the operator tools, then the workshop next door (embedded servers,
#: demo, bench) and the commands. A room imports only rooms below it, lazily or not
#: (docs/architecture.md)
ROOMS = ("errors", "structs", "config", "kafka", "discovery", "offsets", "batch", "topology",
         "trident", "executor", "spout", "runtime", "flux", "java", "engine", "streaming",
         "testing", "tools", "workshop", "cli")
#: where a Spark task's code starts
EXECUTOR_ENTRIES = ("storm_kafka_compat.executor.group_task",
                    "storm_kafka_compat.executor.stage_records")

Module = Tuple[str, Path, ast.Module]


def modules(package: Path = PACKAGE) -> Iterator[Module]:
    """Every module of ``package``: its dotted name, its path, its syntax tree."""
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path, ast.parse(path.read_text(), str(path))


def imported(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name ``node`` imports from."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _type_checking_blocks(tree: ast.Module) -> Set[int]:
    """The ids of the import nodes under ``if TYPE_CHECKING:`` (never run)."""
    out: Set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out.update(id(n) for child in node.body for n in ast.walk(child))
    return out


def imports(name: str, path: Path, tree: ast.Module, *, eager_only: bool = False,
            typing_too: bool = True) -> Iterator[Tuple[str, int]]:
    """Every module ``name`` imports (lazily too, unless ``eager_only``: only the
    imports at module level), with its line; ``from x import y`` yields ``x.y`` too,
    which names a module when ``y`` is one."""
    hidden = set() if typing_too else _type_checking_blocks(tree)
    nodes = (ast.iter_child_nodes(tree) if eager_only else ast.walk(tree))
    for node in nodes:
        if id(node) in hidden:
            continue
        if isinstance(node, ast.ImportFrom):
            source = imported(name, path.name == "__init__.py", node)
            yield source, node.lineno
            yield from ((f"{source}.{alias.name}", node.lineno) for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif eager_only and isinstance(node, (ast.If, ast.Try)):
            if not typing_too and isinstance(node, ast.If) and \
                    "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            sub = ast.Module(body=list(ast.iter_child_nodes(node)), type_ignores=[])
            yield from imports(name, path, sub, eager_only=True, typing_too=typing_too)


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _graph(mods: List[Module], *, eager_only: bool) -> Dict[str, Set[str]]:
    """Module -> the product modules it imports. ``from package import module`` is an
    arrow to the module only (the package's ``__init__`` runs first whatever is
    imported: :func:`_closure` follows that)."""
    names = {name for name, _, _ in mods}
    graph: Dict[str, Set[str]] = {name: set() for name in names}
    for name, path, tree in mods:
        found = list(imports(name, path, tree, eager_only=eager_only, typing_too=False))
        targets = {t for t, _ in found}
        for target in targets:
            if target not in names or target == name:
                continue
            submodules = {t for t in targets if t.startswith(target + ".") and t in names}
            names_too = {t for t in targets if t.startswith(target + ".")
                         and t.count(".") == target.count(".") + 1}
            if submodules and names_too <= submodules:
                continue        # only submodules are imported from the package
            graph[name].add(target)
    return graph


def _strongly_connected(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Tarjan's components of two or more nodes, iteratively."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    out: List[List[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def _closure(graph: Dict[str, Set[str]], starts: Tuple[str, ...]) -> Set[str]:
    seen: Set[str] = set()
    todo = [s for s in starts if s in graph]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        # a module's import runs its package's __init__ first
        parent = name.rsplit(".", 1)[0]
        todo.extend(graph[name] | ({parent} if parent in graph else set()))
    return seen


def circles(package: Path = PACKAGE, *, eager_only: bool) -> List[List[str]]:
    """The groups of modules of ``package`` importing each other round (see the
    module docstring)."""
    return _strongly_connected(_graph(list(modules(package)), eager_only=eager_only))


def _annotation(node: Optional[ast.expr]) -> str:
    return "" if node is None else ast.unparse(node).strip("'\"")


def counts(package: Path = PACKAGE) -> Dict[str, object]:
    """The measures of the module docstring, for ``package``."""
    mods = list(modules(package))
    up = sorted({f"{name}:{line} -> {room(t)}" for name, path, tree in mods if room(name)
                 for t, line in imports(name, path, tree, typing_too=False)
                 if t.startswith("storm_kafka_compat.") and room(t) in ROOMS
                 and room(name) in ROOMS and ROOMS.index(room(t)) > ROOMS.index(room(name))})
    long_modules = sorted((len(path.read_text().splitlines()), name) for name, path, _ in mods
                          if len(path.read_text().splitlines()) > 500)
    functions = []
    any_params = 0
    jobconfig = 0
    literals = []
    enums = []
    for name, _, tree in mods:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > 50:
                    functions.append(f"{name}.{node.name}")
                args = node.args
                for arg in args.posonlyargs + args.args + args.kwonlyargs:
                    any_params += _annotation(arg.annotation) == "Any"
                    jobconfig += _annotation(arg.annotation) in ("JobConfig", "'JobConfig'")
            elif (isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript)
                  and _annotation(node.value.value) in ("Literal", "typing.Literal")):
                literals.append(f"{name}.{ast.unparse(node.targets[0])}")
            elif isinstance(node, ast.ClassDef) and any(
                    _annotation(b).endswith("Enum") for b in node.bases):
                enums.append(f"{name}.{node.name}")
    eager, every = _graph(mods, eager_only=True), _graph(mods, eager_only=False)
    executor = _closure(every, EXECUTOR_ENTRIES)
    return {
        "modules": len(mods),
        "lines": sum(len(path.read_text().splitlines()) for _, path, _ in mods),
        "arrows_up": up,
        "circles_eager": _strongly_connected(eager),
        "circles_all": _strongly_connected(every),
        "modules_over_500_lines": [f"{name} ({n})" for n, name in long_modules],
        "functions_over_50_lines": len(functions),
        "any_parameters": any_params,
        "literal_families": literals,
        "enums": enums,
        "executor_files": len(executor),
        "executor_rooms": sorted({room(m) for m in executor}),
        "jobconfig_parameters": jobconfig,
    }


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--root", type=Path, default=PACKAGE.parent,
                        help="the checkout to measure (default: this one)")
    args = parser.parse_args(argv)
    found = counts(args.root / "storm_kafka_compat")
    if args.json:
        print(json.dumps(found, indent=1))
        return 0
    for key, value in found.items():
        if isinstance(value, list):
            print(f"{key}: {len(value)}")
            for item in value:
                print(f"    {item}")
        else:
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
