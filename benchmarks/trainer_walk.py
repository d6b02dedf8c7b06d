"""The walk of ``layers`` through the image trainer, counted from a run (issue 45: "following
``layers`` through ``images/train.py`` makes N stays in R rooms with K returns").

A tiny run trains layers 1 to 4 (one meta-iteration each; pooling layers from a planted start) under ``sys.settrace``. Following
``layers`` means following the calls that hand the layer on: a call is on the walk when the
called function (in ``cnce``) takes a parameter named ``layer``, ``layers`` or ``at_layer``,
and its caller is a function of ``cnce`` too. Every such function is taken once, the first time
it is called, in the order of the run (a reader opens a function once, then knows it). The walk is the sequence
of files read: the caller's file, then the callee's. Consecutive entries in one file are one
*stay* in that room; a stay in a room visited before is a *return*.

Where the layer travels as an object (the network's per-layer view
:class:`cnce.images.network.Layer`, and what holds one), calls that take it by another name or
as ``self`` (the view's own methods, ``LayerRecipe.meta_iteration``) are not on that walk.
``--strict`` also follows the object: a call is on the strict walk when any argument, ``self``
included, is a ``Layer`` or holds one or a field named ``layer`` (as an attribute, or an
attribute's attribute): the view's methods and properties, the recipe's ``LayerRecipe``, the
trainer's per-layer records (in older trees ``LayerRun``, a record with the layer's number).

    PYTHONPATH=<tree> python benchmarks/trainer_walk.py [--strict]
"""
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

NAMES = ("layer", "layers", "at_layer")


def _source():
    from cnce.images.data import PatchSource

    rng = np.random.default_rng(0)
    imgs = [np.cumsum(np.cumsum(rng.standard_normal((60, 60)), 0), 1) for _ in range(2)]
    return PatchSource([(im - im.mean()) / im.std() for im in imgs], size=8)


def _room(path: str, root: str) -> str | None:
    if not path.startswith(root):
        return None
    return path[len(root):]


def _holds_layer(v, Layer, depth=2) -> bool:
    """``v`` is the layer as an object: a ``Layer`` view, or holds one or a field named ``layer``
    (an older tree's record of the layer being trained holds its number there)."""
    if Layer is not None and isinstance(v, Layer):
        return True
    if depth == 0 or isinstance(v, (int, float, str, bytes, tuple, list, dict)) or not hasattr(v, "__dict__"):
        return False
    if "layer" in vars(v):
        return True
    return any(_holds_layer(a, Layer, depth - 1) for a in vars(v).values())


def walk(strict: bool = False):
    import cnce
    from cnce.images.configs import get_config
    from cnce.images.train import train

    try:
        from cnce.images.network import Layer
    except ImportError:  # a tree before the per-layer view
        Layer = None

    root = str(Path(cnce.__file__).resolve().parent) + "/"
    seen, calls = set(), []

    def tracer(frame, event, arg):
        if event != "call":
            return None
        caller = frame.f_back
        for _ in range(3):  # through a decorator's wrapper (torch.no_grad) to the cnce caller
            if caller is None or _room(caller.f_code.co_filename, root) is not None:
                break
            caller = caller.f_back
        if caller is None:
            return None
        src = _room(caller.f_code.co_filename, root)
        dst = _room(frame.f_code.co_filename, root)
        code = frame.f_code
        args = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        if src is None or dst is None:
            return None
        named = bool(set(args) & set(NAMES))
        held = strict and any(_holds_layer(frame.f_locals.get(a), Layer) for a in args)
        if not (named or held):
            return None
        site = (src, caller.f_lineno, dst, frame.f_code.co_name)
        if site[2:] not in seen:
            seen.add(site[2:])
            calls.append(site)
        return None

    cfg = dict(name="tiny", D=40, K1=10, K2=8, D3=6, K3=5, K4=3, n_whiten=800, patch=8, eps_n=100,
               n_patches=(200, 200, 200, 200), main_set=(400, 400, 200, 200), epoch=(2, 2, 2, 2),
               meta_iters=(1, 1, 1, 1), steps=2, chunk=64, compare_K1=4, optimizer="lbfgs", pool_start="planted")
    with tempfile.TemporaryDirectory() as d:
        sys.settrace(tracer)
        try:
            train(replace(get_config("smoke"), **cfg), out=d, layers=(1, 2, 3, 4), source=_source(), progress=False, device="cpu")
        finally:
            sys.settrace(None)
    return calls


def count(calls):
    seq = []
    for src, _, dst, _ in calls:
        seq += [src, dst]
    stays = [f for i, f in enumerate(seq) if i == 0 or f != seq[i - 1]]
    returns = sum(1 for i, f in enumerate(stays) if f in stays[:i])
    return stays, returns


if __name__ == "__main__":
    calls = walk(strict="--strict" in sys.argv)
    stays, returns = count(calls)
    print(f"following layers{' (strict)' if '--strict' in sys.argv else ''}: {len(stays)} stays in {len(set(stays))} rooms, {returns} returns")
    print("  " + " -> ".join(stays))
    for src, line, dst, name in calls:
        print(f"  {src}:{line} -> {dst} {name}")
