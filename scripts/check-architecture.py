#!/usr/bin/env python3
"""Checks that docs/ARCHITECTURE.md is a true map, and that each crate's
README.md names the crate's modules.

Issue 28 item 5: ARCHITECTURE.md is a map (crates, arrows, rules, recipes)
of at most 300 lines; the per-module detail lives in the crates' READMEs.
Four checks, each printing what is missing and where to add it:

1. every crate directory under crates/ (and the fuzz crate) is named in
   docs/ARCHITECTURE.md as a backticked name (`tinct-core`);
2. the arrows: the fenced block ```arrows of docs/ARCHITECTURE.md, one line
   per crate, `tinct-x -> tinct-a, tinct-b?` (`?` marks an optional
   dependency, `(none)` a crate with no tinct dependency), equals the
   dependencies among tinct's crates read from every Cargo.toml:
   [dependencies] and [target.*.dependencies], optional ones included;
   dev- and build-dependencies are not arrows. A missing arrow and an
   arrow that no longer exists both fail, naming the edge;
3. docs/ARCHITECTURE.md has at most 300 lines;
4. every module of every crate under crates/ is named in that crate's
   README.md. A module is each file under crates/<crate>/src (a
   directory's mod.rs names the directory; lib.rs and main.rs are the
   crate itself). It counts as named when a backticked token in the README
   is the module's name, `name/`, `name.rs`, or a path ending in one of
   them. A module inside a directory must be named with its parent: a
   token ending in `parent/name` (or `parent::name`), or its name where
   the parent is named too: in one table row (`| `monitor/` | `sample`,
   `threads` |`), list item or paragraph, so a bare name elsewhere (another
   module's `threads`) does not count.

Exits 1 if any check fails, 0 otherwise.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "ARCHITECTURE.md"
MAX_LINES = 300
# Crates outside crates/ that are part of the map.
EXTRA_CRATES = [ROOT / "fuzz"]
DEPENDENCY_TABLE = re.compile(r"^(target\..+\.)?dependencies$")


def tokens(text):
    """Every backticked token, and each comma-separated name inside one."""
    found = set()
    for token in re.findall(r"`([^`\n]+)`", text):
        for piece in re.split(r"[,\s]+", token):
            piece = piece.strip()
            if piece:
                found.add(piece)
    return found


def blocks(text):
    """The text cut where one thing is said: a table row, a list item,
    a paragraph (ended by a blank line)."""
    found, current = [], []
    for line in text.splitlines():
        starts = line.startswith("|") or line.lstrip().startswith("- ") or not line.strip()
        if starts and current:
            found.append("\n".join(current))
            current = []
        if line.strip():
            current.append(line)
        if line.startswith("|"):
            found.append(line)
            current = []
    if current:
        found.append("\n".join(current))
    return found


def names_module(token, module):
    """Whether a backticked token names `module` (a name or a path ending in it)."""
    token = token.rstrip("/").removesuffix(".rs")
    return token == module or token.endswith("/" + module) or token.endswith("::" + module)


def named(path, text):
    """Whether `text` names the module at `path` (its parts under src/):
    a top-level module by its name anywhere, a nested one with its parent
    (see the module docs)."""
    if len(path) == 1:
        return any(names_module(t, path[0]) for t in tokens(text))
    parent, module = path[-2], path[-1]
    if any(names_module(t, f"{parent}/{module}") or names_module(t, f"{parent}::{module}")
           for t in tokens(text)):
        return True
    for block in blocks(text):
        line_tokens = tokens(block)
        if any(names_module(t, module) for t in line_tokens) and any(
            names_module(t, parent) for t in line_tokens
        ):
            return True
    return False


# --- Cargo.toml -------------------------------------------------------------

def parse_toml(text):
    """The Cargo.toml as tables: tomllib where Python has it (3.11+), else
    a reader of the small subset Cargo manifests here use for [package]
    name and dependency tables."""
    try:
        import tomllib
        return tomllib.loads(text)
    except ImportError:
        pass
    data = {}
    table = data
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip() if not raw.strip().startswith("#") else ""
        if not line:
            continue
        header = re.fullmatch(r"\[\[?([^\]]+)\]\]?", line)
        if header:
            table = data
            # Quoted keys (target.'cfg(...)') hold dots: split outside quotes.
            for part in re.findall(r"'[^']*'|\"[^\"]*\"|[^.]+", header.group(1)):
                table = table.setdefault(part.strip("'\""), {})
            continue
        key, _, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if "." in key:  # name.workspace = true
            key = key.split(".")[0]
            table.setdefault(key, {})
            continue
        if value.startswith("{"):
            table[key] = {"optional": bool(re.search(r"optional\s*=\s*true", value))}
            package = re.search(r"package\s*=\s*\"([^\"]+)\"", value)
            if package:
                table[key]["package"] = package.group(1)
        elif key == "optional" and value == "true":
            table["optional"] = True
        else:
            table[key] = value.strip("\"")
    return data


def manifests():
    """Every crate of the map: (directory, package name, manifest)."""
    found = []
    dirs = sorted(p for p in (ROOT / "crates").iterdir() if (p / "Cargo.toml").is_file())
    for crate in dirs + [p for p in EXTRA_CRATES if (p / "Cargo.toml").is_file()]:
        manifest = parse_toml((crate / "Cargo.toml").read_text())
        found.append((crate, manifest["package"]["name"], manifest))
    return found


def dependency_tables(manifest):
    """The normal dependency tables: [dependencies] and [target.X.dependencies]."""
    tables = []
    if "dependencies" in manifest:
        tables.append(("dependencies", manifest["dependencies"]))
    for target, spec in manifest.get("target", {}).items():
        if "dependencies" in spec:
            tables.append((f"target.{target}.dependencies", spec["dependencies"]))
    return tables


def cargo_edges(crates):
    """(from, to) -> optional, for every dependency among tinct's crates."""
    names = {name for _, name, _ in crates}
    edges = {}
    for _, name, manifest in crates:
        for _, table in dependency_tables(manifest):
            for key, spec in table.items():
                spec = spec if isinstance(spec, dict) else {}
                target = spec.get("package", key)
                if target in names:
                    optional = bool(spec.get("optional", False))
                    # Optional in one table, required in another: required.
                    edges[(name, target)] = edges.get((name, target), True) and optional
    return edges


# --- docs/ARCHITECTURE.md ---------------------------------------------------

def doc_arrows(text):
    """The arrows block: (edges (from, to) -> optional, crates with a line,
    problems), or None when the doc has no ```arrows block."""
    block = re.search(r"^```arrows[ \t]*\n(.*?)^```", text, re.M | re.S)
    if not block:
        return None
    first_line = text[: block.start()].count("\n") + 2
    edges, sources, problems = {}, set(), []
    for offset, line in enumerate(block.group(1).splitlines()):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{DOC.relative_to(ROOT)}:{first_line + offset}"
        source, arrow, targets = line.partition("->")
        source = source.strip()
        if not arrow or not source:
            problems.append(f"{where}: `{line}` is not `crate -> crate, crate?, ...`")
            continue
        if source in sources:
            problems.append(f"{where}: `{source}` has a second line; give each crate one")
        sources.add(source)
        targets = targets.strip()
        if targets == "(none)":
            continue
        for target in (t.strip() for t in targets.split(",")):
            optional = target.endswith("?")
            target = target.removesuffix("?").strip()
            if not target:
                problems.append(f"{where}: an empty name in `{line}`")
                continue
            edges[(source, target)] = optional
    return edges, sources, problems


def check_map(crates, text):
    """Checks 1-3: crates named, arrows equal to Cargo's, length."""
    problems = []
    doc = DOC.relative_to(ROOT)
    named_tokens = tokens(text)
    for crate, name, _ in crates:
        if name not in named_tokens:
            where = crate.relative_to(ROOT)
            problems.append(
                f"{where}: crate `{name}` is not named in {doc}: "
                f"add it (backticked) with its one job to the crate table"
            )

    arrows = doc_arrows(text)
    if arrows is None:
        problems.append(f"{doc}: no ```arrows block (one line per crate: `tinct-x -> tinct-a, tinct-b?`)")
    else:
        written, sources, syntax = arrows
        problems += syntax
        actual = cargo_edges(crates)
        names = {name for _, name, _ in crates}
        manifest_of = {name: crate / "Cargo.toml" for crate, name, _ in crates}
        for name in sorted(names - sources):
            problems.append(
                f"{doc}: the arrows block has no line for `{name}`: "
                f"add `{name} -> ...` (or `{name} -> (none)`)"
            )
        for name in sorted(sources - names):
            problems.append(f"{doc}: the arrows block names `{name}`, which is no crate: remove its line")
        for (source, target), optional in sorted(actual.items()):
            mark = "?" if optional else ""
            if (source, target) not in written:
                problems.append(
                    f"{manifest_of[source].relative_to(ROOT)}: arrow `{source} -> {target}{mark}` "
                    f"is missing from the arrows block of {doc}"
                )
            elif written[(source, target)] != optional:
                kind = "optional" if optional else "not optional"
                problems.append(
                    f"{doc}: arrow `{source} -> {target}` is {kind} in "
                    f"{manifest_of[source].relative_to(ROOT)}: write it `{target}{mark}`"
                )
        for (source, target) in sorted(set(written) - set(actual)):
            where = manifest_of.get(source)
            where = where.relative_to(ROOT) if where else "no Cargo.toml"
            problems.append(
                f"{doc}: arrow `{source} -> {target}` no longer exists "
                f"({where} has no such dependency): remove it"
            )

    lines = len(text.splitlines())
    if lines > MAX_LINES:
        problems.append(
            f"{doc}: {lines} lines, at most {MAX_LINES}: move detail to the crates' README.md"
        )
    return problems


def check_modules(crates):
    """Check 4: every module of a crate under crates/ is named in its README."""
    problems = []
    for crate, name, _ in crates:
        src = crate / "src"
        if crate.parent != ROOT / "crates" or not src.is_dir():
            continue
        readme = crate / "README.md"
        text = readme.read_text() if readme.is_file() else ""
        for file in sorted(src.rglob("*.rs")):
            if file.name in ("lib.rs", "main.rs"):
                continue
            parts = file.relative_to(src).with_suffix("").parts
            path = parts[:-1] if file.name == "mod.rs" else parts
            if not named(path, text):
                module = "/".join(path)
                problems.append(
                    f"{file.relative_to(ROOT)}: module `{module}` is not named in "
                    f"{readme.relative_to(ROOT)}: add it to its Modules section"
                )
    return problems


def main():
    crates = manifests()
    text = DOC.read_text()
    map_problems = check_map(crates, text)
    module_problems = check_modules(crates)
    for line in map_problems + module_problems:
        print(line)
    if map_problems:
        print(f"{len(map_problems)} problem(s) with the map {DOC.relative_to(ROOT)}")
    if module_problems:
        print(f"{len(module_problems)} module(s) missing from their crate's README.md")
    if map_problems or module_problems:
        return 1
    edges = len(cargo_edges(crates))
    print(
        f"{DOC.relative_to(ROOT)} names all {len(crates)} crates and their {edges} arrows "
        f"in {len(text.splitlines())} lines; every crate's README.md names its modules"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
