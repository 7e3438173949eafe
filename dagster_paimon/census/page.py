"""docs/options.md, written from the census, so the page a user searches is the census itself.

python -m dagster_paimon.census.page > docs/options.md
"""

from __future__ import annotations

from dagster_paimon.census.census import (
    CATALOG,
    HANDLED,
    INERT,
    REFUSED,
    TABLE,
    Declared,
    census,
)

INTRO = """\
# Every Paimon option, and what dagster-paimon does with it

dagster-paimon is never silently wrong about a table's options. Every option key of Paimon's
option classes (releases 0.9 to 2.0) is in one of three places:

- **handled**: every operation does what Paimon's Java implementation does for it; the note
  says where.
- **inert**: it changes only what readers, a Flink or Spark job's runtime, or schema changes do,
  none of which dagster-paimon runs; the note says why it does not concern a maintainer.
- **refused**: an operation it changes refuses the table before reading or writing anything,
  and says why (exit 2 on the CLI). The note names the refusal; `health`, `tables` and `doctor`
  still work and list it under `unsupported`. A refusal lasts until the feature lands.

A key no row names (a newer Paimon's, or a property of your own) is listed by `health` under
`unknown_options`, and every table-changing operation names it in a warning before going ahead.
How the list is made, and how to bring it to a new Paimon release:
[architecture.md](architecture.md#the-option-census).

Search this page for your option. `*` stands for a field name, an index type or a column.
"""

STATUS_WORDS = {HANDLED: "handled", INERT: "inert", REFUSED: "**refused**"}


def _release(tag: str) -> str:
    """`release-1.4.1` as `1.4`."""
    return ".".join(tag.removeprefix("release-").split(".")[:2])


def _releases(rows: list[Declared]) -> str:
    """The releases declaring a key (`0.9-2.0`), and what it is an old name of."""
    if not rows:
        return "no option class (read by prefix, or newer)"
    first = _release(min(r.first for r in rows))
    last = _release(max(r.last for r in rows))
    text = first if first == last else f"{first}-{last}"
    aliases = sorted({r.alias_of for r in rows if r.alias_of})
    return text + "".join(f", old name of `{a}`" for a in aliases)


def page() -> str:
    """The whole page: the intro, then one table per role, a row per key, by key."""
    known = census()
    releases: dict[tuple[str, str], list[Declared]] = {}
    for d in known.declared:
        releases.setdefault((d.role, d.key), []).append(d)
    lines = [INTRO]
    for role, title in ((TABLE, "Table options"), (CATALOG, "Catalog options")):
        lines += [f"## {title}", "", "| option | status | what we do, or why not | Paimon |"]
        lines.append("|---|---|---|---|")
        for entry in known.entries():
            if entry.role != role:
                continue
            since = _releases(releases.get((role, entry.key), []))
            note = entry.note.replace("|", "\\|")
            if entry.refusal:
                note = f"{note} (refusal: {entry.refusal})"
            lines.append(f"| `{entry.key}` | {STATUS_WORDS[entry.status]} | {note} | {since} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(page(), end="")
