#!/usr/bin/env python3
"""Checks that docs/ARCHITECTURE.md names every module of every crate.

Issue 11 item 9: one line per module, matching the code. A module is each
file under crates/<crate>/src (a directory's mod.rs names the directory;
lib.rs and main.rs are the crate itself). It counts as named when a
backticked token in a section about its crate (a `## ` heading that names
the crate) is the module's name, `name/`, `name.rs`, or a path ending in
one of them. Prints the modules that are not named, and exits 1 if any.
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


def named(module, names):
    for token in names:
        token = token.rstrip("/").removesuffix(".rs")
        if token == module or token.endswith("/" + module) or token.endswith("::" + module):
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
        names = tokens(text)
        for file in sorted(src.rglob("*.rs")):
            if file.name in ("lib.rs", "main.rs"):
                continue
            module = file.parent.name if file.name == "mod.rs" else file.stem
            if not named(module, names):
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
