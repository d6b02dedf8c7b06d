"""Tests of the Debian-wallpaper image pack (cnce.images.pack) and its loaders (cnce.images.data).

The pack is built from a few small synthetic image files written here, with a tiny selection
passed as an argument: neither the Debian packages nor a network are needed.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from PIL import Image

from cnce.images import data as D
from cnce.images import pack as P


def _spec(name, path, size, package="test-pkg"):
    return P.PhotoSpec(name=name, package=package, path=str(path), size=size, author=f"author of {name}",
                       licence="CC0 (test)")


@pytest.fixture
def photos(tmp_path):
    """Three synthetic photographs (RGB PNG, grey PNG, RGB JPEG) of odd and even sizes, and
    their selection."""
    rng = np.random.default_rng(0)
    src = tmp_path / "src"
    src.mkdir()
    rgb = rng.integers(0, 256, (91, 100, 3), dtype=np.uint8)   # odd height: halves to 46 rows
    grey = rng.integers(1, 255, (80, 77), dtype=np.uint8)       # odd width: halves to 39 columns
    jpg = rng.integers(0, 256, (96, 120, 3), dtype=np.uint8)
    Image.fromarray(rgb).save(src / "a.png")
    Image.fromarray(grey).save(src / "b.png")
    Image.fromarray(jpg).save(src / "c.jpg", quality=90)
    sel = (_spec("Alpha", src / "a.png", (100, 91)), _spec("Beta", src / "b.png", (77, 80), package="other-pkg"),
           _spec("Gamma", src / "c.jpg", (120, 96)))
    return sel, {"Alpha": rgb, "Beta": grey}


def test_build_and_load_pack(tmp_path, photos):
    sel, arrays = photos
    out = tmp_path / "photos" / "pack.npz"
    meta = P.build_image_pack(out, sel)
    assert out.is_file() and meta["bytes"] == out.stat().st_size
    assert not list(out.parent.glob("*.tmp*"))  # written atomically

    with np.load(out, allow_pickle=False) as z:
        stored = [z[ph["key"]] for ph in meta["photos"]]
    assert all(a.dtype == np.uint8 and a.ndim == 2 for a in stored)

    images, names = D.load_image_pack(out)
    assert names == ["Alpha", "Beta", "Gamma"]
    assert all(im.dtype == np.float64 and im.ndim == 2 for im in images)
    # nearest-neighbour halving: every second pixel, odd sizes rounded up
    assert [im.shape for im in images] == [(46, 50), (40, 39), (48, 60)]
    # grey = ITU-R 601 luma of the source (lossless PNGs: exact up to rounding), then halved
    want = np.rint(arrays["Alpha"].astype(float) @ [0.299, 0.587, 0.114])[::2, ::2]
    np.testing.assert_array_equal(images[0], want)
    np.testing.assert_array_equal(images[1], arrays["Beta"][::2, ::2].astype(float))
    assert images[2].min() >= 0 and images[2].max() <= 255

    m = D.read_image_pack_meta(out)
    assert m["format"] == P.PACK_FORMAT and m["halved"] is True and m["dtype"] == "uint8"
    ph = m["photos"][1]
    assert ph["name"] == "Beta" and ph["package"] == "other-pkg" and ph["file"] == sel[1].path
    assert ph["author"] == "author of Beta" and ph["licence"] == "CC0 (test)"
    assert ph["source_size"] == [77, 80] and ph["shape"] == [40, 39] and len(ph["sha256"]) == 64
    assert m["source_pixels"] == 100 * 91 + 77 * 80 + 120 * 96
    assert m["pixels"] == sum(im.size for im in images)
    # 32 x 32 positions after the 4-pixel border of prepare_image
    want_pos = sum(max(h - 8 - 31, 0) * max(w - 8 - 31, 0) for h, w in (im.shape for im in images))
    assert m["patch_positions_32"] == want_pos
    prepared = [D.prepare_image(im) for im in images]
    assert want_pos == sum((p.shape[0] - 31) * (p.shape[1] - 31) for p in prepared if min(p.shape) >= 32)
    json.dumps(m)  # plain JSON throughout


def test_missing_file_is_named(tmp_path, photos):
    sel, _ = photos
    gone = _spec("Delta", tmp_path / "src" / "nope.jpg", (10, 10), package="mate-backgrounds")
    out = tmp_path / "pack.npz"
    with pytest.raises(FileNotFoundError) as err:
        P.build_image_pack(out, (*sel, gone))
    msg = str(err.value)
    assert str(tmp_path / "src" / "nope.jpg") in msg and "'Delta'" in msg and "mate-backgrounds" in msg
    assert "apt-get install -y mate-backgrounds" in msg
    assert not out.exists()


def test_unexpected_size_and_bad_arguments(tmp_path, photos):
    sel, _ = photos
    wrong = (P.PhotoSpec(**{**sel[0].__dict__, "size": (200, 100)}),)
    with pytest.raises(ValueError, match=r"100 x 91 pixels; the selection expects 200 x 100"):
        P.build_image_pack(tmp_path / "pack.npz", wrong)
    with pytest.raises(ValueError, match="repeated names"):
        P.build_image_pack(tmp_path / "pack.npz", (sel[0], sel[0]))
    with pytest.raises(ValueError, match=r"\.npz"):
        P.build_image_pack(tmp_path / "pack.png", sel)
    assert not list(tmp_path.glob("pack*"))


def test_load_images_folder_or_pack(tmp_path, photos):
    sel, _ = photos
    out = tmp_path / "pack.npz"
    P.build_image_pack(out, sel)
    images, halve, desc = D.load_images(out)
    assert halve is False and desc == "image pack pack.npz (3 photographs, pre-halved)"
    assert [im.shape for im in images] == [im.shape for im in D.load_image_pack(out)[0]]
    assert D.load_images(out, halve=True)[1] is True  # an explicit flag wins

    folder = tmp_path / "src"
    f_images, f_halve, f_desc = D.load_images(folder)
    assert f_halve is True and f_desc == "folder src"
    assert all(np.array_equal(a, b) for a, b in zip(f_images, D.load_image_folder(folder)))
    assert D.load_images(folder, halve=False)[1] is False

    with pytest.raises(ValueError, match="not an existing image pack"):
        D.load_images(tmp_path / "missing.npz")
    with pytest.raises(ValueError, match="not an existing directory"):
        D.load_images(tmp_path / "missing")
    np.savez(tmp_path / "plain.npz", x=np.zeros(3))
    with pytest.raises(ValueError, match="without 'meta'"):
        D.load_image_pack(tmp_path / "plain.npz")


def test_pack_feeds_patch_source(tmp_path, photos):
    """The proposed ``make_source`` body: ``raw, halve, desc = load_images(images, halve=halve)``."""
    sel, _ = photos
    out = tmp_path / "pack.npz"
    P.build_image_pack(out, sel)
    raw, halve, desc = D.load_images(out, halve=None)
    src = D.PatchSource([D.prepare_image(im, halve=halve) for im in raw], size=8)
    assert [im.shape for im in src.images] == [(38, 42), (32, 31), (40, 52)]  # not halved twice
    x = src.raw(50, seed=1)
    assert x.shape == (50, 64) and np.allclose(x.mean(axis=1), 0, atol=1e-5)


def test_make_source_accepts_pack(tmp_path, photos):
    """``cnce.images.train.make_source`` loads an image pack (:func:`load_images`), unhalved."""
    from cnce.images.train import make_source

    sel, _ = photos
    out = tmp_path / "pack.npz"
    P.build_image_pack(out, sel)
    src, desc = make_source(str(out), patch=8)
    assert desc.startswith("image pack pack.npz")
    assert [im.shape for im in src.images] == [(38, 42), (32, 31), (40, 52)]


def test_cli_builds_pack(tmp_path, photos, monkeypatch, capsys):
    from cnce.cli import main

    sel, _ = photos
    monkeypatch.setattr(P, "DEBIAN_PHOTOS", sel)
    out = tmp_path / "cli" / "pack.npz"
    assert main(["image-pack", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "wrote" in text and "patch positions" in text and out.is_file()
    assert D.load_image_pack(out)[1] == ["Alpha", "Beta", "Gamma"]

    monkeypatch.setattr(P, "DEBIAN_PHOTOS", (*sel, _spec("Delta", tmp_path / "nope.jpg", None)))
    assert main(["image-pack", "--out", str(tmp_path / "x.npz")]) == 1
    assert "nope.jpg" in capsys.readouterr().err


def test_debian_selection():
    names = [s.name for s in P.DEBIAN_PHOTOS]
    assert len(set(names)) == len(names)
    assert {"Path", "OneStandsOut", "EveningGlow", "Dune", "GreenMeadow", "RainDrops", "Blinds", "BytheWater"} <= set(names)
    for s in P.DEBIAN_PHOTOS:
        assert s.package in ("mate-backgrounds", "plasma-workspace-wallpapers") and s.licence and s.author
        assert s.size and s.path.endswith((".jpg", ".png"))
        if s.package == "mate-backgrounds":
            assert s.path.startswith("/usr/share/backgrounds/mate/nature/")
        else:
            assert s.path == f"/usr/share/wallpapers/{s.name}/contents/images/{s.size[0]}x{s.size[1]}.jpg"
    # halved sizes, 4-pixel border: the selection's 32 x 32 positions (a cheap, package-free figure)
    pos = sum(P.patch_positions((math.ceil(s.size[1] / 2), math.ceil(s.size[0] / 2))) for s in P.DEBIAN_PHOTOS)
    assert pos > 4 * 1_400_000
