#!/usr/bin/env python3
"""Check src/'s imports against ARCHITECTURE.md's layers (issue 36): no import circle, no
use of a layer above.

    tools/module-graph.py [--edges] [DIR...]   (default: src testserver/src)

Each file of src/ (tests left out, as tools/long-functions.py does) is a node; an edge
A -> B is any path of A that names an item of B: `use` trees (`crate::`, `super::`,
`self::`, a child module) and paths in the code (`crate::ops::wait::run(..)`). Prints the
import circles (groups of files that reach each other; a parent module and a child
that use each other count), then every edge that climbs a layer (LAYERS below, from
ARCHITECTURE.md; ALLOWED: the commands' clap types), with `--edges` every edge. The test server's crate (testserver/src) is read too, for
circles only (it has no layers).
A callback (a closure handed down, called from below) is not an edge: it is not an import. Exit 1 if there is a circle or a climb.
"""
import argparse
import importlib.util
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("long_functions", os.path.join(HERE, "long-functions.py"))
lf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lf)

# ARCHITECTURE.md's layers, top (0) to bottom; the first matching prefix (of the path
# under src/) decides.
LAYERS = [
    ("entry", ["main.rs", "lib.rs", "commands/verbs.rs", "commands/help.rs"]),
    ("commands", ["commands/", "settings/"]),
    ("command line", ["cli/"]),
    ("ops", ["ops/"]),
    ("domain", [
        "plan/", "inputs/", "preflight/", "verdict/", "cluster/",
        "local/", "render.rs",
        "trainlog/", "metrics/", "progress.rs", "progress/", "signals.rs", "diagnostics.rs", "bundle.rs", "bundle/",
        "yaml.rs", "starter.rs",
    ]),
    ("base", ["labels.rs", "duration.rs", "roles.rs", "framework.rs", "tag.rs", "errors.rs", "output.rs"]),
]


# Edges up a layer that ARCHITECTURE.md allows: none (the command line, `cli/`, is a
# layer below the commands that read it and the settings that lower it).
ALLOWED = []


def layer(rel):
    for rank, (name, prefixes) in enumerate(LAYERS):
        if any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in prefixes):
            return rank, name
    return None, "?"


def module_of(rel):
    """src-relative file -> module path (a tuple)."""
    parts = rel[:-3].split("/")
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def expand(tree):
    """A `use` tree's text -> its full paths (lists of segments)."""
    tree = re.sub(r"\s+", "", tree)

    def split_top(s):
        out, depth, cur = [], 0, ""
        for c in s:
            if c == "," and depth == 0:
                out.append(cur)
                cur = ""
                continue
            depth += c == "{"
            depth -= c == "}"
            cur += c
        if cur:
            out.append(cur)
        return out

    def go(prefix, s):
        if "{" in s and s.endswith("}"):
            head, inner = s.split("{", 1)
            head = [p for p in head.split("::") if p]
            for part in split_top(inner[:-1]):
                yield from go(prefix + head, part)
        else:
            s = re.sub(r"as\w+$", "", s) if "as" in s and "::" not in s.split("as")[-1] else s
            s = s.split(" as ")[0]
            segs = [p for p in s.split("::") if p and p != "*"]
            yield prefix + segs

    yield from go([], tree)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edges", action="store_true")
    ap.add_argument("dirs", nargs="*", default=["src", "testserver/src"])
    a = ap.parse_args()
    bad = 0
    for d in a.dirs:
        # The layers are src/'s; another crate (the test server) is checked for circles.
        layered = os.path.normpath(d) == "src"
        if len(a.dirs) > 1:
            print(f"{d}:")
        bad += check(d, layered, a.edges)
    return 1 if bad else 0


def check(src_dir, layered, show_edges):
    """Print src_dir's circles (and, if layered, its climbs); the count of problems."""
    a = argparse.Namespace(dir=src_dir, edges=show_edges)
    files = {}
    for root, dirs, names in os.walk(a.dir):
        dirs[:] = sorted(d for d in dirs if d != "tests")
        for f in sorted(names):
            if f.endswith(".rs") and f != "tests.rs":
                rel = os.path.relpath(os.path.join(root, f), a.dir)
                files[module_of(rel)] = rel
    edges = {}
    for mod, rel in files.items():
        code = lf.strip(open(os.path.join(a.dir, rel), encoding="utf-8").read())
        code = lf.without_tests(code)
        here = mod if not rel.endswith(("main.rs",)) else ("<main>",)
        paths = []
        for m in re.finditer(r"\buse\s+([^;]+);", code):
            paths += list(expand(m.group(1)))
        code_wo_use = re.sub(r"\buse\s+[^;]+;", " ", code)
        for m in re.finditer(r"(?<![\w:])((?:[A-Za-z_]\w*)(?:::[A-Za-z_]\w*)+)", code_wo_use):
            paths.append(m.group(1).split("::"))
        targets = set()
        for p in paths:
            if not p:
                continue
            if p[0] == "crate":
                base, rest = (), p[1:]
            elif p[0] == "super":
                base, rest = mod, p
                while rest and rest[0] == "super":
                    base, rest = base[:-1], rest[1:]
            elif p[0] == "self":
                base, rest = mod, p[1:]
            elif mod + (p[0],) in files:
                base, rest = mod, p
            elif rel == "main.rs" and p[0] == "tf_spawner":
                base, rest = (), p[1:]
            else:
                continue
            target = base
            for seg in rest:
                if target + (seg,) in files:
                    target = target + (seg,)
                else:
                    break
            if target in files and files[target] != rel:
                targets.add(files[target])
        edges[rel] = targets
    # circles: Tarjan's strongly connected components
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    bad = 0
    for comp in sccs:
        print("circle: " + " <-> ".join(comp))
        bad += 1
    for src in sorted(edges):
        for dst in sorted(edges[src]):
            (rs, ns), (rd, nd) = layer(src), layer(dst)
            climbs = layered and rs is not None and rd is not None and rd < rs and (ns, dst) not in ALLOWED
            if climbs:
                print(f"climb: {src} ({ns}) -> {dst} ({nd})")
                bad += 1
            elif a.edges:
                print(f"edge: {src} ({ns}) -> {dst} ({nd})")
    unplaced = sorted(r for r in edges if layered and layer(r)[0] is None)
    for r in unplaced:
        print(f"no layer: {r} (add it to LAYERS and ARCHITECTURE.md)")
    print(f"{len(edges)} files, {sum(len(t) for t in edges.values())} edges, "
          f"{len(sccs)} circles, {bad - len(sccs)} climbs")
    return bad + len(unplaced)


if __name__ == "__main__":
    sys.exit(main())
