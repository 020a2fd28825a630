#!/usr/bin/python3
"""Writes N JPEG photos (random crops of real photos, 320..800 px on the long side, quality 90)
into DIR for bench/calibration_bench.sh. Sources: scikit-image's sample photos when
python3-skimage is installed, else the photos committed in tests/data/images. Needs Pillow.

    make_bench_photos.py DIR N
"""
import glob
import os
import random
import sys

from PIL import Image

out_dir, n = sys.argv[1], int(sys.argv[2])
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sources = []
try:
    import skimage.data

    d = os.path.dirname(skimage.data.__file__)
    sources = [os.path.join(d, f) for f in ["astronaut.png", "coffee.png", "chelsea.png", "motorcycle_left.png",
                                            "hubble_deep_field.jpg", "rocket.jpg", "coins.png", "camera.png"]
               if os.path.exists(os.path.join(d, f))]
except ImportError:
    pass
if not sources:
    sources = sorted(glob.glob(os.path.join(root, "tests/data/images/photo_*")))
photos = [Image.open(p).convert("RGB") for p in sources]
rng = random.Random(0)
os.makedirs(out_dir, exist_ok=True)
for i in range(n):
    img = photos[i % len(photos)]
    w, h = img.size
    cw, ch = int(w * rng.uniform(0.6, 1.0)), int(h * rng.uniform(0.6, 1.0))
    x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
    crop = img.crop((x, y, x + cw, y + ch))
    long_side = rng.randint(320, 800)
    s = long_side / max(cw, ch)
    crop = crop.resize((max(1, round(cw * s)), max(1, round(ch * s))), Image.BILINEAR)
    crop.save(os.path.join(out_dir, f"{i:05d}.jpg"), quality=90)
print(f"{n} photos from {len(photos)} sources in {out_dir}")
