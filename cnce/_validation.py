"""Argument checks shared by the public API: :func:`cnce.fit`, the experiment runner and the
trainers of :mod:`cnce.nn` and :mod:`cnce.images` (internal). Errors name the argument and value
and are :mod:`cnce.errors` input errors (subclasses of ``ValueError`` / ``TypeError``).
:func:`check_rows` is the one check of data rows and the one dtype policy. eps is checked by
:func:`cnce.eps.resolve_eps`."""
from __future__ import annotations


import numpy as np
import torch

from .errors import InputDtypeError, InputError
from .constraints import Integer, InvalidArgument, Real, validate

__all__ = ["DATA_ACCEPTED", "check_rows", "check_theta", "check_kappa", "check_positive_int", "check_positive",
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
    if isinstance(value, float) and value.is_integer():  # say why 2.0 is refused
        raise InvalidArgument(f"{name} must be an integer >= {minimum}; got the float {value!r}")
    return int(validate(value, Integer(lo=minimum), name))


def check_positive(value, name: str) -> float:
    """A finite real number > 0 (a Python or numpy number, or a 0-d tensor) as a float."""
    if isinstance(value, torch.Tensor) and value.ndim == 0 and not value.dtype == torch.bool:
        value = value.item()
    return float(validate(value, Real(lo=0, lo_open=True), name))


def check_seed(seed, name: str = "seed") -> int:
    """An integer seed >= 0 (``bool`` is refused)."""
    return check_positive_int(seed, name, 0)


def check_applies(method: str, args: dict, *, defaults: dict | None = None) -> None:
    """:class:`~cnce.errors.InputError` naming every argument that was given but does not apply to ``method``.

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
        raise InputError("; ".join(wrong) + f"; method {method!r} takes none")


def check_kappa(kappa) -> int:
    """kappa: the number of noise samples per data point, an integer >= 1."""
    return check_positive_int(kappa, "kappa", 1)


#: what :func:`check_rows` accepts, named in its messages
DATA_ACCEPTED = ("a torch.Tensor, a numpy array, a pandas DataFrame of numeric columns or a nested list, "
                 "holding real numbers (float or integer)")


def _type_name(x) -> str:
    t = type(x)
    mod = t.__module__
    return t.__qualname__ if mod == "builtins" else f"{mod.split('.')[0]}.{t.__qualname__}"


def _refuse_type(name: str, x, what: str, hint: str = ""):
    raise InputDtypeError(f"{name} must be {DATA_ACCEPTED}; got {_type_name(x)}{what}{hint}")


def _kind(dtype) -> str:
    """numpy's one-letter kind of a numpy or pandas (extension) dtype."""
    kind = getattr(dtype, "kind", None)
    if isinstance(kind, str):
        return kind
    try:
        return np.dtype(dtype).kind
    except TypeError:
        return "O"


def _from_pandas(x, name: str, booleans: bool):
    """A pandas DataFrame or Series as a numpy array (pandas' missing values become NaN, then
    refused as non-finite); non-numeric columns, and boolean ones for continuous models, refused."""
    dtypes = getattr(x, "dtypes", None)
    if dtypes is not None and hasattr(dtypes, "items"):  # a DataFrame: one dtype per column
        kinds = {c: _kind(d) for c, d in dtypes.items()}
    else:
        kinds = {getattr(x, "name", 0): _kind(getattr(x, "dtype", None))}
    bad = [f"{c!r} ({dtypes[c] if dtypes is not None and hasattr(dtypes, 'items') else x.dtype})"
           for c, k in kinds.items() if k not in "fiub"]
    if bad:
        _refuse_type(name, x, f" with non-numeric columns {', '.join(bad)}")
    if kinds and all(k == "b" for k in kinds.values()):
        return x.to_numpy(dtype=bool) if booleans else _refuse_type(
            name, x, " of boolean columns (booleans are data of discrete models only; cast with .astype(float) if "
                     "0/1 values of a continuous model are meant)")
    flags = [c for c, k in kinds.items() if k == "b"]
    if flags and not booleans:
        _refuse_type(name, x, f" with boolean columns {flags} (booleans are data of discrete models only)")
    try:
        return x.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError) as exc:  # pandas' own error, named
        _refuse_type(name, x, f" that pandas cannot turn into numbers ({exc})")


def _as_tensor(x, name: str, booleans: bool) -> torch.Tensor:
    """The one dtype policy: any accepted container as a real (or, with ``booleans``, bool) tensor."""
    if isinstance(x, torch.Tensor):
        t = x
    else:
        if isinstance(x, (str, bytes, dict, set, frozenset)) or x is None:
            _refuse_type(name, x, "")
        if type(x).__module__.split(".")[0] == "pandas":
            x = _from_pandas(x, name, booleans)
        try:
            arr = np.asarray(x)
        except (TypeError, ValueError) as exc:  # ragged lists, objects numpy cannot read
            _refuse_type(name, x, f" that is not a rectangular array of numbers ({exc})")
        kind = arr.dtype.kind
        if kind == "b" and not booleans:
            pass  # refused below, with the bool message
        elif kind not in "fiub":
            what = {"c": "complex", "O": "object (Python objects)", "U": "string", "S": "bytes", "M": "datetime",
                    "m": "timedelta", "V": "structured"}.get(kind, str(arr.dtype))
            _refuse_type(name, x, f" of {what} dtype {arr.dtype}")
        if kind == "f" and arr.dtype.itemsize < 4:
            arr = arr.astype(np.float32)
        if arr.dtype in (np.uint16, np.uint32, np.uint64):  # torch has no unsigned kinds beyond uint8
            arr = arr.astype(np.float64)
        arr = np.ascontiguousarray(arr)
        t = torch.from_numpy(arr if arr.flags.writeable else arr.copy())
    if t.requires_grad:  # data are constants: no gradient flows into them
        t = t.detach()
    if t.device.type == "meta":
        raise InputError(f"{name} is on the meta device (a shape without values); accepted: {DATA_ACCEPTED} "
                         "on the CPU or a GPU; got torch.Tensor on device 'meta'")
    if t.layout != torch.strided:
        t = t.to_dense()
    if t.dtype == torch.bool and not booleans:
        raise InputDtypeError(f"{name} must hold real numbers; got dtype torch.bool (a {_type_name(x)}; booleans "
                              f"are data of discrete models only: cast it with {name}.float() if 0/1 values of a "
                              "continuous model are meant)")
    if t.is_complex():
        raise InputDtypeError(f"{name} must hold real numbers; got the complex dtype {t.dtype} (a {_type_name(x)})")
    if not (t.is_floating_point() or t.dtype == torch.bool or t.dtype.is_signed or t.dtype == torch.uint8):
        raise InputDtypeError(f"{name} must hold real numbers; got dtype {t.dtype} (a {_type_name(x)})")
    return t


def check_rows(x, *, name: str = "x", D: int | None = None, dtype=None, device=None,
               booleans: bool = False, sims: bool = False) -> torch.Tensor:
    """The one check of data rows (used by :func:`cnce.fit`, :mod:`cnce.nn` and the samplers).

    Returns ``x`` as an ``(N, D)`` tensor (with ``sims``, also ``(S, N, D)``: S simulations;
    the shape is kept, the caller reads ``ndim``). The dtype policy, one for the package:

    * accepted: a ``torch.Tensor``, a numpy array, a pandas ``DataFrame`` of numeric columns
      (converted with ``to_numpy``), anything ``numpy.asarray`` turns into real numbers (nested
      lists); float and integer values; booleans only with ``booleans`` (discrete models);
    * refused by type (:class:`~cnce.errors.InputDtypeError`, a ``TypeError`` and a
      ``ValueError``): strings, dicts, ``None``, ragged lists, complex, object, string and
      datetime arrays, booleans for continuous models;
    * a tensor that requires grad is detached; a sparse one made dense; a tensor on the meta
      device is refused (:class:`~cnce.errors.InputError`); ``device`` moves the result there;
    * dtype: ``dtype`` if given, else the given floating dtype (float16 becomes float32), else
      float64;
    * refused by value (:class:`~cnce.errors.InputError`): other shapes, fewer than 2 rows, a
      ``D`` other than the given one, no simulation, NaN or inf (naming the first bad row).

    Every message names ``name``, the value's type or shape, and what is accepted.
    """
    t = _as_tensor(x, name, booleans)
    shapes = "(S, N, D) or (N, D)" if sims else "(N, D)"
    if t.ndim not in ((2, 3) if sims else (2,)):
        dd = f" with D = {D}" if D is not None else ""
        raise InputError(f"{name} must have shape {shapes}{dd} (one row per data point); got shape {tuple(t.shape)} "
                         f"({_type_name(x)})")
    if D is not None and t.shape[-1] != D:
        raise InputError(f"{name} must have D = {D} columns (its last dimension) for this model; got shape "
                         f"{tuple(t.shape)}")
    if t.shape[-1] < 1:
        raise InputError(f"{name} must have at least one column; got shape {tuple(t.shape)}")
    if t.ndim == 3 and t.shape[0] < 1:
        raise InputError(f"{name} must hold at least one simulation; got shape {tuple(t.shape)}")
    if t.shape[-2] < 2:
        per = " per simulation" if t.ndim == 3 else ""
        raise InputError(f"{name} must hold at least 2 data points (rows){per}; got shape {tuple(t.shape)}")
    if dtype is not None:
        t = t.to(dtype=dtype)
    elif not t.is_floating_point():
        t = t.to(torch.float64)
    if device is not None:
        t = t.to(device=device)
    bad = ~torch.isfinite(t)
    if bad.any():
        rows = bad.any(-1)
        first = rows.nonzero()[0].tolist()
        where = f"row {first[0]}" if t.ndim == 2 else f"simulation {first[0]}, row {first[1]}"
        raise InputError(f"{name} must be finite; {where} is {t[tuple(first)].tolist()} ({int(rows.sum())} rows with "
                         "NaN or inf)")
    return t


def check_theta(theta, n_params: int, S: int | None = None, *, name: str = "theta", dtype=torch.float64, device=None) -> torch.Tensor:
    """Return theta as an ``(S, P)`` tensor (a ``(P,)`` vector is broadcast to S rows)."""
    if not isinstance(theta, torch.Tensor):
        try:
            theta = torch.as_tensor(theta, dtype=dtype)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise InputError(f"{name} must be a tensor of shape (S, {n_params}) or ({n_params},); got {type(theta).__name__}") from exc
    theta = theta.to(dtype=dtype, device=device)
    given = tuple(theta.shape)
    if theta.ndim == 1:
        theta = theta.unsqueeze(0)
        if S is not None:
            theta = theta.expand(S, -1)
    if theta.ndim != 2 or theta.shape[-1] != n_params or (S is not None and theta.shape[0] != S):
        want = f"({S if S is not None else 'S'}, {n_params})"
        raise InputError(f"{name} must have shape {want} or ({n_params},); got shape {given}")
    if torch.isnan(theta).any():
        raise InputError(f"{name} contains NaN; got {_describe(theta)}")
    return theta
