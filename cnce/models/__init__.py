"""Unnormalised models of the paper: Gaussian (Eq. 15), ICA (Eq. 16), ring (Eq. 17),
log-normal (Eq. 62) and Bernoulli (Eq. 63), on one common surface (:class:`UnnormalisedModel`)."""
from .base import UnnormalisedModel
from .bernoulli import Bernoulli
from .gaussian import Gaussian
from .ica import ICA, signed_permutation_match
from .lognormal import LogNormal
from .ring import Ring

__all__ = ["UnnormalisedModel", "Gaussian", "ICA", "Ring", "LogNormal", "Bernoulli", "signed_permutation_match", "get_model"]

_REGISTRY = {"gaussian": Gaussian, "ica": ICA, "ring": Ring, "lognormal": LogNormal, "bernoulli": Bernoulli}


def get_model(name: str, **kwargs) -> UnnormalisedModel:
    """Build a model by name (``"gaussian"``, ``"ica"``, ``"ring"``, ``"lognormal"``, ``"bernoulli"``)."""
    try:
        cls = _REGISTRY[str(name).lower()]
    except KeyError:
        raise ValueError(f"model must be one of {sorted(_REGISTRY)}; got {name!r}") from None
    return cls(**kwargs)
