"""Every command of ``python -m cnce`` that writes files lets the user choose where (issue 44):
``--out`` or ``--results-dir``. A new command fails here until it is classified."""
import pytest

from cnce.cli import COMMANDS, build_parser

#: command -> the option that chooses where it writes
WRITES = {"run": "--results-dir", "image-train": "--out", "image-pack": "--out", "nn-study": "--out"}
#: commands that write nothing a user chooses (``compile`` fills numba's cache beside the package,
#: in ``__pycache__``, which git ignores)
NO_FILES = {"list", "models", "compile"}


def test_every_command_is_classified():
    assert set(WRITES) | NO_FILES == set(COMMANDS)


@pytest.mark.parametrize("command", sorted(WRITES))
def test_writing_command_takes_a_folder(command):
    parser = build_parser(command)
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    assert WRITES[command] in sub._option_string_actions, f"{command} has no {WRITES[command]}"
