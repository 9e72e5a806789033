"""The package's own imports (issue 37 §4): no cycle between its modules (imports inside functions
included: a lazy import hides a cycle, it does not remove it), `train.py` imports nothing of the
toy, and no private name (`_x`) of one module is used by another module or by a test."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "shears_trainer"
TESTS = Path(__file__).resolve().parent


def internal(node: ast.ImportFrom, module: str) -> str | None:
    """The shears_trainer module an import names, or None (outside the package)."""
    if node.level == 1:
        return node.module or ""
    if node.level == 0 and node.module and node.module.split(".")[0] == "shears_trainer":
        return node.module.removeprefix("shears_trainer").removeprefix(".")
    return None


def imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) for every import of the package in `path`; `from . import loss` gives
    ("loss", [])."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = internal(node, path.stem)
            if module is None:
                continue
            if module == "":  # from . import loss, train
                found.extend((alias.name, []) for alias in node.names)
            else:
                found.append((module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("shears_trainer."):
                    found.append((alias.name.removeprefix("shears_trainer."), []))
    return found


def graph() -> dict[str, set[str]]:
    modules = {path.stem: path for path in PACKAGE.glob("*.py")}
    return {
        name: {module for module, _ in imports(path) if module in modules and module != name}
        for name, path in modules.items()
        if name != "__main__"  # the entry point: nothing imports it
    }


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    found, done = [], set()

    def visit(node, path):
        if node in path:
            found.append(path[path.index(node) :] + [node])
            return
        if node in done:
            return
        for target in sorted(edges.get(node, ())):
            visit(target, [*path, node])
        done.add(node)

    for node in sorted(edges):
        visit(node, [])
    return found


def test_no_import_cycle_between_the_packages_modules():
    edges = graph()
    assert {"train", "toy", "toy_loop", "loss"} <= edges.keys()
    assert cycles(edges) == []


def test_the_trainer_imports_nothing_of_the_toy():
    assert not {"toy", "toy_loop"} & graph()["train"]


def private_uses(path: Path) -> list[str]:
    """`from .x import _y`, and `x._y` where `x` is a module of the package imported by name."""
    uses = [
        f"{module}.{name}"
        for module, names in imports(path)
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]
    modules = {module for module, names in imports(path) if not names}
    modules |= {name for _, names in imports(path) for name in names if (PACKAGE / f"{name}.py").exists()}
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            uses.append(f"{node.value.id}.{node.attr}")
    return uses


def test_no_private_name_is_used_across_modules():
    files = [*PACKAGE.glob("*.py"), *TESTS.glob("*.py")]
    assert {path.name: private_uses(path) for path in files if private_uses(path)} == {}
