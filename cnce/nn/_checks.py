"""Argument checks of :mod:`cnce.nn` (internal). Every error names the argument and its value."""
from __future__ import annotations

import math
import numbers

import numpy as np
import torch

__all__ = ["as_number", "positive_number", "check_seed", "check_data"]


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
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number (a float or a 0-d tensor); got {value!r}")
    return float(value)


def positive_number(value, name: str) -> float:
    """A finite number > 0 (numbers, 0-d tensors and numpy scalars accepted)."""
    v = as_number(value, name)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be a positive number; got {v!r}")
    return v


def check_seed(seed, name: str = "seed") -> int:
    """An integer >= 0 (an int, a 0-d integer tensor or a numpy integer)."""
    seed = _scalar(seed, name, "an integer >= 0")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= 0; got {seed!r}")
    if seed < 0:
        raise ValueError(f"{name} must be an integer >= 0; got {seed!r}")
    return int(seed)


def check_data(x, name, dtype, device=None, D=None):
    """Data ``(N, D)`` as a real tensor of ``dtype``: booleans and complex numbers are refused,
    integers are cast to ``dtype`` (documented in :func:`cnce.nn.train`)."""
    if not isinstance(x, torch.Tensor):
        try:
            x = torch.as_tensor(np.asarray(x))
        except (TypeError, ValueError, RuntimeError) as exc:
            raise ValueError(f"{name} must be an array of shape (N, D); got {type(x).__name__}") from exc
    if x.dtype == torch.bool:
        raise ValueError(f"{name} must hold real numbers; got dtype torch.bool (cast it with {name}.float() "
                         "if 0/1 values are meant)")
    if x.is_complex():
        raise ValueError(f"{name} must hold real numbers; got the complex dtype {x.dtype}")
    if not (x.is_floating_point() or x.dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)):
        raise ValueError(f"{name} must hold real numbers; got dtype {x.dtype}")
    if x.ndim != 2:
        raise ValueError(f"{name} must have shape (N, D) (one row per data point); got shape {tuple(x.shape)}")
    if x.shape[0] < 2 or x.shape[1] < 1:
        raise ValueError(f"{name} must hold at least 2 points of dimension >= 1; got shape {tuple(x.shape)}")
    if D is not None and x.shape[1] != D:
        raise ValueError(f"{name} must have D = {D} columns like x; got shape {tuple(x.shape)}")
    x = x.to(dtype=dtype)
    bad = ~torch.isfinite(x)
    if bad.any():
        i = int(bad.any(-1).nonzero()[0])
        raise ValueError(f"{name} must be finite; row {i} is {x[i].tolist()} ({int(bad.any(-1).sum())} rows with NaN or inf)")
    return x if device is None else x.to(device)
