"""Natural-image data for the neural image model (paper Section 4): loaders and preprocessing.

Pipeline (``experiment-settings.md``, image part):

1. load monochrome images (van Hateren ``.iml`` files, a folder of ordinary image files, or
   the CC0 / public-domain photographs that ship inside the scikit-image wheel);
2. per image: ``log(x + 1)``, zero mean and unit variance, drop a 4-pixel border;
3. sample 32 x 32 patches at random positions, twice as many as needed, and keep the half
   with the highest variance; remove each patch's mean (the DC component);
4. PCA-whiten to ``D = 600`` dimensions (:class:`Whitener`; the retained variance is reported);
5. the gain control of Eq. (21) is part of the network (:func:`cnce.images.network.gain_control`).

Fresh patches are drawn for every meta-iteration (:class:`PatchSource`), with the whitening
fitted once on a separate, seeded sample. :class:`PatchSource` samples and whitens on the
training device with torch (:func:`sample_patches_torch`, vectorised gathers in chunks); the
numpy :func:`sample_patches` is the reference implementation of the same recipe.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from cnce.constraints import Integer, validate

__all__ = [
    "IML_SHAPE",
    "SKIMAGE_IMAGES",
    "load_iml",
    "load_image_file",
    "load_image_folder",
    "load_skimage_images",
    "load_image_pack",
    "read_image_pack_meta",
    "load_images",
    "prepare_image",
    "sample_patches",
    "sample_patches_torch",
    "Whitener",
    "PatchSource",
]

#: Shape (rows, columns) of a van Hateren ``.iml`` image: 1536 x 1024 pixels, landscape.
IML_SHAPE = (1024, 1536)

#: Natural photographs that ship inside the scikit-image wheel (no download), all CC0 or
#: public domain according to scikit-image's data README.
SKIMAGE_IMAGES = ("camera", "grass", "gravel", "chelsea", "coffee", "astronaut", "rocket")

_IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".gif", ".pgm", ".ppm"}


def load_iml(path: str | os.PathLike, shape: tuple[int, int] = IML_SHAPE) -> np.ndarray:
    """Read a van Hateren ``.iml`` file: raw big-endian uint16, no header, ``shape`` pixels.

    Returns a float64 array of shape ``shape``. Raises ``ValueError`` naming the file when its
    size does not match ``shape`` (a truncated or foreign file), and when it does not exist.
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"path={str(path)!r} is not an existing .iml file")
    rows, cols = shape
    want = rows * cols * 2
    raw = p.read_bytes()
    if len(raw) != want:
        raise ValueError(
            f"path={str(path)!r} has {len(raw)} bytes; a {cols} x {rows} big-endian uint16 .iml "
            f"image has {want} bytes (malformed or truncated file?)"
        )
    return np.frombuffer(raw, dtype=">u2").reshape(rows, cols).astype(np.float64)


def _to_gray(img: np.ndarray) -> np.ndarray:
    img = np.asarray(img, dtype=np.float64)
    if img.ndim == 3:
        if img.shape[-1] == 4:  # drop alpha
            img = img[..., :3]
        # ITU-R 601 luma weights, the same as PIL's "L" conversion.
        img = img[..., :3] @ np.array([0.299, 0.587, 0.114])
    if img.ndim != 2:
        raise ValueError(f"image must be 2-D (grey) or 3-D (colour); got shape {img.shape}")
    return img


def load_image_file(path: str | os.PathLike) -> np.ndarray:
    """Load one image file as a grey float64 array: ``.iml`` via :func:`load_iml`, else Pillow."""
    p = Path(path)
    if p.suffix.lower() == ".iml":
        return load_iml(p)
    if not p.is_file():
        raise ValueError(f"path={str(path)!r} is not an existing image file")
    from PIL import Image

    try:
        with Image.open(p) as im:
            arr = np.asarray(im)
    except Exception as exc:  # Pillow raises several types for unreadable files
        raise ValueError(f"path={str(path)!r} could not be read as an image: {exc}") from exc
    return _to_gray(arr)


def load_image_folder(folder: str | os.PathLike) -> list[np.ndarray]:
    """All images in ``folder`` (``.iml`` and ordinary formats), sorted by file name.

    Raises ``ValueError`` naming ``folder`` when it is missing or holds no image file.
    """
    d = Path(folder)
    if not d.is_dir():
        raise ValueError(f"folder={str(folder)!r} is not an existing directory")
    files = sorted(p for p in d.iterdir() if p.suffix.lower() in _IMAGE_SUFFIXES | {".iml"})
    if not files:
        raise ValueError(f"folder={str(folder)!r} contains no image files (.iml, .png, .jpg, .tif, ...)")
    return [load_image_file(p) for p in files]


def load_skimage_images(names: tuple[str, ...] | list[str] = SKIMAGE_IMAGES) -> list[np.ndarray]:
    """The bundled scikit-image photographs ``names`` as grey float64 arrays in [0, 255]."""
    import skimage.data

    out = []
    for name in names:
        if name not in SKIMAGE_IMAGES:
            raise ValueError(f"names contains {name!r}; bundled natural images are {SKIMAGE_IMAGES}")
        out.append(_to_gray(getattr(skimage.data, name)()))
    return out


def read_image_pack_meta(path: str | os.PathLike) -> dict:
    """The metadata of an image pack (``.npz`` from :func:`cnce.images.pack.build_image_pack`):
    ``format``, ``halved`` (True: the images are already halved) and per photograph ``name``,
    ``package``, ``file``, ``author``, ``licence``, ``shape``, ... Raises ``ValueError`` naming
    ``path`` when it is missing or not an image pack."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"path={str(path)!r} is not an existing image pack (.npz); build one with "
                         "scripts/photo-pack.sh or python -m cnce image-pack")
    import json
    import zipfile

    try:
        with np.load(p, allow_pickle=False) as z:
            if "meta" not in z.files:
                raise ValueError(f"path={str(path)!r} is a .npz file without 'meta': not an image pack")
            meta = json.loads(str(z["meta"][()]))
    except (OSError, zipfile.BadZipFile, json.JSONDecodeError) as exc:
        raise ValueError(f"path={str(path)!r} could not be read as an image pack: {exc}") from exc
    if not str(meta.get("format", "")).startswith("cnce-image-pack/"):
        raise ValueError(f"path={str(path)!r} has format {meta.get('format')!r}; expected cnce-image-pack/...")
    return meta


def load_image_pack(path: str | os.PathLike) -> tuple[list[np.ndarray], list[str]]:
    """The photographs of an image pack as grey float64 arrays in [0, 255], and their names.

    The images are stored already halved (``read_image_pack_meta(path)["halved"]``): do not halve
    them again (:func:`load_images` returns the right ``halve`` flag).
    """
    meta = read_image_pack_meta(path)
    with np.load(Path(path), allow_pickle=False) as z:
        missing = [ph["key"] for ph in meta["photos"] if ph["key"] not in z.files]
        if missing:
            raise ValueError(f"path={str(path)!r} lacks the arrays {missing} its metadata lists (damaged pack?)")
        images = [z[ph["key"]].astype(np.float64) for ph in meta["photos"]]
    return images, [ph["name"] for ph in meta["photos"]]


def load_images(path: str | os.PathLike, *, halve: bool | None = None) -> tuple[list[np.ndarray], bool, str]:
    """Images from a folder (:func:`load_image_folder`) or an image pack ``.npz``
    (:func:`load_image_pack`): returns ``(images, halve, description)``.

    ``halve`` is the flag to pass to :func:`prepare_image`: an explicit ``halve`` is returned as
    given; ``None`` becomes True for a folder (full-resolution files, like the van Hateren
    images) and False for a pack whose metadata says ``halved: true`` (already halved).
    The description is ``"folder <name>"`` or ``"image pack <name> (<n> photographs, pre-halved)"``.
    """
    p = Path(path)
    if p.suffix.lower() == ".npz" and not p.is_dir():
        images, _ = load_image_pack(p)
        halved = bool(read_image_pack_meta(p).get("halved", False))
        desc = f"image pack {p.name} ({len(images)} photographs{', pre-halved' if halved else ''})"
        return images, (not halved) if halve is None else bool(halve), desc
    return load_image_folder(p), True if halve is None else bool(halve), f"folder {p.name}"


def prepare_image(img: np.ndarray, *, halve: bool = False, border: int = 4) -> np.ndarray:
    """Per-image preprocessing: optional nearest-neighbour halving, ``log(x + 1)``, zero mean and
    unit variance, and a ``border``-pixel crop (as in the authors' code for van Hateren images).

    The logarithm makes a power-law (gamma) encoding a mere scale factor, which the unit-variance
    step removes: 8-bit gamma-encoded photographs and linear 16-bit data are treated alike.
    """
    img = np.asarray(img, dtype=np.float64)
    if img.ndim != 2:
        raise ValueError(f"img must be a 2-D grey image; got shape {img.shape}")
    if np.any(img < 0):
        raise ValueError("img must hold non-negative intensities (log is taken)")
    if halve:
        img = img[::2, ::2]
    x = np.log(img + 1.0)
    x = (x - x.mean()) / max(x.std(), 1e-12)
    if border:
        x = x[border:-border, border:-border]
    return x


def sample_patches(
    images: list[np.ndarray], n: int, *, size: int = 32, oversample: int = 2, rng: np.random.Generator | int = 0
) -> np.ndarray:
    """``n`` vectorised ``size x size`` patches with their DC component removed, ``(n, size**2)``.

    Draws ``oversample * n`` patches at uniformly random positions (images weighted by their
    number of valid positions) and keeps the ``n`` with the highest variance.
    """
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int; got {n!r}")
    if oversample < 1:
        raise ValueError(f"oversample must be >= 1; got {oversample!r}")
    rng = np.random.default_rng(rng)
    valid = np.array([(im.shape[0] - size + 1) * (im.shape[1] - size + 1) for im in images])
    if len(images) == 0 or np.any(valid <= 0):
        raise ValueError(f"images must be non-empty and at least {size} x {size} pixels each")
    m = oversample * n
    which = rng.choice(len(images), size=m, p=valid / valid.sum())
    out = np.empty((m, size * size))
    for k, im in enumerate(images):
        idx = np.flatnonzero(which == k)
        if idx.size == 0:
            continue
        r = rng.integers(0, im.shape[0] - size + 1, idx.size)
        c = rng.integers(0, im.shape[1] - size + 1, idx.size)
        win = np.lib.stride_tricks.sliding_window_view(im, (size, size))
        out[idx] = win[r, c].reshape(idx.size, -1)
    out -= out.mean(axis=1, keepdims=True)  # DC removal
    keep = np.argsort(-out.var(axis=1), kind="stable")[:n]
    return out[np.sort(keep)]


def sample_patches_torch(
    images: list[torch.Tensor], n: int, *, size: int = 32, oversample: int = 2, generator: torch.Generator,
    chunk: int = 32_768,
) -> torch.Tensor:
    """The recipe of :func:`sample_patches` in torch, on the device of ``images`` and
    ``generator``: ``(n, size**2)`` float32 patches with the DC component removed, the ``n`` of
    highest variance among ``oversample * n`` uniformly placed ones (kept in draw order).

    Positions are drawn with ``generator`` (images weighted by their number of valid positions);
    the windows are gathered from each image's ``unfold`` view, ``chunk`` patches at a time. No
    per-patch Python loop; one host synchronisation per draw (the patch count per image).
    """
    validate(n, Integer(lo=1), "n")
    if oversample < 1:
        raise ValueError(f"oversample must be >= 1; got {oversample!r}")
    if len(images) == 0 or any(im.shape[0] < size or im.shape[1] < size for im in images):
        raise ValueError(f"images must be non-empty and at least {size} x {size} pixels each")
    dev = images[0].device
    vr = torch.tensor([im.shape[0] - size + 1 for im in images], device=dev)
    vc = torch.tensor([im.shape[1] - size + 1 for im in images], device=dev)
    valid = (vr * vc).double()
    m = oversample * n
    which = torch.multinomial(valid / valid.sum(), m, replacement=True, generator=generator)
    pos = (torch.rand(m, generator=generator, device=dev, dtype=torch.float64) * valid[which]).long()
    pos = torch.minimum(pos, (valid[which] - 1).long())
    r, c = pos // vc[which], pos % vc[which]
    out = torch.empty(m, size * size, device=dev)
    order = torch.argsort(which, stable=True)
    counts = torch.bincount(which, minlength=len(images)).tolist()  # one host sync per draw
    a = 0
    for k, im in enumerate(images):
        idx = order[a:a + counts[k]]
        a += counts[k]
        win = im.float().unfold(0, size, 1).unfold(1, size, 1)  # (rows', cols', size, size) view
        for s0 in range(0, idx.numel(), chunk):
            i = idx[s0:s0 + chunk]
            out[i] = win[r[i], c[i]].reshape(i.numel(), -1)
    out -= out.mean(1, keepdim=True)  # DC removal
    keep = torch.topk(out.var(1), n, sorted=False).indices.sort().values
    return out[keep]


@dataclass
class Whitener:
    """PCA whitening with dimension reduction: ``u = diag(lam)^(-1/2) V^T (x - mean)``.

    ``V`` holds the leading ``D`` eigenvectors (columns) of the patch covariance, ``lam`` their
    eigenvalues, ``retained`` the fraction of variance they keep.
    """

    mean: torch.Tensor
    V: torch.Tensor
    lam: torch.Tensor
    retained: float

    @classmethod
    def fit(cls, X: np.ndarray | torch.Tensor, D: int) -> "Whitener":
        X = torch.as_tensor(X).to(torch.float64)
        if X.ndim != 2 or not (1 <= D <= X.shape[1]):
            raise ValueError(f"D must be in [1, {X.shape[-1]}] for data of shape {tuple(X.shape)}; got {D!r}")
        mean = X.mean(0)
        C = torch.cov((X - mean).T)
        lam, V = torch.linalg.eigh(C)
        lam, V = lam.flip(0), V.flip(1)
        retained = float(lam[:D].sum() / lam.clamp_min(0).sum())
        return cls(mean=mean.float(), V=V[:, :D].float().contiguous(), lam=lam[:D].float(), retained=retained)

    @property
    def D(self) -> int:
        return self.V.shape[1]

    def to(self, device) -> "Whitener":
        return Whitener(self.mean.to(device), self.V.to(device), self.lam.to(device), self.retained)

    def transform(self, X: torch.Tensor) -> torch.Tensor:
        """Whiten ``X (..., dim)`` to ``(..., D)``."""
        X = torch.as_tensor(X, dtype=self.V.dtype, device=self.V.device)
        return ((X - self.mean) @ self.V) / self.lam.sqrt()

    def dewhiten(self, U: torch.Tensor) -> torch.Tensor:
        """Map whitened vectors (or features) back to the input space: ``V diag(lam)^(1/2) u + mean``
        without the mean (features are directions)."""
        U = torch.as_tensor(U, dtype=self.V.dtype, device=self.V.device)
        return (U * self.lam.sqrt()) @ self.V.T

    def filters(self, W: torch.Tensor) -> torch.Tensor:
        """Input-space filters ``V diag(lam)^(-1/2) w`` whose inner product with ``x - mean``
        equals ``w . u``."""
        W = torch.as_tensor(W, dtype=self.V.dtype, device=self.V.device)
        return (W / self.lam.sqrt()) @ self.V.T

    def state_dict(self) -> dict:
        return {"mean": self.mean.cpu(), "V": self.V.cpu(), "lam": self.lam.cpu(), "retained": self.retained}

    @classmethod
    def from_state_dict(cls, d: dict) -> "Whitener":
        return cls(d["mean"], d["V"], d["lam"], float(d["retained"]))


class PatchSource:
    """Draws fresh, preprocessed, whitened patches: ``draw(n, seed) -> (n, D)`` float32 tensor.

    Args:
        images: grey images, already through :func:`prepare_image`.
        whitener: a fitted :class:`Whitener`; fit one with :meth:`fit_whitener`.
        size: patch side length.
    """

    def __init__(self, images: list[np.ndarray], whitener: Whitener | None = None, *, size: int = 32):
        if not images:
            raise ValueError("images must be a non-empty list of 2-D arrays")
        self.images = images
        self.size = size
        self.whitener = whitener
        self._on: dict[str, list[torch.Tensor]] = {}
        self._kept: tuple | None = None  # (arguments, whitener, patches) of the last draw_rows set

    def _images_on(self, device) -> list[torch.Tensor]:
        key = str(torch.device(device))
        if key not in self._on:
            self._on[key] = [torch.as_tensor(np.ascontiguousarray(im), dtype=torch.float32, device=device) for im in self.images]
        return self._on[key]

    def raw_torch(self, n: int, seed: int, device="cpu") -> torch.Tensor:
        """``(n, size**2)`` DC-removed float32 patches on ``device`` (before whitening), drawn with a
        generator on that device seeded with ``seed`` (:func:`sample_patches_torch`)."""
        dev = torch.device(device)
        gen = torch.Generator(device=dev).manual_seed(int(seed))
        return sample_patches_torch(self._images_on(dev), n, size=self.size, generator=gen)

    def raw(self, n: int, seed: int) -> np.ndarray:
        """``(n, size**2)`` DC-removed patches (before whitening), float64 numpy, drawn on the CPU."""
        return self.raw_torch(n, seed, "cpu").double().numpy()

    def fit_whitener(self, n: int, D: int, seed: int, device="cpu") -> Whitener:
        """Fit the PCA whitening to ``n`` fresh patches (on ``device``; the whitener is kept on
        the CPU and moved where patches are drawn)."""
        self.whitener = Whitener.fit(self.raw_torch(n, seed, device), D).to("cpu")
        return self.whitener

    def draw(self, n: int, seed: int, device="cpu") -> torch.Tensor:
        """``(n, D)`` whitened float32 patches, sampled and whitened on ``device``."""
        if self.whitener is None:
            raise ValueError("whitener is None: call fit_whitener first")
        dev = torch.device(device)
        key = str(dev)
        if getattr(self, "_wh_key", None) != (key, id(self.whitener)):
            self._wh_dev, self._wh_key = self.whitener.to(dev), (key, id(self.whitener))
        return self._wh_dev.transform(self.raw_torch(n, seed, dev))

    def draw_rows(self, n: int, seed: int, start: int, stop: int, device="cpu") -> torch.Tensor:
        """Rows ``start`` to ``stop`` of :meth:`draw` ``(n, seed, device)``. The last set drawn is
        kept, so the batches of one large set (the authors' main sets) share one draw; a set of
        other arguments (or another whitener) replaces it (a resumed run draws its set again, the
        same patches)."""
        key = (int(n), int(seed), str(torch.device(device)))
        if self._kept is None or self._kept[0] != key or self._kept[1] is not self.whitener:
            self._kept = None  # free the last set before drawing the next
            self._kept = (key, self.whitener, self.draw(n, seed, device))
        return self._kept[2][start:stop]

    def release_rows(self) -> None:
        """Forget the set :meth:`draw_rows` keeps (its memory, on the device it was drawn on)."""
        self._kept = None
