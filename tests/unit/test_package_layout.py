"""What the redesigns of issues 24 and 32 made true of the package's shape, held by
reading its source: no function longer than 80 lines, no ``_private`` name imported from
another module, no module of the product floor importing the test tools or the servers or
naming a particular broker, and the rooms stacked by when and where their lines run, each
importing only the rooms below it."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, List, Tuple

PACKAGE = Path(__file__).resolve().parents[2] / "storm_kafka_compat"
MAX_FUNCTION_LINES = 80
# the packages a job runs on; they reach embedded servers and test tools never
FLOOR = ("engine", "spout", "offsets", "kafka", "discovery", "topology", "streaming")
TOOLS = ("storm_kafka_compat.testing", "storm_kafka_compat.servers")
#: the rooms from the ground up (a top-level module is a room of its own): config time,
#: Kafka and the offsets' places, the contract between the sides (batch), what users
#: write, the executor side, the spout and the runtime, the driver side, the front ends,
#: then the workshop (servers, test tools, embedded servers, bench) and the commands. A
#: room imports only rooms below it, lazily or not (docs/architecture.md)
ROOMS = ("errors", "structs", "config", "kafka", "discovery", "offsets", "batch", "topology",
         "trident", "executor", "spout", "runtime", "flux", "java", "engine", "streaming",
         "servers", "testing", "embedded", "tools", "bench", "cli")


def _modules() -> Iterator[Tuple[str, Path, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path, ast.parse(path.read_text(), str(path))


def _imported(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name ``node`` imports from."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(name: str, path: Path, tree: ast.Module) -> Iterator[Tuple[str, int]]:
    """Every module ``name`` imports, anywhere in it (lazily too), with its line."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            yield _imported(name, path.name == "__init__.py", node), node.lineno
        elif isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)


def test_no_function_is_longer_than_80_lines() -> None:
    long: List[str] = []
    for name, _, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{name}.{node.name}: {lines} lines")
    assert long == [], "split these along their steps: " + "; ".join(long)


def test_no_private_name_is_imported_from_another_module() -> None:
    private: List[str] = []
    for name, path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = _imported(name, path.name == "__init__.py", node)
                if not source.startswith("storm_kafka_compat"):
                    continue
                private += [f"{name} imports {source}.{alias.name} (line {node.lineno})"
                            for alias in node.names
                            if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert private == [], "make these public names of their module: " + "; ".join(private)


def test_the_product_floor_imports_neither_test_tools_nor_servers() -> None:
    found = [f"{name} imports {t} (line {line})" for name, path, tree in _modules()
             if name.split(".")[1:2] and name.split(".")[1] in FLOOR
             for t, line in _imports(name, path, tree)
             if any(t == tool or t.startswith(tool + ".") for tool in TOOLS)]
    assert found == [], "; ".join(found)


def test_the_product_floor_does_not_know_a_particular_broker() -> None:
    """The floor describes the broker behaviour it handles, never the broker that has it."""
    named = [f"{name} (line {number})" for name, path, _ in _modules()
             if name.split(".")[1:2] and name.split(".")[1] in FLOOR
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if "tansu" in line.lower()]
    assert named == [], "; ".join(named)


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_each_room_imports_only_the_rooms_below_it() -> None:
    rooms = {_room(name) for name, _, _ in _modules()} - {""}
    assert rooms <= set(ROOMS), f"place these rooms in ROOMS: {sorted(rooms - set(ROOMS))}"
    up = [f"{name} imports {t} (line {line})" for name, path, tree in _modules()
          if _room(name) for t, line in _imports(name, path, tree)
          if t.startswith("storm_kafka_compat.") and _room(t) in ROOMS
          and ROOMS.index(_room(t)) > ROOMS.index(_room(name))]
    assert up == [], "these import a room above their own: " + "; ".join(up)


def test_the_executor_side_knows_nothing_of_the_driver_side() -> None:
    """What a Spark task runs is built from the job's pure data: it imports neither the
    driver's loop and runners, nor the spout that plans, nor the runtime that picks."""
    found = [f"{name} imports {t} (line {line})" for name, path, tree in _modules()
             if _room(name) == "executor" for t, line in _imports(name, path, tree)
             if _room(t) in ("engine", "spout", "runtime", "streaming")]
    assert found == [], "; ".join(found)


def test_the_checks_see_what_they_look_for() -> None:
    """The walker resolves relative imports and finds the floor's modules (a check that
    sees nothing would pass whatever the package holds)."""
    names = {name for name, _, _ in _modules()}
    assert {"storm_kafka_compat.engine.driver", "storm_kafka_compat.spout",
            "storm_kafka_compat.executor.task", "storm_kafka_compat.batch"} <= names
    assert _room("storm_kafka_compat.batch") == "batch" and _room("storm_kafka_compat") == ""
    tree = ast.parse("from ..testing import memory\nfrom . import _x\n")
    relative = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert _imported("storm_kafka_compat.engine.driver", False, relative[0]) == \
        "storm_kafka_compat.testing"
    assert _imported("storm_kafka_compat.engine", True, relative[1]) == "storm_kafka_compat.engine"
