"""Device, dtype and random-generator helpers shared by the package (internal)."""
from __future__ import annotations

import torch
from .errors import InputError

from .constraints import Integer, validate

__all__ = ["resolve_device", "make_generator", "as_tensor"]


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """Map ``"auto"`` to CUDA when available, else the CPU; pass other values through.

    Raises ``ValueError`` naming ``device`` for strings torch does not understand or a CUDA
    request on a machine without CUDA.
    """
    if device is None or (isinstance(device, str) and device == "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise InputError(f"device must be 'auto', 'cpu', 'cuda' or a torch.device; got {device!r}") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"device={device!r} was requested but CUDA is not available on this machine")
    return dev


def make_generator(seed: int | torch.Generator | None, device: torch.device | str = "cpu") -> torch.Generator:
    """A ``torch.Generator`` on ``device`` seeded with ``seed`` (a generator is passed through)."""
    if isinstance(seed, torch.Generator):
        return seed
    if seed is None:
        seed = 0
    validate(seed, Integer(), "seed", note=" or a torch.Generator")
    g = torch.Generator(device=torch.device(device))
    g.manual_seed(int(seed))
    return g


def as_tensor(x, *, dtype=torch.float64, device=None, name: str = "x") -> torch.Tensor:
    """Convert array-likes to a tensor, naming ``name`` in the error if that fails."""
    try:
        t = torch.as_tensor(x, dtype=dtype, device=device)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise InputError(f"{name} must be an array-like of numbers; got {type(x).__name__}") from exc
    return t
