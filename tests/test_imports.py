"""The package's import graph: every module's imports of ``marl_edu`` go down the module map's layers (COURSE.md,
section 3), never up and never round a cycle, and no module imports another's private names. Imports inside
functions count too (an import moved into a function to break a cycle is still a cycle); a ``__main__`` block does
not (it runs only when the file is the program, never when the module is imported)."""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "marl_edu"

# the module map, lowest layer first: a module may import its own layer and the ones before it
LAYERS = [
    ("base", {"course_paths", "validate", "files", "shapes", "schedules", "threads", "viz"}),
    ("envs", {"batched_switch", "envs", "planning"}),
    ("data", {"rollout", "buffers"}),
    ("pieces", {"nets", "targets"}),
    ("learners", {"maddpg", "coma", "baselines", "continuous", "inference", "ensembles", "value_decomposition",
                  "matrix_game", "ppo", "ppo_continuous"}),
    ("table", {"learners"}),
    ("formats", {"checkpoints"}),
    ("loops", {"train", "resume", "competition"}),
    ("runs", {"runs", "run_folder"}),
    ("faces", {"cli", "widgets", "checks", "capstones", "capstone_maddpg", "capstone_coma", "solutions"}),
]
LAYER = {module: k for k, (_, modules) in enumerate(LAYERS) for module in modules}


def _is_main_block(node: ast.AST) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")


def imports_of(path: pathlib.Path) -> list[tuple[str, list[str], int]]:
    """``(marl_edu module, names imported from it, line)`` for every import of the package in ``path``."""
    found = []

    def visit(node: ast.AST) -> None:
        if _is_main_block(node):
            return
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("marl_edu."):
            found.append((node.module.split(".")[1], [alias.name for alias in node.names], node.lineno))
        elif isinstance(node, ast.ImportFrom) and node.module == "marl_edu":
            found.extend((alias.name, [], node.lineno) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((alias.name.split(".")[1], [], node.lineno) for alias in node.names
                         if alias.name.startswith("marl_edu."))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return found


MODULES = sorted(path.stem for path in PACKAGE.glob("*.py") if path.stem != "__init__")
GRAPH = {module: imports_of(PACKAGE / f"{module}.py") for module in MODULES}


def test_every_module_is_on_the_map():
    assert set(MODULES) <= set(LAYER), f"not in the module map: {sorted(set(MODULES) - set(LAYER))}"


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
