"""What the redesigns of issues 24 and 32 made true of the package's shape, held by
reading its source: no function longer than 80 lines, no ``_private`` name imported from
another module, no module of the product floor importing the test tools or the servers or
naming a particular broker, and the rooms stacked by when and where their lines run, each
importing only the rooms below it, with no circle of modules importing each other."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import List

from tests.layout import ROOMS, circles, imported, imports, modules, room

MAX_FUNCTION_LINES = 80
# the packages a job runs on; they reach embedded servers and test tools never
FLOOR = ("engine", "spout", "offsets", "kafka", "discovery", "topology", "streaming")
TOOLS = ("storm_kafka_compat.testing", "storm_kafka_compat.workshop.servers")


def test_no_function_is_longer_than_80_lines() -> None:
    long: List[str] = []
    for name, _, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{name}.{node.name}: {lines} lines")
    assert long == [], "split these along their steps: " + "; ".join(long)


def test_no_private_name_is_imported_from_another_module() -> None:
    private: List[str] = []
    for name, path, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = imported(name, path.name == "__init__.py", node)
                if not source.startswith("storm_kafka_compat"):
                    continue
                private += [f"{name} imports {source}.{alias.name} (line {node.lineno})"
                            for alias in node.names
                            if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert private == [], "make these public names of their module: " + "; ".join(private)


def test_the_product_floor_imports_neither_test_tools_nor_servers() -> None:
    found = [f"{name} imports {t} (line {line})" for name, path, tree in modules()
             if name.split(".")[1:2] and name.split(".")[1] in FLOOR
             for t, line in imports(name, path, tree)
             if any(t == tool or t.startswith(tool + ".") for tool in TOOLS)]
    assert found == [], "; ".join(found)


def test_only_the_commands_reach_the_workshop() -> None:
    """The workshop (embedded servers, demo, bench) is next door: of the product, only
    the CLI's ``demo`` and ``bench`` commands import it."""
    found = [f"{name} imports {t} (line {line})" for name, path, tree in modules()
             if room(name) not in ("workshop", "cli")
             for t, line in imports(name, path, tree)
             if t == "storm_kafka_compat.workshop" or t.startswith("storm_kafka_compat.workshop.")]
    assert found == [], "; ".join(found)


def test_the_product_floor_does_not_know_a_particular_broker() -> None:
    """The floor describes the broker behaviour it handles, never the broker that has it."""
    named = [f"{name} (line {number})" for name, path, _ in modules()
             if name.split(".")[1:2] and name.split(".")[1] in FLOOR
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if "tansu" in line.lower()]
    assert named == [], "; ".join(named)


def test_each_room_imports_only_the_rooms_below_it() -> None:
    rooms = {room(name) for name, _, _ in modules()} - {""}
    assert rooms <= set(ROOMS), f"place these rooms in ROOMS: {sorted(rooms - set(ROOMS))}"
    up = [f"{name} imports {t} (line {line})" for name, path, tree in modules()
          if room(name) for t, line in imports(name, path, tree)
          if t.startswith("storm_kafka_compat.") and room(t) in ROOMS
          and ROOMS.index(room(t)) > ROOMS.index(room(name))]
    assert up == [], "these import a room above their own: " + "; ".join(up)


def test_the_executor_side_knows_nothing_of_the_driver_side() -> None:
    """What a Spark task runs is built from the job's pure data: it imports neither the
    driver's loop and runners, nor the spout that plans, nor the runtime that picks."""
    found = [f"{name} imports {t} (line {line})" for name, path, tree in modules()
             if room(name) == "executor" for t, line in imports(name, path, tree)
             if room(t) in ("engine", "spout", "runtime", "streaming")]
    assert found == [], "; ".join(found)


def test_the_checks_see_what_they_look_for() -> None:
    """The walker resolves relative imports and finds the floor's modules (a check that
    sees nothing would pass whatever the package holds)."""
    names = {name for name, _, _ in modules()}
    assert {"storm_kafka_compat.engine.driver", "storm_kafka_compat.spout",
            "storm_kafka_compat.executor.task", "storm_kafka_compat.batch"} <= names
    assert room("storm_kafka_compat.batch") == "batch" and room("storm_kafka_compat") == ""
    tree = ast.parse("from ..testing import memory\nfrom . import _x\n")
    relative = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert imported("storm_kafka_compat.engine.driver", False, relative[0]) == \
        "storm_kafka_compat.testing"
    assert imported("storm_kafka_compat.engine", True, relative[1]) == "storm_kafka_compat.engine"


def test_no_modules_import_each_other_round() -> None:
    """No circle of product modules, by the imports that run at import time or by every
    import that runs (lazy ones included)."""
    assert circles(eager_only=True) == [] and circles(eager_only=False) == []


def test_the_circle_finder_sees_a_circle(tmp_path: Path) -> None:
    package = tmp_path / "storm_kafka_compat"
    (package / "a").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a" / "__init__.py").write_text("from storm_kafka_compat.a import one\n")
    (package / "a" / "one.py").write_text("def f():\n    from storm_kafka_compat import two\n")
    (package / "two.py").write_text("from storm_kafka_compat.a.one import f\n")
    assert circles(package, eager_only=False) == [["storm_kafka_compat.a.one",
                                                   "storm_kafka_compat.two"]]
    assert circles(package, eager_only=True) == []
