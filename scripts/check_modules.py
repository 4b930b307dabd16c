#!/usr/bin/env python3
"""Module cycles inside each crate of the workspace.

A module depends on another when its non-test code names a path into it:
`use crate::a::b::Item`, `crate::a::f()`, `super::x`, `self::y` (braced
`use` groups included, and names the crate root re-exports resolved to where
they come from). Declaring a child module (`mod x;`) is not a dependency. The
check reads each crate's module tree from its root (`lib.rs` or `main.rs`)
through its `mod` declarations, leaves out `#[cfg(test)]` items, and reports
every strongly connected component of two or more modules.

A cycle listed in `scripts/module-cycles-allowed.txt` (one per line: the
crate, a colon, its modules separated by spaces) is reported but tolerated;
any other cycle, one that grew beyond its listed modules, one that shrank
(write the line anew: the list says exactly what is left) and a listed cycle
that no longer exists (remove its line) fail the check.

    scripts/check_modules.py            check every crate
    scripts/check_modules.py --print    print every cycle, tolerated or not
    scripts/check_modules.py DIR ...    check the crates rooted at DIR/src
"""

import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALLOWED = os.path.join(ROOT, "scripts", "module-cycles-allowed.txt")
# `use a::B as C` once whitespace is gone from a use tree.
AS = "@as@"


def strip_code(text):
    """The text with comments, string and char literals blanked out."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    if text[i] == "\n":
                        out.append("\n")
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:]) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append("\n" * text.count("\n", i, j))
            out.append('""')
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append("\n" * text.count("\n", i, j))
            out.append('""')
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:]):
            m = re.match(r"'(\\.|[^\\'])'", text[i:])
            out.append("' '")
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def item_end(text, start):
    """The index just past the item beginning at `start` (a `;` or a balanced block)."""
    depth = 0
    i = start
    while i < len(text):
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        elif c == ";" and depth == 0:
            return i + 1
        i += 1
    return len(text)


def drop_test_items(text):
    """The text without items marked `#[cfg(test)]`."""
    while True:
        m = re.search(r"#\[cfg\(test\)\]", text)
        if not m:
            return text
        text = text[: m.start()] + text[item_end(text, m.end()):]


def inline_modules(text):
    """(name, body) of each inline `mod name { ... }` at this level, and the text without them."""
    mods = []
    while True:
        m = re.search(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*\{", text)
        if not m:
            return mods, text
        end = item_end(text, m.end() - 1)
        mods.append((m.group(1), text[m.end(): end - 1]))
        text = text[: m.start()] + text[end:]


def expand_use(tree):
    """The paths a `use` tree names: `a::{b, c::{d, e}}` -> a::b, a::c::d, a::c::e."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+", AS, tree))
    brace = tree.find("{")
    if brace < 0:
        return [tree]
    prefix = tree[:brace]
    inner = tree[brace + 1: tree.rfind("}")]
    parts, depth, cur = [], 0, ""
    for c in inner:
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += c == "{"
        depth -= c == "}"
        cur += c
    parts.append(cur)
    out = []
    for p in parts:
        if p:
            out.extend(prefix + q for q in expand_use(p))
    return out


class Crate:
    def __init__(self, name, src_root):
        self.name = name
        self.modules = {}  # path tuple -> code text
        self.reexports = {}  # name at the root -> module path it comes from
        self.load((), src_root, os.path.dirname(src_root))
        self.resolve_root_reexports()

    def load(self, path, file, dir_for_children, text=None):
        if text is None:
            with open(file) as f:
                text = f.read()
        code = drop_test_items(strip_code(text))
        inline, code = inline_modules(code)
        self.modules[path] = code
        for name, body in inline:
            self.load(path + (name,), None, os.path.join(dir_for_children, name), body)
        for m in re.finditer(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", code):
            name = m.group(1)
            child_dir = os.path.join(dir_for_children, name)
            for cand in (child_dir + ".rs", os.path.join(child_dir, "mod.rs")):
                if os.path.exists(cand):
                    self.load(path + (name,), cand, child_dir)
                    break

    def resolve_root_reexports(self):
        root = self.modules.get((), "")
        for m in re.finditer(r"\bpub\s+use\s+([^;]+);", root):
            for p in expand_use(m.group(1)):
                segs = [s for s in p.replace("crate::", "").split("::") if s]
                if not segs:
                    continue
                real, _, alias = segs[-1].partition(AS)
                segs[-1] = real
                target = self.longest_module(tuple(segs))
                if target:
                    self.reexports[alias or real] = target

    def longest_module(self, segs):
        for k in range(len(segs), 0, -1):
            if tuple(segs[:k]) in self.modules:
                return tuple(segs[:k])
        return None

    def resolve(self, here, path):
        segs = [s for s in path.split("::") if s]
        if not segs:
            return None
        if segs[0] == "crate":
            rest = segs[1:]
            if rest and (rest[0],) not in self.modules and rest[0] in self.reexports:
                return self.reexports[rest[0]]
            return self.longest_module(tuple(rest)) if rest else None
        base = list(here)
        if segs[0] == "self":
            segs = segs[1:]
        elif segs[0] == "super":
            while segs and segs[0] == "super":
                if not base:
                    return None
                base.pop()
                segs = segs[1:]
            if not segs:
                return tuple(base)
            target = self.longest_module(tuple(base + segs))
            return target if target is not None else tuple(base)
        else:
            return None
        return self.longest_module(tuple(base + segs))

    def edges(self):
        out = {m: set() for m in self.modules}
        for m, code in self.modules.items():
            paths = []
            for u in re.finditer(r"\buse\s+([^;]+);", code):
                paths.extend(expand_use(u.group(1)))
            paths.extend(re.findall(r"(?<![\w:])((?:crate|super|self)(?:::(?:\w+|super))+)", code))
            for p in paths:
                t = self.resolve(m, p.partition(AS)[0])
                if t is not None and t != m:
                    out[m].add(t)
        return out


def sccs(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(100000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def name(path):
    return "::".join(path) if path else "(root)"


def crates_of_workspace():
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
            cwd=ROOT, check=True, capture_output=True, text=True,
        ).stdout
    )
    out = []
    for p in meta["packages"]:
        for t in p["targets"]:
            if set(t["kind"]) & {"lib", "bin"}:
                out.append((f"{p['name']}/{t['name']}" if "bin" in t["kind"] else p["name"], t["src_path"]))
    return out


def load_allowed():
    allowed = {}
    if os.path.exists(ALLOWED):
        with open(ALLOWED) as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    crate, mods = line.split(":", 1)
                    allowed.setdefault(crate.strip(), []).append(set(mods.split()))
    return allowed


def main(argv):
    printing = "--print" in argv
    dirs = [a for a in argv if not a.startswith("--")]
    if dirs:
        targets = []
        for d in dirs:
            for f in ("lib.rs", "main.rs"):
                p = os.path.join(d, "src", f)
                if os.path.exists(p):
                    targets.append((os.path.basename(os.path.abspath(d)), p))
        allowed = {}
    else:
        targets = crates_of_workspace()
        allowed = load_allowed()
    failures = 0
    seen_allowed = set()
    total = 0
    for crate, src in targets:
        c = Crate(crate, src)
        total += len(c.modules)
        edges = c.edges()
        for comp in sccs(edges):
            names = {name(m) for m in comp}
            fits = None
            for i, a in enumerate(allowed.get(crate, [])):
                if names <= a:
                    fits = i
            if fits is not None and names != allowed[crate][fits]:
                seen_allowed.add((crate, fits))
                failures += 1
                print(
                    f"{crate}: a tolerated cycle shrank; write its line as: "
                    f"{crate}: {' '.join(sorted(names))}",
                    file=sys.stderr,
                )
            elif fits is not None:
                seen_allowed.add((crate, fits))
                if printing:
                    print(f"{crate}: tolerated cycle of {len(names)}: {' '.join(sorted(names))}")
            else:
                failures += 1
                print(f"{crate}: module cycle: {' '.join(sorted(names))}", file=sys.stderr)
                for m in comp:
                    inside = sorted(name(t) for t in edges[m] if t in comp)
                    print(f"    {name(m)} -> {', '.join(inside)}", file=sys.stderr)
    for crate, lst in allowed.items():
        for i, a in enumerate(lst):
            if (crate, i) not in seen_allowed:
                failures += 1
                print(
                    f"{crate}: the tolerated cycle {' '.join(sorted(a))} is gone; "
                    f"remove its line from {os.path.relpath(ALLOWED, ROOT)}",
                    file=sys.stderr,
                )
    if not failures:
        print(f"check_modules: {len(targets)} crate targets, {total} modules, no new cycle")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
