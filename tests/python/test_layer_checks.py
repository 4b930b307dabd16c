"""The workspace's shape checks themselves: scripts/check_modules.py must find a
module cycle where there is one (through `use`, inline paths, `super::`, braced
groups and root re-exports) and pass code that has none; both checks pass on
the workspace as it stands."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULES = os.path.join(ROOT, "scripts", "check_modules.py")
LAYERS = os.path.join(ROOT, "scripts", "check_layers.py")


def crate(tmp_path, files):
    for rel, text in files.items():
        p = tmp_path / "src" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return subprocess.run([sys.executable, MODULES, str(tmp_path)], capture_output=True, text=True)


LIB = "pub mod a;\npub mod b;\npub mod c;\npub use a::Top;\n"


@pytest.mark.parametrize("a_to_b", [
    "use crate::b::B;\npub struct Top;\n",
    "pub struct Top;\npub fn f() -> u8 { crate::b::g() }\n",
    "use crate::{c::C, b::{self, B}};\npub struct Top;\n",
])
def test_a_cycle_is_found_however_it_is_written(tmp_path, a_to_b):
    r = crate(tmp_path, {
        "lib.rs": LIB,
        "a.rs": a_to_b,
        "b.rs": "pub struct B;\npub fn g() -> u8 { 1 }\nuse crate::Top;\n",
        "c.rs": "pub struct C;\n",
    })
    assert r.returncode == 1, r.stdout + r.stderr
    assert "module cycle: a b" in r.stderr


@pytest.mark.parametrize("reexport,name", [
    ("pub use a::Class;", "Class"),
    ("pub use a::Top as Renamed;", "Renamed"),
])
def test_a_cycle_through_a_root_reexport_is_found_whatever_its_name(tmp_path, reexport, name):
    r = crate(tmp_path, {
        "lib.rs": "pub mod a;\npub mod b;\n" + reexport + "\n",
        "a.rs": "use crate::b::B;\npub struct Class;\npub struct Top;\n",
        "b.rs": f"pub struct B;\nuse crate::{name};\n",
    })
    assert r.returncode == 1, r.stdout + r.stderr
    assert "module cycle: a b" in r.stderr


def test_layers_pass_and_tests_comments_and_strings_do_not_count(tmp_path):
    r = crate(tmp_path, {
        "lib.rs": LIB,
        "a.rs": "use crate::b::B;\npub struct Top;\n",
        "b.rs": (
            "pub struct B;\n"
            "// use crate::a::Top;\n"
            "pub const S: &str = \"crate::a::Top\";\n"
            "#[cfg(test)]\nmod tests {\n    use crate::a::Top;\n}\n"
        ),
        "c.rs": "pub struct C;\n",
    })
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_child_using_its_parent_and_back_is_a_cycle(tmp_path):
    r = crate(tmp_path, {
        "lib.rs": "pub mod p;\n",
        "p/mod.rs": "mod kid;\npub struct P;\npub fn f() { kid::k() }\nuse self::kid::K;\n",
        "p/kid.rs": "pub struct K;\npub fn k() {}\nuse super::P;\n",
    })
    assert r.returncode == 1, r.stdout + r.stderr
    assert "p p::kid" in r.stderr


def test_the_workspace_passes_both_checks():
    for script in (MODULES, LAYERS):
        r = subprocess.run([sys.executable, script], capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 0, r.stdout + r.stderr
