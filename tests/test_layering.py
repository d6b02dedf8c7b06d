"""The layering contract, checked on the import graph (every ``import`` statement of every module,
module level or inside functions, relative imports resolved; and, as a behaviour, what importing
every module actually loads).

* ``cnce`` (the library) never imports ``companion`` (the workshop beside it);
* the core estimator (``fit``, ``backends``, ``models``, ``noise``, ``losses``, ``eps``,
  ``options``, ``result``, ``optim``) imports none of the parts built on it (``experiments``,
  ``images``, ``nn``, ``plotting``, ``cli``);
* ``cnce.fit`` and the backends import no concrete model (they dispatch on declarations).
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path = ROOT) -> set[str]:
    """The absolute names of the modules ``path`` imports (``from a import b`` gives ``a`` and
    ``a.b``: ``b`` may be a module), and of string literals passed to ``import_module``."""
    mod = module_name(path, root)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add(target)
            out |= {f"{target}.{a.name}" for a in node.names}
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            out.add(node.args[0].value)
    return out


def graph(package: str) -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in sorted((ROOT / package).rglob("*.py"))}


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def test_the_graph_sees_relative_and_function_level_imports(tmp_path):
    # the checker must be able to fail: a module importing the companion in each way is caught
    (tmp_path / "cnce" / "sub").mkdir(parents=True)
    probe = tmp_path / "cnce" / "sub" / "probe.py"
    probe.write_text("from .. import fit\nfrom . import x\nimport importlib\n"
                     "def f():\n    import companion.book\n    importlib.import_module('companion.pages')\n")
    assert {"cnce.fit", "cnce.sub.x", "companion.book", "companion.pages"} <= imports_of(probe, tmp_path)


def test_the_library_never_imports_the_companion():
    bad = {m: sorted(i for i in imps if _under(i, "companion")) for m, imps in graph("cnce").items()}
    assert not {m: i for m, i in bad.items() if i}


CORE = ["cnce.fit", "cnce.backends", "cnce.models", "cnce.noise", "cnce.losses", "cnce.eps", "cnce.options",
        "cnce.result", "cnce.optim", "cnce._fused", "cnce._torch", "cnce.errors", "cnce._validation"]
HIGHER = ["cnce.experiments", "cnce.images", "cnce.nn", "cnce.plotting", "cnce.cli", "companion"]


def test_the_core_imports_nothing_built_on_it():
    bad = {m: sorted(i for i in imps if any(_under(i, h) for h in HIGHER))
           for m, imps in graph("cnce").items() if any(_under(m, c) for c in CORE)}
    assert not {m: i for m, i in bad.items() if i}


def test_fit_and_backends_import_no_concrete_model():
    for m, imps in graph("cnce").items():
        if _under(m, "cnce.backends") or m == "cnce.fit":
            models = {i for i in imps if _under(i, "cnce.models")}
            assert models <= {"cnce.models", "cnce.models.base", "cnce.models.UnnormalisedModel",
                              "cnce.models.base.UnnormalisedModel", "cnce.models.registered",
                              "cnce.models.base.registered"}, (m, models)


def test_importing_every_library_module_loads_no_companion_module():
    code = ("import importlib, pkgutil, sys, cnce\n"
            "for m in pkgutil.walk_packages(cnce.__path__, 'cnce.'):\n"
            "    if not m.name.endswith('__main__'):\n"
            "        importlib.import_module(m.name)\n"
            "print(sorted(n for n in sys.modules if n == 'companion' or n.startswith('companion.')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
