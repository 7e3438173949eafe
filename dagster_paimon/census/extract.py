"""Extract every option key Paimon's Java source declares, for the census to classify.

Run from a checkout (or mirror) of apache/paimon, once per new Paimon release:

    python -m dagster_paimon.census.extract /path/to/paimon release-0.9.0 ... release-2.0.0 \
        > dagster_paimon/census/keys.tsv

It reads the option classes listed in CLASSES at each tag (`git show TAG:PATH`, wherever the
class lives in that tag's tree, tests excluded) and prints one line per key: the key (a part
computed from a variable, such as a field name, becomes `*`), its role (table or catalog
option), the declaring class, the Java field, the key it is an old name of (fallback and
deprecated keys), and the first and last tag that declares it. `git diff` of the output between
two runs is the list of keys a release added or removed.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import astuple, replace

from dagster_paimon.census.census import CATALOG, TABLE, Declared

# option class -> role: every class whose keys sit in a table's or a catalog's options
CLASSES = {
    "CoreOptions": TABLE,
    "IcebergOptions": TABLE,
    "FlinkConnectorOptions": TABLE,
    "SparkConnectorOptions": TABLE,
    "HiveConnectorOptions": TABLE,
    "OrcOptions": TABLE,
    "CsvOptions": TABLE,
    "JsonOptions": TABLE,
    "TextOptions": TABLE,
    "BTreeIndexOptions": TABLE,
    "BitmapGlobalIndexOptions": TABLE,
    "SortedIndexOptions": TABLE,
    "LuminaVectorIndexOptions": TABLE,
    "AvroFileFormat": TABLE,
    "MosaicFileFormat": TABLE,
    "CdcRecordStoreWriteOperator": TABLE,
    "CatalogOptions": CATALOG,
    "FileSystemCatalogOptions": CATALOG,
    "HiveCatalogOptions": CATALOG,
    "JdbcCatalogOptions": CATALOG,
    "RESTCatalogOptions": CATALOG,
    "FlinkCatalogOptions": CATALOG,
    "SparkCatalogOptions": CATALOG,
    "RESTCatalogInternalOptions": CATALOG,
    "RESTTokenFileIO": CATALOG,
    "PrivilegedCatalog": CATALOG,
    "HadoopUtils": CATALOG,
    "SecurityConfiguration": CATALOG,
}
HEADER = ("key", "role", "class", "field", "alias_of", "first", "last")
_TOKEN = re.compile(
    r'(?P<block>"""(?:\\.|[^\\])*?""")|(?P<string>"(?:\\.|[^"\\\n])*")|(?P<char>\'(?:\\.|[^\'\\])\')'
    r"|(?P<comment>//[^\n]*|/\*.*?\*/)|(?P<name>[A-Za-z_$][\w$]*)|(?P<space>\s+)|(?P<other>.)",
    re.S,
)
_ALIASES = ("withFallbackKeys", "withDeprecatedKeys")


def tokens(source: str) -> list[tuple[str, str]]:
    """(kind, text) of the Java source, comments and whitespace dropped, strings unquoted."""
    out = []
    for m in _TOKEN.finditer(source):
        kind = m.lastgroup or "other"
        if kind in ("comment", "space"):
            continue
        text = m.group()
        if kind == "string":
            text = text[1:-1].encode().decode("unicode_escape")
        out.append((kind, text))
    return out


def string_constants(toks: Sequence[tuple[str, str]]) -> dict[str, str]:
    """`static final String NAME = "a" + "b";` constants, by name."""
    found = {}
    for i in range(len(toks) - 3):
        if toks[i] == ("name", "String") and toks[i + 2] == ("other", "="):
            j, parts = i + 3, []
            while j < len(toks) and toks[j][0] == "string":
                parts.append(toks[j][1])
                j += 1 if toks[j + 1] != ("other", "+") else 2
            if parts and toks[j - 1][0] == "string" and toks[j] == ("other", ";"):
                found[toks[i + 1][1]] = "".join(parts)
    return found


def _argument(toks: Sequence[tuple[str, str]], start: int, constants: dict[str, str]) -> str:
    """The key a `key(...)` argument spells, a variable part as `*`."""
    parts, depth, i = [], 0, start
    while i < len(toks):
        kind, text = toks[i]
        if text == "(":
            depth += 1
        elif text == ")":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and kind == "string":
            parts.append(text)
        elif depth == 0 and kind == "name":
            parts.append(constants.get(text, "*"))
        i += 1
    return "".join(parts)


def _field(toks: Sequence[tuple[str, str]], at: int) -> str:
    """The `ConfigOption<...> NAME =` a key is declared as, or the method it sits in."""
    i = at
    while i > 0 and toks[i][1] not in (";", "{", "}"):
        i -= 1
    names = [t for kind, t in toks[i + 1 : at] if kind == "name"]
    if toks[i][1] == "{" and "ConfigOption" not in names:
        # inside a method body: the method's name stands before its parameter list
        j = i - 1
        depth = 0
        while j > 0:
            if toks[j][1] == ")":
                depth += 1
            elif toks[j][1] == "(":
                depth -= 1
                if depth == 0:
                    return toks[j - 1][1] + "()"
            j -= 1
    if "=" in [t for _, t in toks[i + 1 : at]]:
        eq = max(k for k in range(i + 1, at) if toks[k][1] == "=")
        return toks[eq - 1][1]
    return ""


def declared(source: str, cls: str, role: str) -> Iterator[Declared]:
    """Every key the class's source declares, with the aliases of each."""
    toks = tokens(source)
    constants = string_constants(toks)
    for i in range(len(toks) - 1):
        if toks[i] != ("name", "key") or toks[i + 1][1] != "(":
            continue
        if i > 0 and toks[i - 1][1] == "." and toks[i - 2][1] != "ConfigOptions":
            continue  # options.key(), not ConfigOptions.key()
        key = _argument(toks, i + 2, constants)
        field = _field(toks, i)
        yield Declared(key, role, cls, field, "")
        j = i
        while j < len(toks) and toks[j][1] != ";":
            if toks[j][1] in _ALIASES:
                for alias in _arguments(toks, j + 2):
                    yield Declared(alias, role, cls, field, key)
            j += 1


def _arguments(toks: Sequence[tuple[str, str]], start: int) -> list[str]:
    """The string literals of an argument list."""
    out, i = [], start
    while i < len(toks) and toks[i][1] != ")":
        if toks[i][0] == "string":
            out.append(toks[i][1])
        i += 1
    return out


def class_paths(repo: str, tag: str) -> dict[str, str]:
    """Where each class of CLASSES lives at the tag (non-test sources only)."""
    listing = subprocess.run(
        ["git", "-C", repo, "ls-tree", "-r", "--name-only", tag],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\n")
    paths = {}
    for path in listing:
        name = path.rsplit("/", 1)[-1].removesuffix(".java")
        if name in CLASSES and "/src/main/java/" in path:
            paths[name] = path
    return paths


def extract(repo: str, tags: Sequence[str]) -> list[tuple[str, ...]]:
    """The census key list over the tags: each key with the first and last tag declaring it."""
    seen: dict[Declared, list[str]] = {}
    for tag in tags:
        for cls, path in sorted(class_paths(repo, tag).items()):
            source = subprocess.run(
                ["git", "-C", repo, "show", f"{tag}:{path}"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            for d in declared(source, cls, CLASSES[cls]):
                seen.setdefault(d, []).append(tag)
    return sorted(astuple(replace(d, first=found[0], last=found[-1])) for d, found in seen.items())


def main(argv: Sequence[str]) -> None:
    """Print the key list of the tags as tab-separated lines under a header."""
    repo, tags = argv[0], argv[1:]
    commits = [
        subprocess.run(
            ["git", "-C", repo, "rev-parse", f"{tag}^{{commit}}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        for tag in tags
    ]
    print(f"# apache/paimon option keys: python -m {__spec__.name} REPO {' '.join(tags)}")
    for tag, commit in zip(tags, commits, strict=True):
        print(f"# {tag} {commit}")
    print("\t".join(HEADER))
    for row in extract(repo, tags):
        print("\t".join(row))


if __name__ == "__main__":
    main(sys.argv[1:])
