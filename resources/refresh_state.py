"""Refresh the example's state-backed components (as `dg utils refresh-defs-state` does), for
deployments that serve the code location without `dagster dev` (the Dockerfile)."""

import asyncio
from pathlib import Path

from dagster.components import StateBackedComponent
from dagster.components.core.component_tree import ComponentTree

ROOT = Path(__file__).resolve().parent.parent


def refresh_state(root: Path = ROOT) -> list[str]:
    """Every state-backed component of the project writes its state; their state keys."""
    tree = ComponentTree.for_project(root)
    components = tree.get_all_components(of_type=StateBackedComponent)
    for component in components:
        asyncio.run(component.refresh_state(tree.project_root))
    return [c.defs_state_config.key for c in components]


if __name__ == "__main__":
    print("refreshed", refresh_state())
