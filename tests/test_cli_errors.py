"""The command line's error contract (cnce.errors): one ``error:`` line and exit 2 for input
errors, 1 for results and run errors; a traceback for anything else (a bug)."""
from __future__ import annotations

import errno

import pytest

from cnce import cli, provenance
from cnce.errors import StorageError


def _with_command(monkeypatch, exc):
    real = cli.build_parser

    def build(*a, **kw):  # build_parser(command): the parser of the chosen command (cnce.cli.COMMANDS)
        p = real(*a, **kw)
        sub = next(a for a in p._actions if a.dest == "command")
        c = sub.add_parser("boom")

        def raise_(args):
            raise exc

        c.set_defaults(func=raise_)
        return p

    monkeypatch.setattr(cli, "build_parser", build)


def test_results_dir_dev_null_is_one_line_exit_1(capsys):
    assert cli.main(["run", "consistency", "--results-dir", "/dev/null", "--no-progress"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot write /dev/null/") and "not a folder" in err[0]


def test_list_of_a_missing_folder_is_an_input_error(capsys, tmp_path):
    assert cli.main(["list", "--results-dir", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("exc,code", [(KeyboardInterrupt(), 1), (OSError(errno.ENOSPC, "No space left on device", "/x"), 1),
                                      (OSError(errno.EROFS, "Read-only file system", "/x"), 1)])
def test_interruption_and_storage_faults_are_one_line(monkeypatch, capsys, exc, code):
    _with_command(monkeypatch, exc)
    assert cli.main(["boom"]) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")


def test_anything_else_is_a_bug_with_its_traceback(monkeypatch):
    _with_command(monkeypatch, ValueError("torch's own complaint"))
    with pytest.raises(ValueError, match="torch's own complaint"):  # not swallowed into 'bad input'
        cli.main(["boom"])


def test_a_full_disk_is_a_storage_error_naming_the_file_and_the_old_file_is_kept(tmp_path):
    path = tmp_path / "table.csv"
    path.write_text("old\n")

    def full(fh):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(StorageError, match=r"cannot write .*table.csv: no space left on the device") as info:
        provenance.atomic_write(path, full)
    assert isinstance(info.value, OSError) and path.read_text() == "old\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
