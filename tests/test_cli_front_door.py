"""The front door: ``import cnce`` and ``python -m cnce --help`` load no heavy library (torch, numba,
pandas, scipy); the top-level command table matches the parts' own parsers; ``cnce.fit`` stays the
function however the submodule is imported. (How long they take is measured in
``benchmarks/front_door.py``, as a ratio to ``python -c pass``.)"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "numba", "pandas", "scipy", "matplotlib")


def _loaded_after(code: str) -> list[str]:
    probe = code + f"\nimport sys\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return eval(out.stdout.strip().splitlines()[-1])


def test_import_cnce_loads_no_heavy_library():
    assert _loaded_after("import cnce; cnce.__version__") == []


def test_help_loads_no_heavy_library_and_lists_every_command():
    code = ("import contextlib, io\nfrom cnce.cli import main, COMMANDS\nbuf = io.StringIO()\n"
            "with contextlib.redirect_stdout(buf):\n    try:\n        main(['--help'])\n    except SystemExit:\n        pass\n"
            "assert all(c in buf.getvalue() for c in COMMANDS), buf.getvalue()")
    assert _loaded_after(code) == []


def test_the_probe_can_fail():
    assert _loaded_after("import cnce; cnce.fit") != []


def test_the_command_table_matches_the_parts():
    from cnce.cli import COMMANDS, build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help for a in sub._choices_actions}
    assert helps == {name: help_ for name, (_, help_) in COMMANDS.items()}
    assert {name: sub.choices[name]._defaults["func"].__module__ for name in sub.choices} == \
        {name: part for name, (part, _) in COMMANDS.items()}


def test_a_chosen_command_gets_its_own_parser():
    from cnce.cli import build_parser

    args = build_parser("run").parse_args(["run", "eps", "--scale", "paper"])
    assert args.func.__module__ == "cnce.experiments.cli" and args.scale == "paper"


def test_cnce_fit_stays_the_function():
    code = ("import cnce, importlib\nimport cnce.fit as f\nimportlib.import_module('cnce.fit')\n"
            "from cnce.fit import fit\nassert cnce.fit is fit and f is fit and callable(cnce.fit)\n"
            "assert cnce.METHODS and cnce.models.Ring and cnce.FitOptions and 'fit' in dir(cnce)")
    assert set(_loaded_after(code)) >= {"torch"}
