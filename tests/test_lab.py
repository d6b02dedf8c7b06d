"""The README's JupyterLab command (``scripts/lab.sh``), driven in headless Chromium.

The server is started the way a user starts it, through ``scripts/lab.sh``, on a free
localhost port with a random token, with Jupyter's per-user folders (configuration, data,
runtime, lab settings and workspaces, IPython) moved to a temporary folder so that nothing
of the tester's home is read or written. Then, as a user would:

* ``notebooks/00_quickstart.py`` opens as a notebook (double-click default: Jupytext's
  notebook view) with the project's kernel; *Run > Run All Cells* executes every code cell;
  the last cell's figure appears and no cell shows an error;
* saving the unedited notebook leaves the ``.py`` byte-for-byte unchanged and writes the
  outputs to the ignored paired ``notebooks/00_quickstart.ipynb``;
* editing the ``parameters`` cell and saving changes exactly that cell in the ``.py``;
* a ``tqdm.auto`` progress bar (what ``cnce`` uses) in a new cell renders as a widget, not as
  lines of text; and a new cell that raises is reported by the error check (so it can fail).

The files the test touches (the notebook, its paired ``.ipynb``, their checkpoints) are restored to what they were before, and the server is stopped, even on failure.
Skipped where no Chromium or no ``playwright`` package exists (see ``conftest.py``).
"""
from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from companion.reruns import read_notebook
from companion.paths import REPO_ROOT

# one JupyterLab server for the module: its tests stay on one pytest-xdist worker (--dist loadgroup)
pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("lab")]

ROOT = REPO_ROOT
NB_DIR = ROOT / "notebooks"
QUICKSTART = NB_DIR / "00_quickstart.py"
PAIRED = NB_DIR / "00_quickstart.ipynb"
CHECKPOINTS = NB_DIR / ".ipynb_checkpoints"
TOUCHED = [QUICKSTART, PAIRED, *(CHECKPOINTS / f"{QUICKSTART.stem}-checkpoint{ext}" for ext in (".py", ".ipynb"))]

SERVER_START_S = 120  # first start on a cold machine; about 10 s here
RUN_ALL_S = 600       # about 10 s at quick scale; the first run after a change to cnce/_fused.py compiles the kernels


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def restore_files():
    """Keep the files the test writes as they were: remember them, remove the paired outputs
    so that the test starts from a fresh clone's state, and put everything back afterwards."""
    saved = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in TOUCHED if p.is_file()}
    had_checkpoints = CHECKPOINTS.is_dir()
    PAIRED.unlink(missing_ok=True)
    try:
        yield saved
    finally:
        for p in TOUCHED:
            if p in saved:
                data, mtime = saved[p]
                if not p.is_file() or p.read_bytes() != data:
                    p.write_bytes(data)
                os.utime(p, ns=(mtime, mtime))
            else:
                p.unlink(missing_ok=True)
        if not had_checkpoints and CHECKPOINTS.is_dir() and not any(CHECKPOINTS.iterdir()):
            CHECKPOINTS.rmdir()


@pytest.fixture(scope="module")
def lab(tmp_path_factory, restore_files):
    """``scripts/lab.sh`` serving on a free localhost port with a token; yields its base URL
    and token. Stopped (SIGTERM to its process group, then SIGKILL) whatever happens."""
    home = tmp_path_factory.mktemp("jupyter-home")
    env = {**os.environ,
           "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_DATA_DIR": str(home / "data"),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "JUPYTERLAB_SETTINGS_DIR": str(home / "lab-settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(home / "lab-workspaces"), "IPYTHONDIR": str(home / "ipython")}
    port, token = _free_port(), secrets.token_hex(16)
    log_path = home / "jupyterlab.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [str(ROOT / "scripts" / "lab.sh"), "--no-browser", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"scripts/lab.sh exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer within {SERVER_START_S} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.25)
        yield {"base": base, "token": token, "log": log_path}
    finally:
        for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue


def _api(lab, path: str) -> dict:
    with urllib.request.urlopen(f"{lab['base']}{path}?token={lab['token']}", timeout=30) as r:
        return json.load(r)


# ------------------------------------------------------------------------------ page helpers
# textContent, not innerText: JupyterLab does not render cells scrolled out of view
_CELL_STATE_JS = r"""
() => Array.from(document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell')).map(cell => ({
  prompt: (cell.querySelector('.jp-InputPrompt') || {}).textContent || '',
  source: (cell.querySelector('.cm-content') || {}).textContent || '',
  outputs: Array.from(cell.querySelectorAll('.jp-OutputArea-output')).map(o => ({
    mime: o.getAttribute('data-mime-type') || '',
    text: o.textContent,
    imgs: Array.from(o.querySelectorAll('img')).map(i => [i.naturalWidth, i.naturalHeight]),
    progress: o.querySelectorAll('.widget-progress, .progress-bar').length,
  })),
}))
"""
_EXECUTED = re.compile(r"^\[\d+\]:$")


def _open(tab, lab, name: str):
    tab.goto(f"{lab['base']}/lab/tree/{name}?token={lab['token']}", wait_until="domcontentloaded", timeout=60_000)
    tab.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell", timeout=60_000)
    # the kernel has started (running cells before that asks the user to pick a kernel)
    tab.wait_for_function("() => /\\| Idle/.test(document.querySelector('#jp-main-statusbar')?.innerText || '')",
                          timeout=SERVER_START_S * 1000)


def _menu(tab, menu: str, command: str):
    """Click ``menu`` in the menu bar, then its item that runs ``command``, as a user does."""
    tab.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{menu}$")).click()
    tab.locator(f".lm-Menu-item[data-command='{command}']").click()


def _run_all(tab):
    _menu(tab, "Run", "runmenu:run-all")  # Run > Run All Cells


def _wait_executed(tab, n_code: int) -> list[dict]:
    """Wait until every code cell shows an execution count, or a cell shows an error."""
    deadline = time.monotonic() + RUN_ALL_S
    while True:
        cells = tab.evaluate(_CELL_STATE_JS)
        if len(cells) == n_code and all(_EXECUTED.match(c["prompt"].strip()) for c in cells):
            return cells
        if _errors(cells) or time.monotonic() > deadline:
            return cells
        time.sleep(0.5)


def _errors(cells: list[dict]) -> list[str]:
    """Outputs that are errors (a traceback) as the page shows them."""
    return [o["text"][:500] for c in cells for o in c["outputs"]
            if o["mime"] == "application/vnd.jupyter.stderr" and re.search(r"Traceback|Error\b", o["text"])]


def _code_cell(tab, i: int):
    return tab.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell").nth(i)


def _new_cell_below(tab, i: int):
    """Select code cell ``i`` (a click on its prompt: command mode), insert a cell below it (B)
    and start editing it (Enter)."""
    _code_cell(tab, i).locator(".jp-InputPrompt").click()
    tab.keyboard.press("b")
    tab.keyboard.press("Enter")


def _save(tab, path: Path, before_ns: int):
    """File > Save and wait until the server has written ``path``."""
    _menu(tab, "File", "docmanager:save")
    deadline = time.monotonic() + 30
    while not (path.is_file() and path.stat().st_mtime_ns > before_ns):
        assert time.monotonic() < deadline, f"saving did not write {path.name}"
        time.sleep(0.2)
    tab.wait_for_selector("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current.jp-mod-dirty", state="detached", timeout=30_000)


# ------------------------------------------------------------------------------ tests
def test_lab_serves_the_project_setup(lab):
    """The server runs from this checkout's .venv with the project's contents manager,
    pairing and kernel (checked through its REST API)."""
    specs = _api(lab, "/api/kernelspecs")
    argv = specs["kernelspecs"][specs["default"]]["spec"]["argv"]
    assert specs["default"] == "python3"
    assert Path(os.path.abspath(argv[0])).parent.parent == ROOT / ".venv", f"the kernel is not the project's .venv: {argv}"
    model = _api(lab, f"/api/contents/{QUICKSTART.name}")
    assert model["type"] == "notebook", f"{QUICKSTART.name} does not open as a notebook: {model['type']}"
    viewers = _api(lab, "/lab/api/settings/@jupyterlab/docmanager-extension:plugin")["schema"]["properties"]["defaultViewers"]
    assert viewers["default"].get("python") == "Jupytext Notebook"


def test_quickstart_runs_in_jupyterlab(lab, browser, restore_files):
    original = restore_files[QUICKSTART][0]
    nb = read_notebook(QUICKSTART)
    n_code = sum(c.cell_type == "code" for c in nb.cells)
    tab = browser.new_page()
    js_errors: list[str] = []
    tab.on("pageerror", lambda exc: js_errors.append(str(exc)))
    try:
        t0 = time.monotonic()
        _open(tab, lab, QUICKSTART.name)
        assert tab.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel").inner_text().strip() \
            == QUICKSTART.name
        _run_all(tab)
        cells = _wait_executed(tab, n_code)
        ran_s = time.monotonic() - t0
        tab.screenshot(path=str(lab["log"].parent / "quickstart.png"), full_page=True)

        assert not _errors(cells), f"cells show errors: {_errors(cells)}"
        assert len(cells) == n_code, f"{len(cells)} code cells shown, the .py has {n_code}"
        not_run = [i for i, c in enumerate(cells) if not _EXECUTED.match(c["prompt"].strip())]
        assert not not_run, f"code cells {not_run} did not run within {RUN_ALL_S} s: {[cells[i]['prompt'] for i in not_run]}"
        shown = "\n".join(o["text"] for c in cells for o in c["outputs"])
        for expected_text in ("scale=quick: 20 simulations of 1000 data points", "cnce: median squared error"):
            assert expected_text in shown, f"{expected_text!r} not in the outputs shown:\n{shown}"
        figures = [wh for c in cells for o in c["outputs"] for wh in o["imgs"]]
        assert figures and max(min(wh) for wh in figures) >= 40, "no cell shows a figure"
        assert "CNCE with Laplace noise" in shown, "the custom ConditionalNoise cell shows no result"

        # Saving without an edit: the .py is unchanged; the outputs go to the paired .ipynb.
        _save(tab, PAIRED, 0)
        assert QUICKSTART.read_bytes() == original, "saving an unedited notebook changed the .py"
        saved = nbformat.read(PAIRED, as_version=4)
        outputs = [o for c in saved.cells if c.cell_type == "code" for o in c.outputs]
        assert not [o for o in outputs if o.output_type == "error"]
        assert any("image/png" in o.get("data", {}) for o in outputs), "the paired .ipynb holds no figure"

        # Editing the parameters cell: exactly that cell changes in the .py.
        i_par = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "parameters" in c.metadata.get("tags", []))
        old_src = nb.cells[i_par].source
        new_src = re.sub(r"(?m)^seed = 0\b", "seed = 1", old_src)
        assert new_src != old_src, "the quickstart's parameters cell has no 'seed = 0' line"
        i_code_par = sum(c.cell_type == "code" for c in nb.cells[:i_par])
        editor = _code_cell(tab, i_code_par).locator(".cm-content")
        editor.click()
        tab.keyboard.press("Control+a")
        tab.keyboard.insert_text(new_src)
        before = QUICKSTART.stat().st_mtime_ns
        _save(tab, QUICKSTART, before)
        expected = original.decode().replace(old_src, new_src, 1)
        assert QUICKSTART.read_text() == expected, "an edit of the parameters cell changed more than that cell in the .py"

        # cnce's progress bars (tqdm.auto) show as a widget, not as lines of text: a new cell
        # below the parameters cell (not saved; the .py is restored afterwards anyway).
        _new_cell_below(tab, i_code_par)
        tab.keyboard.insert_text("import torch\nfrom tqdm.auto import tqdm\nprint('torch threads:', torch.get_num_threads())\n"
                                "for _ in tqdm(range(5), desc='progress check'):\n    pass")
        tab.keyboard.press("Shift+Enter")
        deadline = time.monotonic() + 60
        while True:
            bar = [c for c in tab.evaluate(_CELL_STATE_JS) if "progress check" in c["source"]]
            if (bar and any(o["progress"] for o in bar[0]["outputs"])) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        tab.screenshot(path=str(lab["log"].parent / "progress.png"))
        assert bar, "the progress-check cell was not added"
        outs = bar[0]["outputs"]
        assert not _errors([bar[0]]), _errors([bar[0]])
        assert any(o["progress"] for o in outs), f"no progress-bar widget shown; outputs: {outs}"
        assert any("progress check: 100% 5/5" in o["text"].replace("\u2007", " ") for o in outs), outs
        assert all("\r" not in o["text"] for o in outs), outs
        # the kernels use one CPU thread by default, as in the book build (scripts/lab.sh --threads)
        assert any("torch threads: 1" in o["text"] for o in outs), outs

        # The error check above can fail: a cell that raises is reported by it.
        _new_cell_below(tab, i_code_par)
        tab.keyboard.insert_text("raise ValueError('expected by tests/test_lab.py')")
        tab.keyboard.press("Shift+Enter")
        deadline = time.monotonic() + 60
        while not _errors(tab.evaluate(_CELL_STATE_JS)):
            assert time.monotonic() < deadline, "a cell that raises was not reported as an error"
            time.sleep(0.5)
        assert "expected by tests/test_lab.py" in " ".join(_errors(tab.evaluate(_CELL_STATE_JS)))
    finally:
        tab.close()
    assert not js_errors, f"JavaScript errors in JupyterLab: {js_errors}"
    print(f"quickstart opened and ran in JupyterLab in {ran_s:.1f} s")
