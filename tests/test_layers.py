"""The house's layers, read from the code's own imports: models <- rag <- agent, each backend in its package, no
package importing back, and nothing at run time importing the benchmarks or the test doubles. And what is read by
probing: getattr is left for foreign objects, and never reads settings."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = ("agent", "rag", "models")
MAX_GETATTR = 11  # issue #38: our own protocols and dataclasses declare what callers use; getattr is for the rest
SETTINGS_NAMES = {"settings", "args", "namespace", "options", "given"}  # what a probe of the settings reads


@cache
def imports() -> dict[str, set[str]]:
    """Module -> the modules it imports anywhere in its body (a deferred import is a dependency too)."""
    found: dict[str, set[str]] = {}
    for top in RUNTIME:
        for path in (ROOT / top).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            names = found.setdefault(name, set())
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names.add(node.module)
                elif isinstance(node, ast.Import):
                    names.update(alias.name for alias in node.names)
    return found


def offending(source: str, targets: tuple[str, ...]) -> list[str]:
    """'a -> b' for each import from a module under `source` of one under a name in `targets`."""
    def under(name: str, prefix: str) -> bool:
        return name == prefix or name.startswith(prefix + ".")

    return sorted(f"{a} -> {b}" for a, bs in imports().items() if under(a, source)
                  for b in bs if any(under(b, t) for t in targets))


def package(module: str) -> str:
    """A module's place in the house: its top package and the subpackage under it (rag.postgres, agent.turn);
    under agent.surfaces, each surface is its own place (agent.surfaces.tui, agent.surfaces.mcp_server)."""
    parts = module.split(".")
    return ".".join(parts[:3] if parts[:2] == ["agent", "surfaces"] else parts[:2])


def test_models_imports_neither_rag_nor_agent():
    assert offending("models", ("rag", "agent")) == []


def test_rag_never_imports_agent():
    assert offending("rag", ("agent",)) == []


def test_rag_depends_on_models_protocols_not_on_a_backend():
    """The programs that load the real model and embedder by hand (measuring, fitting) live in benchmarks/."""
    assert offending("rag", ("models.llama_cpp", "models.openai_server")) == []


def test_nothing_at_run_time_imports_the_benchmarks_or_the_test_doubles():
    for top in RUNTIME:
        assert offending(top, ("benchmarks", "tests", "fakes")) == []


def test_only_models_imports_llama_cpp_and_only_the_tui_imports_textual():
    assert offending("agent", ("llama_cpp",)) + offending("rag", ("llama_cpp",)) == []
    textual = [line for line in offending("agent", ("textual",)) + offending("rag", ("textual",))
               if not line.startswith("agent.surfaces.tui")]
    assert textual == []


def test_the_file_index_and_the_postgresql_store_are_apart_and_share_retrieval():
    assert offending("rag.indexing", ("rag.postgres",)) == []
    assert offending("rag.retrieval", ("rag.indexing", "rag.postgres")) == []


def test_no_package_imports_one_that_imports_it_back():
    edges: dict[str, set[str]] = {}
    for a, bs in imports().items():
        edges.setdefault(package(a), set()).update(
            package(b) for b in bs if b.split(".")[0] in RUNTIME and package(b) != package(a))
    circles = []
    for start in sorted(edges):
        seen, todo = set(), [start]
        while todo:
            for nxt in edges.get(todo.pop(), ()):
                if nxt == start:
                    circles.append(start)
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
    assert sorted(set(circles)) == []


def getattr_lines() -> list[str]:
    """'path:line: text' for each line of agent/, rag/ and models/ holding `getattr(`, counted as
    `grep -rn "getattr(" agent rag models | wc -l` counts them (binary files, compiled bytecode, are left out)."""
    found = []
    for top in RUNTIME:
        for path in sorted((ROOT / top).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            data = path.read_bytes()
            if b"\0" in data:
                continue
            for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
                if "getattr(" in line:
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    return found


def test_getattr_is_left_for_foreign_objects():
    """The ones left read foreign objects (the MCP SDK's session and request, pydantic's error, a replaced stdin,
    llama_cpp's Llama, what the openai SDK hands back), or reflect: a dataclass's fields, a protocol's members
    (protocol_gaps), rag's lazily imported contract. Our own protocols and dataclasses declare what callers read."""
    lines = getattr_lines()
    assert len(lines) <= MAX_GETATTR, "\n".join(lines)


def test_no_probe_reads_the_settings():
    """agent.settings.Settings (and, before it, the argparse Namespace) is read by name: a typo is mypy's to find."""
    probes = []
    for top in RUNTIME:
        for path in (ROOT / top).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                        and node.func.id in ("getattr", "hasattr", "setattr") and node.args):
                    target = ast.unparse(node.args[0])
                    if set(re.findall(r"[a-z]+", target.lower())) & SETTINGS_NAMES:
                        probes.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.func.id}({target}, ...)")
    assert probes == []


def test_nothing_below_the_surfaces_imports_them():
    """The surfaces consume the turn's events; the turn, the session, eval and the rest never reach up into a
    surface. Only the entry point, agent.cli, dispatches to them."""
    below = [line for line in offending("agent", ("agent.surfaces",))
             if not line.startswith(("agent.surfaces", "agent.cli "))]
    assert below == []
