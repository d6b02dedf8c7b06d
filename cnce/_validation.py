"""Argument checks shared by the public API: :func:`cnce.fit`, the experiment runner and the
trainers of :mod:`cnce.nn` and :mod:`cnce.images` (internal). Errors name the argument and value.
eps is checked by :func:`cnce.eps.resolve_eps`."""
from __future__ import annotations

import math
import numbers

import torch

__all__ = ["check_data", "check_rows", "check_theta", "check_kappa", "check_positive_int", "check_positive",
           "check_seed", "check_applies", "per_simulation"]


def _describe(v) -> str:
    if isinstance(v, torch.Tensor):
        if v.numel() <= 6:
            return f"tensor({v.tolist()})"
        return f"tensor of shape {tuple(v.shape)}"
    return repr(v)


def per_simulation(value, S: int, like: torch.Tensor) -> torch.Tensor:
    """A number or an ``(S,)`` tensor as an ``(S,)`` tensor of ``like``'s dtype and device (a
    scalar is expanded, not copied)."""
    return torch.as_tensor(value, dtype=like.dtype, device=like.device).expand(S)


def check_positive_int(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            raise ValueError(f"{name} must be an integer >= {minimum}; got the float {value!r}")
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def check_positive(value, name: str) -> float:
    """A finite real number > 0 (a Python or numpy number, or a 0-d tensor) as a float."""
    if isinstance(value, torch.Tensor) and value.ndim == 0 and not value.dtype == torch.bool:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number; got {value!r}")
    return float(value)


def check_seed(seed, name: str = "seed") -> int:
    """An integer seed >= 0 (``bool`` is refused)."""
    return check_positive_int(seed, name, 0)


def check_applies(method: str, args: dict, *, defaults: dict | None = None) -> None:
    """``ValueError`` naming every argument that was given but does not apply to ``method``.

    ``args`` maps a name to ``(value, methods it applies to)``; an argument counts as given
    when its value is not its default (``None``, or ``defaults[name]``)."""
    defaults = defaults or {}
    wrong = []
    for name, (value, methods) in args.items():
        default = defaults.get(name)
        given = value is not None if default is None else not (type(value) is type(default) and value == default)
        if given and method not in methods:
            shown = f"tensor of shape {tuple(value.shape)}" if isinstance(value, torch.Tensor) and value.numel() > 6 else repr(value)
            only = f"method {methods[0]!r}" if len(methods) == 1 else f"methods {methods}"
            wrong.append(f"{name}={shown} applies to {only} only")
    if wrong:
        raise ValueError("; ".join(wrong) + f"; method {method!r} takes none")


def check_kappa(kappa) -> int:
    """kappa: the number of noise samples per data point, an integer >= 1."""
    return check_positive_int(kappa, "kappa", 1)


def check_data(x, dim: int, *, name: str = "x", dtype=torch.float64, device=None) -> tuple[torch.Tensor, bool]:
    """Return ``(x as (S, N, D) tensor, was_batched)``; reject wrong shapes, NaN and inf."""
    if not isinstance(x, torch.Tensor):
        try:
            x = torch.as_tensor(x)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise ValueError(f"{name} must be a tensor or array of shape (S, N, D) or (N, D); got {type(x).__name__}") from exc
    if x.dtype == torch.bool or not (x.is_floating_point() or x.dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)):
        if x.dtype != torch.bool:
            raise ValueError(f"{name} must hold real numbers; got dtype {x.dtype}")
    x = x.to(dtype=dtype, device=device)
    if x.ndim == 2:
        batched = False
        x = x.unsqueeze(0)
    elif x.ndim == 3:
        batched = True
    else:
        raise ValueError(f"{name} must have shape (S, N, D) or (N, D) with D = {dim}; got shape {tuple(x.shape)}")
    if x.shape[-1] != dim:
        raise ValueError(f"{name} must have last dimension D = {dim} for this model; got shape {tuple(x.shape)}")
    if x.shape[1] < 2:
        raise ValueError(f"{name} must hold at least 2 data points per simulation; got shape {tuple(x.shape)}")
    if x.shape[0] < 1:
        raise ValueError(f"{name} must hold at least one simulation; got shape {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        bad = (~torch.isfinite(x)).nonzero()[0].tolist()
        raise ValueError(f"{name} contains NaN or inf (first at index {bad}); got a non-finite value {x[tuple(bad)].item()!r}")
    return x, batched


def check_rows(x, *, name: str = "x", D: int | None = None, dtype=None, device=None,
               booleans: bool = True) -> torch.Tensor:
    """Data of one problem as an ``(N, D)`` tensor (``dtype``: keep the given floating dtype,
    else float64); reject other shapes, fewer than 2 rows, a ``D`` other than the given one,
    non-numbers (complex numbers, and booleans unless ``booleans``), NaN and inf, naming
    ``name`` and the first bad row."""
    if not isinstance(x, torch.Tensor):
        try:
            x = torch.as_tensor(x)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise ValueError(f"{name} must be an array of shape (N, D); got {type(x).__name__}") from exc
    if x.dtype == torch.bool and not booleans:
        raise ValueError(f"{name} must hold real numbers; got dtype torch.bool (cast it with {name}.float() "
                         "if 0/1 values are meant)")
    if x.is_complex():
        raise ValueError(f"{name} must hold real numbers; got the complex dtype {x.dtype}")
    if x.ndim != 2:
        raise ValueError(f"{name} must have shape (N, D) (one row per data point); got shape {tuple(x.shape)}")
    if x.shape[0] < 2 or x.shape[1] < 1:
        raise ValueError(f"{name} must hold at least 2 points of dimension >= 1; got shape {tuple(x.shape)}")
    if D is not None and x.shape[1] != D:
        raise ValueError(f"{name} must have D = {D} columns; got shape {tuple(x.shape)}")
    if not (x.is_floating_point() or x.dtype == torch.bool or x.dtype.is_signed or x.dtype == torch.uint8):
        raise ValueError(f"{name} must hold real numbers; got dtype {x.dtype}")
    x = x.to(dtype=dtype if dtype is not None else (x.dtype if x.is_floating_point() else torch.float64))
    bad = ~torch.isfinite(x)
    if bad.any():
        i = int(bad.any(-1).nonzero()[0])
        raise ValueError(f"{name} must be finite; row {i} is {x[i].tolist()} ({int(bad.any(-1).sum())} rows with NaN or inf)")
    return x.to(device) if device is not None else x


def check_theta(theta, n_params: int, S: int | None = None, *, name: str = "theta", dtype=torch.float64, device=None) -> torch.Tensor:
    """Return theta as an ``(S, P)`` tensor (a ``(P,)`` vector is broadcast to S rows)."""
    if not isinstance(theta, torch.Tensor):
        try:
            theta = torch.as_tensor(theta, dtype=dtype)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise ValueError(f"{name} must be a tensor of shape (S, {n_params}) or ({n_params},); got {type(theta).__name__}") from exc
    theta = theta.to(dtype=dtype, device=device)
    given = tuple(theta.shape)
    if theta.ndim == 1:
        theta = theta.unsqueeze(0)
        if S is not None:
            theta = theta.expand(S, -1)
    if theta.ndim != 2 or theta.shape[-1] != n_params or (S is not None and theta.shape[0] != S):
        want = f"({S if S is not None else 'S'}, {n_params})"
        raise ValueError(f"{name} must have shape {want} or ({n_params},); got shape {given}")
    if torch.isnan(theta).any():
        raise ValueError(f"{name} contains NaN; got {_describe(theta)}")
    return theta
