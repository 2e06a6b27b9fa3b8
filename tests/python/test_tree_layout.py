"""The source tree's layout rules that no compiler checks: core reaches the CPU backend through its
one interface header, cpu/backend.hpp (README's Layout)."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


def test_core_includes_no_cpu_header_but_the_backend_interface():
    core = ROOT / "src" / "core"
    files = sorted(p for p in core.rglob("*") if p.suffix in {".cpp", ".hpp", ".h"})
    assert files, f"no sources under {core}"
    found = [f"{p.relative_to(ROOT)} includes \"{inc}\""
             for p in files for inc in INCLUDE.findall(p.read_text())
             if inc.startswith("cpu/") and inc != "cpu/backend.hpp"]
    assert not found, "core reaches the backend through cpu/backend.hpp only:\n" + "\n".join(found)
