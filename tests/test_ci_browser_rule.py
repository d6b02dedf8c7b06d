"""In CI a missing Chromium fails the browser tests instead of skipping them (issue 44)."""
from __future__ import annotations

import pytest
from _pytest.outcomes import Failed, Skipped

import conftest


@pytest.mark.parametrize("ci,outcome", [("true", Failed), ("1", Failed), ("", Skipped), ("false", Skipped)])
def test_missing_browser_fails_in_ci_and_skips_elsewhere(monkeypatch, ci, outcome):
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="no Chromium at /nowhere"):
        conftest.missing_browser("no Chromium at /nowhere")
