"""The first compiled fit says that it compiles (issue 44): numba itself says nothing for minutes."""
from __future__ import annotations

import io

import pytest

from cnce import precompile


def test_the_compile_is_announced_once_when_the_cache_is_empty(monkeypatch):
    monkeypatch.setattr(precompile, "_announced", False)
    monkeypatch.setattr(precompile, "kernels_cached", lambda: False)
    out = io.StringIO()
    precompile.announce_compile(out)
    precompile.announce_compile(out)
    text = out.getvalue()
    assert text.count("compiling the CPU kernels") == 1
    assert "minutes" in text and "python -m cnce compile" in text


@pytest.mark.parametrize("cached", [True, None])
def test_nothing_is_said_when_the_kernels_are_cached_or_it_cannot_be_told(monkeypatch, cached):
    monkeypatch.setattr(precompile, "_announced", False)
    monkeypatch.setattr(precompile, "kernels_cached", lambda: cached)
    out = io.StringIO()
    precompile.announce_compile(out)
    assert out.getvalue() == ""


def test_the_cache_check_sees_this_trees_compiled_cache():
    from cnce import _fused

    if not _fused.available():
        pytest.skip("numba is not installed: nothing is compiled")
    assert precompile.kernels_cached() in (True, False)
