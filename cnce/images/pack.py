"""A second, larger set of natural photographs for the image model: the Debian wallpaper "image pack".

``python -m cnce image-pack --out data/photos/pack.npz`` (or ``scripts/photo-pack.sh``, which
first installs the two Debian packages) reads the photographs listed in :data:`DEBIAN_PHOTOS`
from Debian's ``mate-backgrounds`` (``nature/``) and ``plasma-workspace-wallpapers``, each at
the largest resolution the package ships, and for each one

1. converts it to grey with the ITU-R 601 luma weights (:func:`cnce.images.data._to_gray`, the
   same conversion as every other loader here and as Pillow's ``"L"`` mode);
2. halves it with nearest neighbour, ``img[::2, ::2]`` (as the authors did with the van Hateren
   images; it also hides the JPEG blocks);
3. rounds it to 8-bit grey.

The pack is one ``np.savez_compressed`` file: one ``uint8`` array per photograph and ``meta``, a
JSON string with ``halved: true`` and, per photograph, its name, package, file, author, licence,
source size and SHA-256. :func:`cnce.images.data.load_image_pack` reads it back and
:func:`cnce.images.data.load_images` accepts it wherever a folder of images is accepted.

The photographs are the packages' copyright: the pack is built locally (under the git-ignored
``data/photos/``) and never committed.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cnce.provenance import atomic_write

__all__ = ["PhotoSpec", "DEBIAN_PHOTOS", "PACK_FORMAT", "build_image_pack", "patch_positions", "register"]

#: Version of the pack layout written into ``meta["format"]``.
PACK_FORMAT = "cnce-image-pack/1"

_PLASMA = "plasma-workspace-wallpapers"
_MATE = "mate-backgrounds"
_PLASMA_LICENCE = ("LGPLv3 (the wallpaper's metadata.json 'License'); the package's Debian copyright "
                   "file says GPL-2+ for all files (Copyright 2014 KDE Visual Design Group)")
_MATE_LICENCE = "GPL-2+ (Debian copyright file of mate-backgrounds)"


@dataclass(frozen=True)
class PhotoSpec:
    """One photograph of the pack: ``path`` is the file to read, ``size`` its expected
    ``(width, height)`` (checked, so a changed package cannot silently change the pack)."""

    name: str
    package: str
    path: str
    size: tuple[int, int] | None
    author: str
    licence: str


def _plasma(name: str, author: str, size=(2560, 1600)) -> PhotoSpec:
    return PhotoSpec(name, _PLASMA, f"/usr/share/wallpapers/{name}/contents/images/{size[0]}x{size[1]}.jpg",
                     size, author, _PLASMA_LICENCE)


def _mate(name: str, size, author: str) -> PhotoSpec:
    return PhotoSpec(name, _MATE, f"/usr/share/backgrounds/mate/nature/{name}.jpg", size, author, _MATE_LICENCE)


#: The selection (Debian 12 "bookworm": mate-backgrounds 1.26.0-1, plasma-workspace-wallpapers
#: 4:5.27.5-2), each file the largest resolution its wallpaper ships. Kept: real photographs of
#: natural scenes that are sharp over a good part of the frame. Left out: renders and paintings
#: (most of plasma's wallpapers), man-made subjects (ColorfulCups, Grey), frames that are mostly
#: smooth sky, fog or defocus blur (Kite, summer_1am, DarkestHour, ColdRipple, Storm, and the
#: macro flowers Aqua, FreshFlower, Garden, LadyBird, TwoWings, YellowFlower) and Wood.
#: Authors: the wallpaper's metadata.json (plasma) or the package's Debian copyright file (MATE).
DEBIAN_PHOTOS: tuple[PhotoSpec, ...] = (
    _plasma("Path", "Risto Saukonpää"),
    _plasma("OneStandsOut", "Risto Saukonpää"),
    _plasma("EveningGlow", "Ian Hex"),
    _plasma("BytheWater", "Maciej Wiklo"),
    _plasma("FallenLeaf", "Martin Klapetek"),
    _mate("Dune", (1680, 1050), "Marco Cogoni (2007), Hylke Bons (2008)"),
    _mate("GreenMeadow", (1280, 1024), "Timothy Schellhase (2005), Lapo Calamandrei (2008)"),
    _mate("RainDrops", (1920, 1200), '"blackcombwhistler07" (2008)'),
    _mate("Blinds", (1920, 1200), "Lennart Poettering, Andrea Cimitan (2008)"),
)


def patch_positions(shape: tuple[int, int], *, size: int = 32, border: int = 4) -> int:
    """Number of ``size x size`` patch positions in an image of ``shape`` (already halved, if it is
    to be) after :func:`cnce.images.data.prepare_image` drops a ``border``-pixel frame."""
    r, c = shape[0] - 2 * border - size + 1, shape[1] - 2 * border - size + 1
    return max(r, 0) * max(c, 0)


def _package_version(package: str) -> str | None:
    if not shutil.which("dpkg-query"):
        return None
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


def _read_gray(path: Path) -> tuple[np.ndarray, tuple[int, int]]:
    from PIL import Image

    from cnce.images.data import _to_gray

    try:
        with Image.open(path) as im:
            size = im.size
            arr = np.asarray(im.convert("RGB") if im.mode not in ("L", "RGB") else im)
    except Exception as exc:  # Pillow raises several types for unreadable files
        raise ValueError(f"file {str(path)!r} could not be read as an image: {exc}") from exc
    return _to_gray(arr), size


def build_image_pack(out: str | os.PathLike, selection: tuple[PhotoSpec, ...] | list[PhotoSpec] = DEBIAN_PHOTOS,
                     *, verbose: bool = False) -> dict:
    """Build the image pack ``out`` (a ``.npz`` file) from ``selection``; returns its metadata.

    Every file is checked before any is converted: a missing one raises ``FileNotFoundError``
    naming the file and its package (and how to install it), a file of another size than the
    selection expects raises ``ValueError``. The pack is written atomically (temporary file, then
    rename), so a failed build leaves no half-written pack.
    """
    out = Path(out)
    if out.suffix != ".npz":
        raise ValueError(f"out must be a .npz file; got {str(out)!r}")
    if not selection:
        raise ValueError("selection must name at least one photograph")
    names = [s.name for s in selection]
    if len(set(names)) != len(names):
        raise ValueError(f"selection has repeated names: {names}")
    missing = [s for s in selection if not Path(s.path).is_file()]
    if missing:
        pkgs = sorted({s.package for s in missing})
        raise FileNotFoundError(
            "missing photograph file(s): " + "; ".join(f"{s.path} (photo {s.name!r}, package {s.package})" for s in missing)
            + f". Install the package(s) with: apt-get install -y {' '.join(pkgs)} (or run scripts/photo-pack.sh as root)")
    t0 = time.perf_counter()
    arrays, photos = {}, []
    versions = {p: _package_version(p) for p in sorted({s.package for s in selection})}
    for i, s in enumerate(selection):
        p = Path(s.path)
        gray, size = _read_gray(p)
        if s.size is not None and tuple(size) != tuple(s.size):
            raise ValueError(f"file {s.path!r} (photo {s.name!r}, package {s.package}) is {size[0]} x {size[1]} "
                             f"pixels; the selection expects {s.size[0]} x {s.size[1]} (a different package version?)")
        half = np.clip(np.rint(gray[::2, ::2]), 0, 255).astype(np.uint8)
        key = f"{i:02d}_{s.name}"
        arrays[key] = half
        photos.append({
            "key": key, "name": s.name, "package": s.package, "package_version": versions[s.package],
            "file": s.path, "author": s.author, "licence": s.licence,
            "source_size": [int(size[0]), int(size[1])], "shape": [int(n) for n in half.shape],
            "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
        })
        if verbose:
            print(f"  {s.name:14s} {size[0]:5d} x {size[1]:<5d} -> {half.shape[1]:4d} x {half.shape[0]:<4d}  ({s.package})",
                  flush=True)
    src_px = sum(p["source_size"][0] * p["source_size"][1] for p in photos)
    px = sum(a.size for a in arrays.values())
    meta = {
        "format": PACK_FORMAT, "halved": True, "dtype": "uint8",
        "description": "natural photographs from Debian wallpaper packages: grey (ITU-R 601 luma), "
                       "halved by nearest neighbour (every second pixel), 8-bit",
        "photos": photos, "source_pixels": src_px, "pixels": px,
        "patch_positions_32": sum(patch_positions(a.shape) for a in arrays.values()),
    }
    atomic_write(out, lambda fh: np.savez_compressed(fh, meta=np.array(json.dumps(meta, ensure_ascii=False)), **arrays),
                 binary=True)
    meta["bytes"] = out.stat().st_size
    meta["seconds"] = time.perf_counter() - t0
    return meta


def _run(args: argparse.Namespace) -> int:
    from cnce.images.data import SKIMAGE_IMAGES, load_skimage_images

    print(f"building {args.out} from {len(DEBIAN_PHOTOS)} photographs", flush=True)  # module global: tests swap it
    meta = build_image_pack(args.out, DEBIAN_PHOTOS, verbose=True)
    sk = load_skimage_images(SKIMAGE_IMAGES)
    sk_pos = sum(patch_positions(im.shape) for im in sk)
    print(f"wrote {args.out}: {meta['bytes'] / 1e6:.2f} MB, {len(meta['photos'])} photographs, "
          f"{meta['source_pixels'] / 1e6:.1f} Mpx at source, {meta['pixels'] / 1e6:.2f} Mpx after halving, "
          f"{meta['patch_positions_32'] / 1e6:.2f} M 32x32 patch positions (bundled scikit-image set: "
          f"{sk_pos / 1e6:.2f} M), {meta['seconds']:.1f} s")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("image-pack", help="build the Debian-wallpaper image pack (second natural-image set, Sec. 4)",
                              description=__doc__.splitlines()[0])
    p.add_argument("--out", default="data/photos/pack.npz", help="pack file to write (default data/photos/pack.npz)")
    p.set_defaults(func=_run)
