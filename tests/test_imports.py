"""The package's import graph: every module's imports of ``marl_edu`` go down the layers of ARCHITECTURE.md's map
(``LAYERS`` below), never up and never round a cycle, and no module imports another's private names. Imports inside
functions count too (an import moved into a function to break a cycle is still a cycle); a ``__main__`` block does
not (it runs only when the file is the program, never when the module is imported)."""

import ast
import pathlib
import re

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "marl_edu"
ARCHITECTURE = PACKAGE.parent / "ARCHITECTURE.md"

# The map, lowest layer first: a module may import its own layer and the ones below it. A layer is a folder of
# marl_edu, or (learners' table, training's policy files) a module of one that the rest of its folder sits above or
# below. ARCHITECTURE.md draws the same map (test_the_architecture_page_draws_this_map).
LAYERS = [
    ("base", {"base.course_paths", "base.validate", "base.files", "base.shapes", "base.schedules", "base.threads",
              "base.viz"}),
    ("envs", {"envs.family", "envs.state", "envs.magym", "envs.batched_switch", "envs.planning", "envs.switch", "envs.particle",
              "envs.spread_discrete", "envs.foraging", "envs.make"}),
    ("data", {"data.rollout", "data.buffers"}),
    ("pieces", {"pieces.nets", "pieces.targets", "pieces.masked", "pieces.policies", "pieces.recurrent"}),
    ("learners", {"learners.maddpg", "learners.coma", "learners.baselines", "learners.continuous",
                  "learners.inference", "learners.ensembles", "learners.value_decomposition", "learners.matrix_game",
                  "learners.ppo", "learners.ppo_continuous"}),
    ("table", {"learners.table"}),
    ("training", {"training.checkpoints", "training.evaluation", "training.loops", "training.resume",
                  "training.competition"}),
    ("runs", {"runs.seed", "runs.folder", "runs.grid"}),
    ("course", {"course.cli", "course.widgets", "course.checks", "course.capstones", "course.capstone_maddpg",
                "course.capstone_coma", "course.solutions"}),
]
LAYER = {module: k for k, (_, modules) in enumerate(LAYERS) for module in modules}


def _is_main_block(node: ast.AST) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")


def imports_of(path: pathlib.Path) -> list[tuple[str, list[str], int]]:
    """``(marl_edu module, names imported from it, line)`` for every import of the package in ``path``; a module is
    named by its path below marl_edu (``"envs.make"``)."""
    found = []

    def module_of(dotted: str) -> str:
        return dotted.removeprefix("marl_edu.")

    def visit(node: ast.AST) -> None:
        if _is_main_block(node):
            return
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("marl_edu."):
            if module_of(node.module) in LAYER:  # from marl_edu.envs.make import make_env
                found.append((module_of(node.module), [alias.name for alias in node.names], node.lineno))
            else:  # from marl_edu.course import checks
                found.extend((f"{module_of(node.module)}.{alias.name}", [], node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == "marl_edu":
            found.extend((alias.name, [], node.lineno) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((module_of(alias.name), [], node.lineno) for alias in node.names
                         if alias.name.startswith("marl_edu."))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return found


MODULES = sorted(".".join(path.relative_to(PACKAGE).with_suffix("").parts) for path in PACKAGE.glob("*/*.py")
                 if path.stem != "__init__")
GRAPH = {module: imports_of(PACKAGE / f"{module.replace('.', '/')}.py") for module in MODULES}


def test_the_package_is_folders_of_layers():
    """marl_edu's own folder holds only the layer folders, ``__init__`` and ``__main__`` (the command line's start);
    every module sits in a folder named by its layer, or in the folder of the layer it belongs to (the table with the
    learners, policy files with training)."""
    loose = sorted(path.name for path in PACKAGE.glob("*.py") if path.stem not in {"__init__", "__main__"})
    assert not loose, f"modules outside the layer folders: {loose}"
    folders = {layer.split(".")[0] for layer in LAYER}
    found = {path.name for path in PACKAGE.iterdir() if path.is_dir() and path.name != "__pycache__"}
    assert found == folders, f"folders {sorted(found)}, the map's {sorted(folders)}"


def test_the_architecture_page_draws_this_map():
    """ARCHITECTURE.md's map lists every layer in this order, each with its modules, and no module twice."""
    page = ARCHITECTURE.read_text()
    rows = [line for line in page.splitlines() if line.startswith("| ") and "`" in line.split("|")[2]]
    drawn = [(row.split("|")[1].strip(), set(re.findall(r"`([a-z_.]+)`", row.split("|")[2]))) for row in rows]
    assert drawn == LAYERS, "ARCHITECTURE.md's layer table and tests/test_imports.py's LAYERS differ"


def test_every_module_is_on_the_map():
    assert set(MODULES) == set(LAYER), (f"not in the module map: {sorted(set(MODULES) - set(LAYER))}; on the map but "
                                        f"not in the package: {sorted(set(LAYER) - set(MODULES))}")


@pytest.mark.parametrize("module", MODULES)
def test_imports_go_down_the_layers(module):
    for imported, _, line in GRAPH[module]:
        assert LAYER[imported] <= LAYER[module], (
            f"{module}.py:{line} imports {imported} ({LAYERS[LAYER[imported]][0]}), a layer above "
            f"{module}'s ({LAYERS[LAYER[module]][0]})")


@pytest.mark.parametrize("module", MODULES)
def test_no_module_imports_another_modules_private_names(module):
    for imported, names, line in GRAPH[module]:
        private = [name for name in names if name.startswith("_")]
        assert not private or imported == module, f"{module}.py:{line} imports {imported}'s {private}"


def test_there_is_no_import_cycle():
    edges = {module: {imported for imported, _, _ in GRAPH[module] if imported != module} for module in MODULES}
    state = {}  # module -> "visiting" or "done"

    def visit(module, path):
        state[module] = "visiting"
        for imported in sorted(edges[module]):
            assert state.get(imported) != "visiting", f"import cycle: {' -> '.join([*path, module, imported])}"
            if imported not in state:
                visit(imported, [*path, module])
        state[module] = "done"

    for module in MODULES:
        if module not in state:
            visit(module, [])
