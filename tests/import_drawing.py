"""The drawing of the core's package-level imports in docs/ARCHITECTURE.md (issue 55: the engine once).

    python tests/import_drawing.py     # prints the mermaid block to paste into the page

Read from the code by tests/test_layers.py's `imports_of` (every import, TYPE_CHECKING ones
drawn dashed): one node per package of the core (`oasis_gym/<package>/`) and the envs above
them, an arrow from importer to imported package. The loose modules (`actions`, `errors`,
`blas`, ...: the vocabulary nearly every package imports) are left out. Packages are grouped
into the fast path and the platform path, with the model below both.
tests/test_architecture_doc.py checks that the page's block is this output.
"""

from __future__ import annotations

from test_layers import imports_of, layer, project_modules

# the groups drawn as boxes (a core package in none of them stands alone: the model)
PATHS = {
    "fast path": ("batched",),
    "platform path": ("world", "agents", "sim", "recsys", "metrics", "population", "platform"),
}


def package(module: str) -> str | None:
    """The drawn package of a project module: `envs` or a core package's name; None for the
    loose modules, the package root and everything above the envs."""
    parts = module.split(".")
    if module.startswith("oasis_gym.envs"):
        return "envs"
    if layer(module) != 0 or len(parts) < 2 or project_modules()[module].parent.name == "oasis_gym":
        return None
    return parts[1]


def package_imports() -> dict[tuple[str, str], bool]:
    """(importer, imported) package pairs -> whether the import runs (False: only under
    ``if TYPE_CHECKING:``)."""
    edges: dict[tuple[str, str], bool] = {}
    for module in project_modules():
        src = package(module)
        if src is None:
            continue
        runtime = imports_of(module, runtime=True)
        for target in imports_of(module):
            dst = package(target)
            if dst is not None and dst != src:
                edges[src, dst] = edges.get((src, dst), False) or target in runtime
    return edges


def mermaid() -> str:
    """The mermaid flowchart (without its fences) of `package_imports`."""
    edges = package_imports()
    nodes = sorted({n for edge in edges for n in edge})
    grouped = {n for members in PATHS.values() for n in members}
    lines = ["flowchart TD"]
    for n in nodes:
        if n not in grouped:
            lines.append(f'    {n}["{n}/"]')
    for i, (title, members) in enumerate(PATHS.items()):
        lines.append(f'    subgraph path{i}["{title}"]')
        lines += [f'        {n}["{n}/"]' for n in members if n in nodes]
        lines.append("    end")
    for (src, dst), runs in sorted(edges.items()):
        lines.append(f"    {src} {'-->' if runs else '-.->'} {dst}")
    return "\n".join(lines)


if __name__ == "__main__":
    print("```mermaid\n" + mermaid() + "\n```")
