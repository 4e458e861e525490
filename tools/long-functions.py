#!/usr/bin/env python3
"""List the functions of src/ longer than a bound (issue 36: "functions under ~60 lines").

    tools/long-functions.py [--max 60] [--all] [DIR]

A function's length is its lines from the line of `fn` to the line of its closing `}`,
both counted (doc comments and attributes above it are not). Tests are left out: files
named tests.rs or under a tests/ directory, and every `#[cfg(test)]` item (a module or a
function). Functions inside functions are listed on their own (and counted in their
outer one too). Prints `LINES file:line name`, longest first, then the count; exit 0.
"""
import argparse
import os
import re
import sys


def strip(src):
    """The source with comments, strings and char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif (m := re.match(r'b?r(#*)"', src[i:i + 300])) and not re.match(r"\w", src[i - 1] if i else " "):
            end = '"' + m.group(1)
            j = src.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == "'" and (m := re.match(r"'(\\(x..|u\{[0-9a-fA-F]+\}|.)|[^\\'])'", src[i:i + 12], re.S)):
            out.append(" " * m.end())
            i += m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def block_end(code, open_at):
    """Index of the `}` closing the `{` at open_at."""
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def without_tests(code):
    """`code` (stripped) with every `#[cfg(test)]` item blanked: a module's or a
    function's, up to its block's end."""
    for m in reversed(list(re.finditer(r"#\[cfg\(test\)\]", code))):
        brace = code.find("{", m.end())
        semi = code.find(";", m.end())
        if brace < 0 or (0 <= semi < brace):
            continue
        end = block_end(code, brace)
        code = code[: m.start()] + re.sub(r"[^\n]", " ", code[m.start(): end + 1]) + code[end + 1:]
    return code


def functions(path):
    code = without_tests(strip(open(path, encoding="utf-8").read()))
    for m in re.finditer(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)", code):
        # the body's `{`: the first one outside the signature's (), [] and <> (a `;` first: no body)
        depth, j = 0, m.end()
        while j < len(code):
            c = code[j]
            if c in "([":
                depth += 1
            elif c in ")]":
                depth -= 1
            elif depth == 0 and c == ";":
                j = -1
                break
            elif depth == 0 and c == "{":
                break
            j += 1
        if j < 0 or j >= len(code):
            continue
        end = block_end(code, j)
        first = code.count("\n", 0, m.start()) + 1
        last = code.count("\n", 0, end) + 1
        yield last - first + 1, first, m.group(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max", type=int, default=60, help="list functions longer than this (default 60)")
    ap.add_argument("--all", action="store_true", help="list every function")
    ap.add_argument("dir", nargs="?", default="src")
    a = ap.parse_args()
    found = []
    for root, dirs, files in os.walk(a.dir):
        dirs[:] = sorted(d for d in dirs if d != "tests")
        for f in sorted(files):
            if f.endswith(".rs") and f != "tests.rs":
                p = os.path.join(root, f)
                found += [(lines, f"{p}:{line}", name) for lines, line, name in functions(p)]
    found.sort(key=lambda t: (-t[0], t[1]))
    shown = found if a.all else [t for t in found if t[0] > a.max]
    for lines, where, name in shown:
        print(f"{lines:5} {where} {name}")
    if not a.all:
        print(f"{len(shown)} functions over {a.max} lines (of {len(found)})")


if __name__ == "__main__":
    sys.exit(main())
