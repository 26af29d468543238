"""The package's layers import downwards only, read from the source with ``ast`` (no import runs).

Surfaces (``tables.py``, ``builder.py``, ``spark/sql/``, hooks) over ``spark/stream`` over
``spark/commands`` over ``spark/write`` over ``spark/read`` over the kernel, which never
imports Spark; the lakehouse app uses the public modules only; and the README's
Architecture table names files that exist. Only module-level imports count (``if
TYPE_CHECKING:`` blocks do not run; imports inside functions are deliberate late loads).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "sparkdelta"

PUBLIC = {"sparkdelta", "sparkdelta.tables", "sparkdelta.kernel", "sparkdelta.exceptions", "sparkdelta.progress"}
ALLOWED_CYCLES = [{"sparkdelta.builder", "sparkdelta.tables"}]


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports a module runs when loaded: its top level, and the branches of top-level
    ``if``/``try`` statements, but not ``if TYPE_CHECKING:``."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                yield from _module_level(block)


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module if _modules()[module].name == "__init__.py" else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


@cache
def imports(module: str) -> frozenset[str]:
    """The modules ``module`` imports when loaded (``from pkg import sub`` counts as ``pkg.sub``)."""
    tree = ast.parse(_modules()[module].read_text(), str(_modules()[module]))
    found: set[str] = set()
    for node in _module_level(tree.body):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        base = _resolve(module, node)
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            found.add(sub if sub in _modules() else base)
    return frozenset(found)


def _internal(module: str) -> set[str]:
    return {name for name in imports(module) if name in _modules()}


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _cycles() -> list[set[str]]:
    """The strongly connected components of the import graph with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(_internal(node)):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for module in sorted(_modules()):
        if module not in index:
            visit(module)
    return found


def _violations(packages: str | tuple[str, ...], forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    """Per module under ``packages``: what it imports from the ``forbidden`` modules and packages."""
    under = (packages,) if isinstance(packages, str) else packages
    result = {}
    for module in _modules():
        if any(_within(module, p) for p in under):
            bad = sorted(i for i in imports(module) if any(_within(i, f) for f in forbidden))
            if bad:
                result[module] = bad
    return result


def test_no_import_cycles() -> None:
    assert [c for c in _cycles() if c not in ALLOWED_CYCLES] == []


def test_kernel_imports_no_spark_and_nothing_above_it() -> None:
    """The package root counts as the kernel's: it has no imports, and loading any module loads it."""

    def above(name: str) -> bool:
        return (
            _within(name, "pyspark")
            or _within(name, "sqlglot")
            or (_within(name, "sparkdelta") and not _within(name, "sparkdelta.kernel") and name != "sparkdelta")
        )

    bad = {m: sorted(filter(above, imports(m))) for m in _modules() if _within(m, "sparkdelta.kernel")}
    assert {m: found for m, found in bad.items() if found} == {}


def test_engine_layers_import_downwards() -> None:
    hooks = ("sparkdelta.spark.hooks", "sparkdelta.spark.named_tables")
    stream = "sparkdelta.spark.stream"
    assert (
        _violations(
            "sparkdelta.spark.read",
            ("sparkdelta.spark.write", "sparkdelta.spark.commands", "sparkdelta.spark.sql", stream, *hooks),
        )
        == {}
    )
    assert _violations("sparkdelta.spark.write", ("sparkdelta.spark.commands", "sparkdelta.spark.sql", stream, *hooks)) == {}
    assert _violations("sparkdelta.spark.commands", ("sparkdelta.spark.sql", stream, "sparkdelta.spark.hooks")) == {}
    assert _violations(stream, ("sparkdelta.spark.sql", "sparkdelta.spark.hooks")) == {}
    assert _violations("sparkdelta.spark", ("sparkdelta.tables", "sparkdelta.builder")) == {}


def test_lakehouse_uses_public_modules_only() -> None:
    bad = {}
    for module in _modules():
        if _within(module, "sparkdelta.lakehouse"):
            found = sorted(
                i
                for i in imports(module)
                if _within(i, "sparkdelta") and not _within(i, "sparkdelta.lakehouse") and i not in PUBLIC
            )
            if found:
                bad[module] = found
    assert bad == {}


def _architecture_paths(readme: str) -> list[str]:
    """The files and folders the README's Architecture table names, relative to the package:
    a name without a folder (``storage.py``) is in the folder last named in its row."""
    section = readme.split("## Architecture", 1)[1].split("\n## ", 1)[0]
    paths = []
    for row in (line for line in section.splitlines() if line.startswith("|")):
        folder = ""
        for name in re.findall(r"`([^`]+)`", row):
            if not name.endswith((".py", "/")):
                continue
            path = name if "/" in name.rstrip("/") else folder + name
            if "/" in path:
                folder = path if path.endswith("/") else path.rpartition("/")[0] + "/"
            paths.append(path)
    return paths


def test_readme_architecture_names_existing_files() -> None:
    paths = _architecture_paths((ROOT / "README.md").read_text())
    assert len(paths) > 20
    assert [p for p in paths if not (PACKAGE / p).exists()] == []
