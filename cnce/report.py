"""Numbers in the book's prose come from the run: :func:`glue` puts a formatted value into a
notebook page's markdown (myst-nb's ``glue``; the page writes ``{glue:text}`name```, another
page ``{glue:text}`notebooks/NN_name::name```). A key that no cell glued fails the strict
book build, so a sentence cannot keep a number that the run no longer produces."""
from __future__ import annotations

__all__ = ["glue"]


class _Text:
    """Displays as exactly ``text`` (a plain ``str`` would show its quotes)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def glue(name: str, value, fmt: str = "{}") -> str:
    """Glue ``fmt.format(value)`` (a ``str`` value as it is) under ``name``; returns the text.

    Outside a notebook, or without myst-nb, only the text is returned."""
    text = value if isinstance(value, str) else fmt.format(value)
    try:
        from myst_nb import glue as _glue
    except ImportError:  # pragma: no cover - myst-nb is pinned in the book's environment
        return text
    _glue(name, _Text(text), display=False)
    return text
