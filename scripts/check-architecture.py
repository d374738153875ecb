#!/usr/bin/env python3
"""Checks that docs/ARCHITECTURE.md names every module of every crate.

Issue 11 item 9: one line per module, matching the code. A module is each
file under crates/<crate>/src (a directory's mod.rs names the directory;
lib.rs and main.rs are the crate itself). It counts as named when a
backticked token in a section about its crate (a `## ` heading that names
the crate) is the module's name, `name/`, `name.rs`, or a path ending in
one of them. A module inside a directory must be named with its parent: a
token ending in `parent/name` (or `parent::name`), or its name where the
parent is named too: in one table row (`| `monitor/` | `sample`,
`threads` |`), list item or paragraph, so a bare name elsewhere in the
section (another module's `threads`) does not count. Prints the modules that are not
named, and exits 1 if any.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "ARCHITECTURE.md"


def sections(text):
    """Heading line -> the text under it, for every `## ` section."""
    parts = re.split(r"^## ", text, flags=re.M)
    return {p.splitlines()[0]: p for p in parts[1:]}


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
    """The section cut where one thing is said: a table row, a list item,
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
    """Whether the section `text` names the module at `path` (its parts
    under src/): a top-level module by its name anywhere, a nested one with
    its parent (see the module docs)."""
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


def main():
    by_heading = sections(DOC.read_text())
    missing = []
    for crate in sorted((ROOT / "crates").iterdir()):
        src = crate / "src"
        if not src.is_dir():
            continue
        text = "".join(t for h, t in by_heading.items() if re.search(rf"\b{crate.name}\b", h))
        for file in sorted(src.rglob("*.rs")):
            if file.name in ("lib.rs", "main.rs"):
                continue
            parts = file.relative_to(src).with_suffix("").parts
            path = parts[:-1] if file.name == "mod.rs" else parts
            if not named(path, text):
                module = "/".join(path)
                missing.append(f"{file.relative_to(ROOT)}: `{module}` is not named in a `## {crate.name}` section")
    for line in missing:
        print(line)
    if missing:
        print(f"{len(missing)} module(s) missing from {DOC.relative_to(ROOT)}")
        return 1
    print(f"every module is named in {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
