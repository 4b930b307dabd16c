#!/usr/bin/env python3
"""The workspace's crate layers, checked against `cargo metadata`.

Rules:
  * the kernel (`keel-engine`) depends on no family crate and not on the
    server, in any kind of dependency (normal, build or dev): it builds and
    tests without them;
  * a family crate (under `crates/families/`) depends, in any kind of
    dependency, on the kernel and the layers below it only, plus the families
    its Cargo.toml names under `[package.metadata.keel] builds-on` (its tests
    live with the server, which assembles every family);
  * no crate but `keel-server` has a normal dependency on a family: the
    server alone assembles the command table;
  * the dependency block of ARCHITECTURE.md (between the `crate-graph`
    markers) is exactly the workspace's graph of normal dependencies.

`--print` writes that block instead of checking it.
"""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNEL = "keel-engine"
SERVER = "keel-server"
BELOW_KERNEL = {"keel-resp", "keel-store", "keel-persist", KERNEL}
BEGIN = "<!-- crate-graph begin: scripts/check_layers.py --print -->"
END = "<!-- crate-graph end -->"


def metadata():
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)["packages"]


def graph(packages):
    """Each workspace crate's workspace dependencies, by kind."""
    names = {p["name"] for p in packages}
    deps = {}
    for p in packages:
        kinds = {"normal": set(), "build": set(), "dev": set()}
        for d in p["dependencies"]:
            if d["name"] in names:
                kinds[d["kind"] or "normal"].add(d["name"])
        deps[p["name"]] = kinds
    return deps


def families(packages):
    fams = {}
    for p in packages:
        rel = os.path.relpath(p["manifest_path"], ROOT)
        if rel.startswith(os.path.join("crates", "families") + os.sep):
            meta = (p.get("metadata") or {}).get("keel") or {}
            fams[p["name"]] = set(meta.get("builds-on", []))
    return fams


def block(deps):
    lines = ["```"]
    for name in sorted(deps):
        normal = sorted(deps[name]["normal"])
        lines.append(f"{name} -> {', '.join(normal) if normal else '(none)'}")
    lines.append("```")
    return "\n".join(lines)


def main():
    packages = metadata()
    deps = graph(packages)
    fams = families(packages)
    if "--print" in sys.argv:
        print(BEGIN)
        print(block(deps))
        print(END)
        return 0
    errors = []
    if not fams:
        errors.append("no family crates found under crates/families/")
    kernel = deps.get(KERNEL)
    if kernel is None:
        errors.append(f"no {KERNEL} package")
    else:
        for kind, ds in kernel.items():
            for d in sorted(ds & (set(fams) | {SERVER})):
                errors.append(f"the kernel has a {kind} dependency on {d}")
    for fam, builds_on in sorted(fams.items()):
        for kind, ds in deps[fam].items():
            for d in sorted(ds - BELOW_KERNEL - builds_on):
                errors.append(
                    f"{fam} has a {kind} dependency on {d}; a family depends on the kernel "
                    "and the layers below it, or names the family it builds on in "
                    "[package.metadata.keel] builds-on"
                )
        for d in sorted(builds_on - set(fams)):
            errors.append(f"{fam} builds on {d}, which is not a family crate")
    for name, kinds in sorted(deps.items()):
        if name == SERVER or name in fams:
            continue
        for d in sorted(kinds["normal"] & set(fams)):
            errors.append(f"{name} depends on the family {d}; only {SERVER} assembles them")
    with open(os.path.join(ROOT, "ARCHITECTURE.md")) as f:
        doc = f.read()
    if BEGIN not in doc or END not in doc:
        errors.append("ARCHITECTURE.md has no crate-graph block")
    else:
        shown = doc.split(BEGIN, 1)[1].split(END, 1)[0].strip()
        if shown != block(deps):
            errors.append(
                "ARCHITECTURE.md's crate graph differs from cargo metadata; "
                "regenerate it with scripts/check_layers.py --print:\n" + block(deps)
            )
    for e in errors:
        print(f"check_layers: {e}", file=sys.stderr)
    if not errors:
        print(f"check_layers: {len(deps)} crates, {len(fams)} families, layers hold")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
