"""The README's quick starts run as written, and every relative link of the docs resolves.

Convention: the quick starts are the fenced blocks of README.md's "## Quick start" section, found
by their "###" subsection and language tag:
- "### Python", ```python: run with `exec`;
- "### Dagster component (YAML)", ```yaml: the defs.yaml of a component in a temporary dg
  project, whose state is refreshed and whose definitions are loaded by Dagster's own loader;
- "### CLI", ```bash: each line, one test per line, run through `dagster_paimon.cli.main()`
  (the words after `dagster-paimon`; `#` starts a comment), and must exit 0.
The path `/tmp/warehouse` in any block stands for the warehouse: the test replaces it by a
temporary one and sets PAIMON_WAREHOUSE to the same path (the YAML reads it through `env`).
The YAML and CLI tests find `shop.orders` made by the test itself, so each block is tested
alone.
"""

from __future__ import annotations

import contextlib
import io
import re
import textwrap
import uuid
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest

from dagster_paimon.table import TableSpec, create_table, open_table
from resources.refresh_state import refresh_state
from tests.conftest import write_with_pypaimon
from tests.lsm.kvmodel import read_rows

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = [README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
PLACEHOLDER = "/tmp/warehouse"
FENCE = re.compile(r"^ *```(\w*)\n(.*?)^ *```$", re.M | re.S)

SCHEMA = pa.schema(
    [
        pa.field("order_id", pa.int64(), nullable=False),
        pa.field("customer", pa.string()),
        pa.field("amount", pa.float64()),
    ]
)


def quick_starts() -> dict[tuple[str, str], str]:
    """(subsection heading, language) -> block body, for the README's "Quick start" section."""
    text = README.read_text()
    section = text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    blocks: dict[tuple[str, str], str] = {}
    for part in re.split(r"^### ", section, flags=re.M)[1:]:
        heading = part.splitlines()[0].strip()
        for lang, body in FENCE.findall(part):
            assert (heading, lang) not in blocks, f"two {lang} blocks under {heading!r}"
            blocks[(heading, lang)] = body
    return blocks


def quick_start(heading: str, lang: str, warehouse: str) -> str:
    """One block, the placeholder replaced by the test's warehouse."""
    return quick_starts()[(heading, lang)].replace(PLACEHOLDER, warehouse)


def cli_block_lines() -> list[str]:
    """The CLI block's lines, comments and blank lines left out."""
    lines = [line.split(" #")[0].strip() for line in quick_starts()[("CLI", "bash")].splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def cli_lines() -> list[str]:
    """The CLI block's commands (its `export` sets what the `orders` fixture sets)."""
    return [line for line in cli_block_lines() if not line.startswith("export ")]


@pytest.fixture
def orders(warehouse, monkeypatch):
    """shop.orders over Paimon's compaction trigger (six pypaimon commits), as the Python quick
    start leaves it before compacting; PAIMON_WAREHOUSE names the warehouse."""
    monkeypatch.setenv("PAIMON_WAREHOUSE", warehouse)
    table = create_table(warehouse, TableSpec("shop", "orders", SCHEMA, ("order_id",), 2))
    for day in range(6):
        write_with_pypaimon(
            table,
            pa.table(
                {"order_id": [1, 2, 3, 4], "customer": list("abcd"), "amount": [day * 1.0] * 4},
                schema=SCHEMA,
            ),
        )
    return warehouse


def test_the_quick_start_section_has_the_three_blocks():
    assert set(quick_starts()) == {
        ("Python", "python"),
        ("Dagster component (YAML)", "yaml"),
        ("CLI", "bash"),
    }
    assert all(line.startswith("dagster-paimon ") for line in cli_lines())
    exports = [line for line in cli_block_lines() if line.startswith("export ")]
    assert exports == [f"export PAIMON_WAREHOUSE={PLACEHOLDER}"]


def test_python_quick_start(warehouse, monkeypatch, capsys):
    monkeypatch.setenv("PAIMON_WAREHOUSE", warehouse)
    code = quick_start("Python", "python", warehouse)
    exec(compile(code, "README.md: Python quick start", "exec"), {"__name__": "readme"})
    printed = capsys.readouterr().out
    assert printed.strip(), "the quick start prints health and results"
    table = open_table(warehouse, "shop.orders")
    rows = sorted(read_rows(table), key=lambda r: r["order_id"])
    assert [(r["order_id"], r["amount"]) for r in rows] == [(k, 50.0) for k in (1, 2, 3, 4)]
    assert table.snapshot_manager().get_latest_snapshot().commit_kind == "COMPACT"


def test_component_quick_start(orders, tmp_path, monkeypatch):
    other = create_table(orders, TableSpec("shop", "tmp_scratch", SCHEMA, ("order_id",), 1))
    write_with_pypaimon(other, pa.table({"order_id": [1], "customer": ["a"], "amount": [1.0]}))
    create_table(orders, TableSpec("crm", "customers", SCHEMA, ("order_id",), 1))
    root = tmp_path / "project"
    module = f"readme_{uuid.uuid4().hex[:8]}"
    defs_dir = root / "src" / module / "defs" / "lake"
    defs_dir.mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""
            [project]
            name = "{module}"
            version = "0.0.1"

            [tool.dg]
            directory_type = "project"

            [tool.dg.project]
            root_module = "{module}"
            """
        )
    )
    (root / "src" / module / "__init__.py").write_text("")
    (root / "src" / module / "defs" / "__init__.py").write_text("")
    (defs_dir / "defs.yaml").write_text(quick_start("Dagster component (YAML)", "yaml", orders))
    monkeypatch.syspath_prepend(str(root / "src"))

    refresh_state(root)
    defs = dg.load_from_defs_folder(path_within_project=root)
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert keys == {"shop/orders", "shop/orders/compaction"}, "tmp_ and crm.* tables left out"
    assert {k.name for k in graph.asset_check_keys} == {"lsm_health"}
    schedules = {s.name: s.cron_schedule for s in defs.schedules}
    assert schedules["shop_orders_full_compaction_schedule"] == "0 2 * * *"
    assert schedules["shop_orders_expire_snapshots_schedule"] == "15 * * * *"
    assert schedules["shop_orders_remove_orphans_schedule"] == "0 5 * * 0"
    assert len(defs.sensors) == 1


@pytest.mark.parametrize("line", cli_lines())
def test_cli_quick_start(orders, line):
    from dagster_paimon.cli import main

    argv = line.replace(PLACEHOLDER, orders).split()[1:]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # a parser's usage error
            code = e.code
    assert code == 0, f"{line}\nexit {code}\n{err.getvalue()}"
    assert out.getvalue().strip(), line


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors of a Markdown file."""
    text = FENCE.sub("", path.read_text())
    found = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc):
    assert doc.exists(), doc
    broken = []
    for target in LINK.findall(FENCE.sub("", doc.read_text())):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    assert not broken, f"{doc.name}: " + "; ".join(broken)
