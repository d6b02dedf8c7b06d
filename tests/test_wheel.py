"""``pip install cnce`` works anywhere: the wheel is built from this tree, installed without its
dependencies into an empty folder outside the repository, and the README's two examples (the
quick start and the ``cnce.nn`` example) run there with nothing of the repository on the path.

The interpreter runs with ``-S`` (no ``site``: no ``.pth`` file, so no editable install of the
repository) and ``sys.path`` = the install folder + this environment's site-packages (torch and
the rest come from there). The numba kernels are compiled once per location (a fresh install
compiles them for minutes): the test copies this tree's compiled cache beside the installed
``_fused.py`` and gives that file this tree's modification time, numba's key for its cache.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _readme_block(after: str) -> str:
    text = (ROOT / "README.md").read_text()
    return re.search(r"```python\n(.*?)```", text[text.index(after):], re.S).group(1)


def _readme_output(after: str) -> str:
    text = (ROOT / "README.md").read_text()
    rest = text[text.index(after):]
    return re.search(r"prints\n\n```\n(.*?)```", rest, re.S).group(1)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    src = tmp_path_factory.mktemp("src")
    tracked = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "pyproject.toml", "README.md", "cnce",
                              "companion"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for rel in tracked:  # the working tree's packaging inputs (what a fresh clone of it holds)
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist),
                    str(src)], check=True, capture_output=True, text=True)
    (wheel,) = dist.glob("cnce-*.whl")
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target", str(target),
                    str(wheel)], check=True, capture_output=True, text=True)
    fused = target / "cnce" / "_fused.py"
    cache = ROOT / "cnce" / "__pycache__"
    if cache.is_dir():
        (fused.parent / "__pycache__").mkdir(exist_ok=True)
        for f in cache.glob("_fused.*.nb[ci]"):
            shutil.copy2(f, fused.parent / "__pycache__" / f.name)
        st = (ROOT / "cnce" / "_fused.py").stat()
        os.utime(fused, ns=(st.st_atime_ns, st.st_mtime_ns))
    return wheel, target


def _run(code: str, target: Path, cwd: Path) -> subprocess.CompletedProcess:
    # this environment's site-packages (resolved: a venv may be a link that lies inside the tree)
    paths = [str(target), *(str(Path(sysconfig.get_paths()[k]).resolve()) for k in ("purelib", "platlib"))]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    # nothing of the repository on the path but the environment's site-packages, which supply torch
    # and the rest (in CI the venv lies inside the repository; -S keeps its .pth files, the
    # editable install's among them, unread)
    guard = (f"import sys\nallowed = {paths!r}\n"
             f"assert not any(p and p.startswith({str(ROOT)!r}) and p not in allowed for p in sys.path), sys.path\n"
             "import cnce\n"
             f"assert cnce.__file__.startswith({str(target)!r}), cnce.__file__\n"
             "try:\n    import companion\nexcept ImportError:\n    pass\n"
             "else:\n    raise AssertionError('companion is importable')\n")
    return subprocess.run([sys.executable, "-S", "-c", guard + code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_the_wheel_holds_the_library_only(installed):
    wheel, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"cnce"}, tops
    assert not [n for n in names if n.endswith((".ipynb", ".pt", ".npz", ".csv", ".nbi", ".nbc", ".md"))]
    assert "cnce/fit.py" in names and "cnce/nn/__init__.py" in names


def test_the_readme_examples_run_from_the_wheel_alone(installed, tmp_path):
    _, target = installed
    work = tmp_path / "empty"
    work.mkdir()
    quick = _run(_readme_block("## Using the package"), target, work)
    print(quick.stdout, quick.stderr[-2000:])
    assert quick.returncode == 0, quick.stderr
    assert quick.stdout == _readme_output("## Using the package")
    nn = _run(_readme_block("## Use your own network"), target, work)
    print(nn.stdout, nn.stderr[-2000:])
    assert nn.returncode == 0, nn.stderr
    assert (work / "run.pt").is_file()  # its checkpoint, in the folder it ran in
    assert sorted(p.name for p in work.iterdir()) == ["run.pt"]  # nothing else written
