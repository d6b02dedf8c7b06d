"""In CI a missing Chromium fails the browser tests instead of skipping them (issue 44)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from _pytest.outcomes import Failed, Skipped

# tests/conftest.py by its path: the module name "conftest" may be tests/golden's in a full run
_spec = importlib.util.spec_from_file_location("tests_conftest", Path(__file__).with_name("conftest.py"))
conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conftest)


@pytest.mark.parametrize("ci,outcome", [("true", Failed), ("1", Failed), ("", Skipped), ("false", Skipped)])
def test_missing_browser_fails_in_ci_and_skips_elsewhere(monkeypatch, ci, outcome):
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="no Chromium at /nowhere"):
        conftest.missing_browser("no Chromium at /nowhere")
