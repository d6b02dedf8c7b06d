"""The linter (ruff, configured in pyproject.toml: pyflakes and statement errors) passes on the
package, the companion, the tests, the benchmarks and the scripts."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_passes():
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


def test_ruff_can_fail(tmp_path):
    (tmp_path / "bad.py").write_text("import os\nprint(undefined_name)\n")
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"),
                          str(tmp_path / "bad.py")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 1 and "F401" in out.stdout and "F821" in out.stdout, out.stdout
