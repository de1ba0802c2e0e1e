"""The import arrows of ARCHITECTURE.md point one way, checked on the source (no imports run).

brokerd's packages form layers: each may import only the packages listed before it; only
``coordination`` talks to ZooKeeper (kazoo); brokerd never imports Django or the control plane,
the control plane never imports brokerd, and ``spark`` imports neither side.

The control-plane apps form layers too, top to bottom:
``service`` → ``dashboard`` → ``quotas`` → ``tenants``.  ``service`` (settings, URLs, Celery)
wires everything; ``dashboard`` (the console) may import ``quotas`` and ``tenants``; ``quotas``
(overrides, invoices, billing) may import ``tenants``; ``tenants`` (plans, tenants and what they
own) imports no other app.  Django's string model references (``"tenants.Tenant"``) are not
imports and may point anywhere the layers allow.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.support.services import REPO_ROOT

BROKERD_LAYERS = ["protocol", "storage", "replication", "coordination", "groups", "quota",
                  "security", "metering", "server"]
CONTROL_PLANE = ["service", "tenants", "quotas", "dashboard"]
CONTROL_PLANE_LAYERS = ["tenants", "quotas", "dashboard", "service"]  # bottom to top
DJANGO_SIDE = {"django", "rest_framework", "drf_spectacular", "celery", "channels", *CONTROL_PLANE}


def imported_modules(path: Path) -> Iterator[str]:
    """Absolute names of every module a file imports (relative imports resolved)."""
    package = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                yield ".".join(base + ([node.module] if node.module else []))
            else:
                yield node.module or ""


def sources(top: str) -> list[Path]:
    return sorted(p for p in (REPO_ROOT / top).rglob("*.py") if "migrations" not in p.parts)


def violations(files: list[Path], allowed: Callable[[str], bool], label: str) -> list[str]:
    found = []
    for path in files:
        for module in imported_modules(path):
            if not allowed(module):
                found.append(f"{path.relative_to(REPO_ROOT)} imports {module} ({label})")
    return found


def test_brokerd_layers_point_down() -> None:
    problems = []
    for index, layer in enumerate(BROKERD_LAYERS):
        below = {f"brokerd.{name}" for name in BROKERD_LAYERS[: index + 1]}
        if layer == "server":
            below.add("brokerd.config")

        def allowed(module: str, below: set[str] = below, layer: str = layer) -> bool:
            root = module.split(".")[0]
            if root == "kazoo":
                return layer == "coordination"
            if root != "brokerd":
                return root not in DJANGO_SIDE and root != "spark"
            return any(module == b or module.startswith(b + ".") for b in below)

        problems += violations(sources(f"brokerd/{layer}"), allowed, f"layer {layer}")
    assert problems == []


def test_control_plane_and_spark_stay_on_their_side() -> None:
    problems = violations(
        [p for top in CONTROL_PLANE for p in sources(top)],
        lambda m: m.split(".")[0] not in {"brokerd", "spark"}, "control plane")
    problems += violations(
        sources("spark"), lambda m: m.split(".")[0] not in {"brokerd", *DJANGO_SIDE}, "spark")
    assert problems == []


def test_control_plane_apps_point_down() -> None:
    problems = []
    for index, app in enumerate(CONTROL_PLANE_LAYERS):
        above = set(CONTROL_PLANE_LAYERS[index + 1:])
        problems += violations(sources(app), lambda m, above=above: m.split(".")[0] not in above,
                               f"app {app} may import only {CONTROL_PLANE_LAYERS[:index + 1]}")
    assert problems == []


def test_the_checker_sees_relative_imports() -> None:
    sample = REPO_ROOT / "brokerd" / "quota" / "__init__.py"
    assert any(m.startswith("brokerd.quota") for m in imported_modules(sample))
