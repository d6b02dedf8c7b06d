"""Unnormalised models of the paper: Gaussian (Eq. 15), ICA (Eq. 16), ring (Eq. 17),
log-normal (Eq. 62) and Bernoulli (Eq. 63), on one common surface (:class:`UnnormalisedModel`).

One registry of models by name serves :func:`get_model`, the experiment runner (a study's
``family``) and the command line (``python -m cnce models``); :func:`register` adds a model.
"""
from .base import UnnormalisedModel
from .bernoulli import Bernoulli
from .gaussian import Gaussian
from .ica import ICA, signed_permutation_match
from .lognormal import LogNormal
from .ring import Ring
from ..errors import InputError

__all__ = ["UnnormalisedModel", "Gaussian", "ICA", "Ring", "LogNormal", "Bernoulli", "signed_permutation_match",
           "get_model", "model_class", "register", "registered"]

_REGISTRY: dict[str, type] = {}


def register(cls: type, name: str | None = None) -> type:
    """Register a model class under ``name`` (default ``cls.name``); usable as a decorator."""
    if not (isinstance(cls, type) and issubclass(cls, UnnormalisedModel)):
        raise InputError(f"cls must be a subclass of cnce.models.UnnormalisedModel; got {cls!r}")
    key = str(name if name is not None else cls.name).lower()
    if key in _REGISTRY and _REGISTRY[key] is not cls:
        raise InputError(f"name {key!r} is already registered for {_REGISTRY[key].__name__}")
    _REGISTRY[key] = cls
    return cls


def registered() -> dict[str, type]:
    """A copy of the registry: name -> model class."""
    return dict(_REGISTRY)


def model_class(name: str) -> type:
    """The model class registered as ``name`` (case-insensitive)."""
    try:
        return _REGISTRY[str(name).lower()]
    except KeyError:
        raise InputError(f"model must be one of {sorted(_REGISTRY)}; got {name!r}") from None


def get_model(name: str, **kwargs) -> UnnormalisedModel:
    """Build a model by name (``"gaussian"``, ``"ica"``, ``"ring"``, ``"lognormal"``, ``"bernoulli"``)."""
    return model_class(name)(**kwargs)


for _cls in (Gaussian, ICA, Ring, LogNormal, Bernoulli):
    register(_cls)
del _cls
