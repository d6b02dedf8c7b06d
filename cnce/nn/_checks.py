"""Argument checks of :mod:`cnce.nn` (internal). Every error names the argument and its value."""
from __future__ import annotations

import contextlib

import numpy as np
import torch

from .._validation import check_positive
from .._validation import check_seed as _check_seed
from ..constraints import Real, validate

__all__ = ["as_number", "positive_number", "check_seed", "torch_threads"]


def _scalar(value, name, what):
    """A Python number from a number, a 0-d (or one-element) tensor or a numpy scalar."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        n = value.size if isinstance(value, np.ndarray) else value.numel()
        if n != 1:
            raise ValueError(f"{name} must be {what} (a number or a 0-d tensor); got an array of shape {tuple(value.shape)}")
        value = value.item()
    elif isinstance(value, np.generic):
        value = value.item()
    return value


def as_number(value, name: str) -> float:
    """``value`` as a float; numbers, 0-d tensors and numpy scalars are accepted."""
    value = _scalar(value, name, "a real number")
    return float(validate(value, Real(finite=False), name, note=" (a float or a 0-d tensor)"))


def positive_number(value, name: str) -> float:
    """A finite number > 0 (numbers, 0-d tensors and numpy scalars accepted; the core's
    :func:`cnce._validation.check_positive` after unwrapping)."""
    return check_positive(as_number(value, name), name)


def check_seed(seed, name: str = "seed") -> int:
    """An integer >= 0 (an int, a 0-d integer tensor or a numpy integer)."""
    return _check_seed(_scalar(seed, name, "an integer >= 0"), name)


@contextlib.contextmanager
def torch_threads(n: int | None):
    """torch's CPU threads set to ``n`` inside the block and restored after (``None``: unchanged)."""
    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if n is not None:
            torch.set_num_threads(before)
