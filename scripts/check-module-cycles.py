#!/usr/bin/env python3
"""Checks that no crate's top-level modules import each other in a circle.

Issue 11 item 5: modules form a hierarchy, so each can be read (and
tested) from the bottom up. For every crate under crates/, a top-level
module (a file or directory under src/) depends on another when its
non-test code names `crate::other` (also inside `use crate::{...}`).
Prints each circle found and exits 1 if there is one that is not allowed
below.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Circles that are the design, with why.
ALLOWED = {
    # Python's object model: `TaskSet.plan()` returns a `Plan`, and a
    # `Plan` holds the planned `TaskSet`.
    ("tinct-py", ("plan", "taskset")),
}


def non_test_code(text):
    """The text without comments and without a trailing `#[cfg(test)] mod`."""
    test = re.search(r"^#\[cfg\(test\)\]\s*\n\s*mod \w+", text, re.M)
    if test:
        text = text[: test.start()]
    return re.sub(r"//[^\n]*", "", text)


def dependencies(src):
    """Top-level module -> the top-level modules its non-test code names."""
    deps = {}
    for file in sorted(src.rglob("*.rs")):
        parts = file.relative_to(src).parts
        if parts[0] in ("lib.rs", "main.rs") or file.name == "tests.rs":
            continue
        top = parts[0].removesuffix(".rs")
        text = non_test_code(file.read_text())
        names = set(re.findall(r"\bcrate::(\w+)", text))
        for group in re.findall(r"\bcrate::\{([^}]*)\}", text):
            names.update(re.findall(r"(?:^|,)\s*(\w+)", group))
        deps.setdefault(top, set()).update(names - {top})
    return {m: {d for d in ds if d in deps} for m, ds in deps.items()}


def circles(deps):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(deps[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(tuple(sorted(component)))

    for v in sorted(deps):
        if v not in index:
            visit(v)
    return found


def main():
    sys.setrecursionlimit(10_000)
    bad = []
    for crate in sorted((ROOT / "crates").iterdir()):
        src = crate / "src"
        if not src.is_dir():
            continue
        deps = dependencies(src)
        for component in circles(deps):
            if (crate.name, component) in ALLOWED:
                continue
            bad.append(crate.name)
            print(f"{crate.name}: the modules {', '.join(component)} import each other in a circle:")
            for module in component:
                print(f"  {module} uses {', '.join(sorted(deps[module] & set(component)))}")
    if bad:
        print(f"{len(bad)} import circle(s)")
        return 1
    print("no import circles between top-level modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
