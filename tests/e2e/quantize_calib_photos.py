#!/usr/bin/python3
"""Calibration / evaluation data from real photos for the quantization e2e tests.

Usage: /usr/bin/python3 quantize_calib_photos.py OUT.npy [--count N] [--size S] [--seed K]

Photos: the 68 photographs that scripts/fetch_photos.sh unpacks from Debian's python3-skimage
and opencv-doc into $TRTUTILS_PHOTO_CACHE (default ~/.cache/trtutils/photos); without them, the
ones of an installed scikit-image plus tests/data/images/photo_* (four). N random crops (scale
0.35..1 of the shorter side, random horizontal flip) resized to S x S (bilinear, PIL), ImageNet
mean/std normalised, NCHW float32; crop i comes from photo order[i % photos], order a
permutation drawn from the seed, so that a few crops (an evaluation set) come from different
photos for different seeds. Deterministic for a given seed and photo set.
"""
import argparse
import glob
import os
import sys

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
SKIMAGE_PHOTOS = ["astronaut.png", "chelsea.png", "coffee.png", "rocket.jpg", "motorcycle_left.png",
                  "motorcycle_right.png", "hubble_deep_field.jpg", "retina.jpg", "color.png",
                  "brick.png", "grass.png", "gravel.png", "camera.png", "moon.png", "coins.png"]


def photo_paths():
    cache = os.environ.get("TRTUTILS_PHOTO_CACHE",
                           os.path.join(os.path.expanduser("~"), ".cache", "trtutils", "photos"))
    if os.path.exists(os.path.join(cache, ".complete")):
        cached = sorted(glob.glob(os.path.join(cache, "*", "*")))
        if len(cached) >= 4:
            return cached
    paths = []
    try:
        import skimage
        d = os.path.join(os.path.dirname(skimage.__file__), "data")
        paths += [os.path.join(d, p) for p in SKIMAGE_PHOTOS if os.path.exists(os.path.join(d, p))]
    except ImportError:
        pass
    paths += sorted(glob.glob(os.path.join(HERE, "..", "data", "images", "photo_*")))
    return paths


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=72)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    paths = photo_paths()
    if len(paths) < 4:
        sys.exit("quantize_calib_photos.py: fewer than 4 photos found")
    rng = np.random.default_rng(a.seed)
    order = rng.permutation(len(paths))
    imgs = {}  # opened on first use
    mean = np.array([0.485, 0.456, 0.406], np.float32)[:, None, None]
    std = np.array([0.229, 0.224, 0.225], np.float32)[:, None, None]
    out = np.empty((a.count, 3, a.size, a.size), np.float32)
    for i in range(a.count):
        k = int(order[i % len(paths)])
        if k not in imgs:
            imgs[k] = Image.open(paths[k]).convert("RGB")
        im = imgs[k]
        w, h = im.size
        side = int(min(w, h) * rng.uniform(0.35, 1.0))
        x0 = int(rng.integers(0, w - side + 1))
        y0 = int(rng.integers(0, h - side + 1))
        crop = im.crop((x0, y0, x0 + side, y0 + side)).resize((a.size, a.size), Image.BILINEAR)
        if rng.random() < 0.5:
            crop = crop.transpose(Image.FLIP_LEFT_RIGHT)
        arr = np.asarray(crop, np.float32).transpose(2, 0, 1) / 255.0
        out[i] = (arr - mean) / std
    tmp = a.out + ".tmp.npy"
    np.save(tmp, out)
    os.replace(tmp, a.out)
    print(f"quantize_calib_photos.py: {a.count} crops of {len(imgs)} of {len(paths)} photos -> {a.out}")


if __name__ == "__main__":
    main()
