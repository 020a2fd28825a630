#!/usr/bin/python3
"""Generates the image fixtures of tests/data_pipeline (run once; the outputs are committed).

    apt-get install python3-opencv python3-skimage python3-pil   # Debian 12: OpenCV 4.6, skimage 0.19
    /usr/bin/python3 tests/data/images/make_fixtures.py

Every reference array here comes from OpenCV (cv2.imread, cv2.resize with INTER_LINEAR,
cv2.copyMakeBorder) or from the pixels a file was written from, never from trtutils. Photos are
crops of scikit-image's sample data, downscaled to keep the committed bytes small. Arrays are
uint8, HWC, RGB(A) channel order (cv2's BGR is swapped back).
"""
import os
import struct

import cv2
import numpy as np
import skimage.data
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
SKIMAGE_DIR = os.path.dirname(skimage.data.__file__)


def out(name):
    return os.path.join(HERE, name)


def rgb(bgr):
    """cv2 BGR(A) -> RGB(A) (gray stays as it is)."""
    if bgr.ndim == 2:
        return bgr
    return np.ascontiguousarray(bgr[..., [2, 1, 0, 3][: bgr.shape[2]]])


def save_ref(name, arr):
    assert arr.dtype == np.uint8
    np.save(out(name), np.ascontiguousarray(arr))


def letterbox(img, h, w, pad=114):
    """The ultralytics LetterBox (center=True, scaleup=True) on an OpenCV image."""
    ih, iw = img.shape[:2]
    r = min(h / ih, w / iw)
    nw, nh = int(round(iw * r)), int(round(ih * r))
    dw, dh = (w - nw) / 2, (h - nh) / 2
    if (iw, ih) != (nw, nh):
        img = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_LINEAR)
    top, bottom = int(round(dh - 0.1)), int(round(dh + 0.1))
    left, right = int(round(dw - 0.1)), int(round(dw + 0.1))
    img = cv2.copyMakeBorder(img, top, bottom, left, right, cv2.BORDER_CONSTANT, value=(pad, pad, pad))
    assert img.shape[:2] == (h, w), img.shape
    return img


# ---- photos for the resize tests (PNG: lossless, so decoding plays no part) ----
def photo(name, arr_rgb, crop, size_wh):
    y0, y1, x0, x1 = crop
    img = cv2.cvtColor(arr_rgb[y0:y1, x0:x1], cv2.COLOR_RGB2BGR)
    img = cv2.resize(img, size_wh, interpolation=cv2.INTER_AREA)
    cv2.imwrite(out(name), img)
    return cv2.imread(out(name), cv2.IMREAD_COLOR)


photos = {
    "astronaut": photo("photo_astronaut.png", skimage.data.astronaut(), (0, 384, 0, 512), (128, 96)),
    "coffee": photo("photo_coffee.png", skimage.data.coffee(), (0, 400, 0, 600), (120, 80)),
    "chelsea": photo("photo_chelsea.png", skimage.data.chelsea(), (40, 300, 130, 286), (60, 100)),
}
for name, img in photos.items():
    for h, w in [(48, 64), (130, 170), (31, 97)]:
        save_ref(f"ref_{name}_linear_{h}x{w}.npy", rgb(cv2.resize(img, (w, h), interpolation=cv2.INTER_LINEAR)))
    for h, w in [(64, 64), (100, 60), (57, 150)]:
        save_ref(f"ref_{name}_letterbox_{h}x{w}.npy", rgb(letterbox(img, h, w)))

# ---- decoding ----
small = cv2.resize(photos["astronaut"], (40, 30), interpolation=cv2.INTER_AREA)  # BGR

# JPEG: a photo (baseline, 4:2:0), progressive, grayscale; references from cv2.imread.
hubble = cv2.imread(os.path.join(SKIMAGE_DIR, "hubble_deep_field.jpg"), cv2.IMREAD_COLOR)
hubble = cv2.resize(hubble[100:700, 200:1000], (128, 96), interpolation=cv2.INTER_AREA)
cv2.imwrite(out("photo_hubble.jpg"), hubble, [cv2.IMWRITE_JPEG_QUALITY, 90])
cv2.imwrite(out("progressive.jpg"), small, [cv2.IMWRITE_JPEG_QUALITY, 90, cv2.IMWRITE_JPEG_PROGRESSIVE, 1])
cv2.imwrite(out("gray.jpg"), cv2.cvtColor(small, cv2.COLOR_BGR2GRAY), [cv2.IMWRITE_JPEG_QUALITY, 90])
for f in ["photo_hubble.jpg", "progressive.jpg", "gray.jpg"]:
    save_ref(f"ref_{os.path.splitext(f)[0]}_jpg.npy", rgb(cv2.imread(out(f), cv2.IMREAD_COLOR)))
# CMYK (Adobe, inverted) written by Pillow; OpenCV's conversion rounds differently (tolerance).
Image.fromarray(rgb(small)).convert("CMYK").save(out("cmyk.jpg"), quality=95)
save_ref("ref_cmyk_jpg.npy", rgb(cv2.imread(out("cmyk.jpg"), cv2.IMREAD_COLOR)))

# EXIF orientation: an asymmetric image with one APP1 Exif segment per orientation value.
base = np.zeros((16, 24, 3), np.uint8)
base[:8, :12] = (0, 0, 255)
base[:8, 12:] = (0, 255, 0)
base[8:, :12] = (255, 0, 0)
base[8:, 12:] = (255, 255, 255)
base[:4, :4] = (0, 255, 255)
ok, enc = cv2.imencode(".jpg", base, [cv2.IMWRITE_JPEG_QUALITY, 95])
enc = enc.tobytes()


def exif_app1(orientation, big_endian):
    e = ">" if big_endian else "<"
    tiff = (b"MM" if big_endian else b"II") + struct.pack(e + "HI", 42, 8)
    # IFD0: two entries (XResolution-like filler first, then Orientation), next IFD 0.
    tiff += struct.pack(e + "H", 2)
    tiff += struct.pack(e + "HHI", 0x010F, 2, 4) + b"cam\0"  # Make = "cam"
    tiff += struct.pack(e + "HHIHH", 0x0112, 3, 1, orientation, 0)
    tiff += struct.pack(e + "I", 0)
    payload = b"Exif\0\0" + tiff
    return b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload


for o in range(1, 9):
    data = enc[:2] + exif_app1(o, big_endian=(o % 2 == 0)) + enc[2:]
    with open(out(f"orient_{o}.jpg"), "wb") as f:
        f.write(data)
    save_ref(f"ref_orient_{o}.npy", rgb(cv2.imread(out(f"orient_{o}.jpg"), cv2.IMREAD_COLOR)))

# PNG: gray, gray 16-bit, RGBA, palette (+ tRNS) from skimage's data.
cv2.imwrite(out("gray.png"), cv2.cvtColor(small, cv2.COLOR_BGR2GRAY))
cv2.imwrite(out("gray16.png"), cv2.cvtColor(small, cv2.COLOR_BGR2GRAY).astype(np.uint16) * 257 + 3)
rgba = cv2.cvtColor(small, cv2.COLOR_BGR2BGRA)
rgba[..., 3] = np.linspace(0, 255, rgba.shape[1]).astype(np.uint8)[None, :]
cv2.imwrite(out("rgba.png"), rgba)
# Palettes (Pillow writes them; OpenCV cannot): 8-bit with a tRNS chunk, 2-bit, gray + alpha.
pal_img = Image.fromarray((np.arange(12 * 20).reshape(12, 20) % 7).astype(np.uint8), mode="P")
pal_img.putpalette([v for i in range(7) for v in (i * 40, 255 - i * 30, (i * 90) % 256)])
pal_img.save(out("palette_trns.png"), transparency=bytes([0, 128, 255, 255, 64, 255, 255]))
pal2 = Image.fromarray((np.arange(12 * 20).reshape(12, 20) % 4).astype(np.uint8), mode="P")
pal2.putpalette([v for i in range(4) for v in (i * 80, 30, 255 - i * 80)])
pal2.save(out("palette_2bit.png"), bits=2)
Image.fromarray(np.stack([cv2.cvtColor(small, cv2.COLOR_BGR2GRAY), rgba[..., 3]], axis=2), mode="LA").save(
    out("gray_alpha.png"))
for f in ["gray.png", "gray16.png", "rgba.png", "palette_trns.png", "palette_2bit.png", "gray_alpha.png"]:
    save_ref(f"ref_{os.path.splitext(f)[0]}_png.npy", rgb(cv2.imread(out(f), cv2.IMREAD_COLOR)))
save_ref("ref_palette_trns_png_unchanged.npy", rgb(cv2.imread(out("palette_trns.png"), cv2.IMREAD_UNCHANGED)))
save_ref("ref_rgba_png_unchanged.npy", rgb(cv2.imread(out("rgba.png"), cv2.IMREAD_UNCHANGED)))

# WebP: lossless (reference = the source pixels), lossy, lossless with alpha.
cv2.imwrite(out("lossless.webp"), small, [cv2.IMWRITE_WEBP_QUALITY, 101])
cv2.imwrite(out("lossy.webp"), small, [cv2.IMWRITE_WEBP_QUALITY, 80])
cv2.imwrite(out("alpha.webp"), rgba, [cv2.IMWRITE_WEBP_QUALITY, 101])
save_ref("ref_lossless_webp.npy", rgb(small))
save_ref("ref_lossy_webp.npy", rgb(cv2.imread(out("lossy.webp"), cv2.IMREAD_COLOR)))
# Lossless WebP may change the colour of fully transparent pixels: the reference is cv2.imread.
save_ref("ref_alpha_webp.npy", rgb(cv2.imread(out("alpha.webp"), cv2.IMREAD_UNCHANGED)))


# BMP: written by hand here (OpenCV writes only 8/24-bit); references are the source pixels.
def bmp(name, pixels_rgb, bits, header=40, top_down=False, palette=None, masks=None, alpha=None):
    h, w = pixels_rgb.shape[:2]
    stride = (w * bits + 31) // 32 * 4
    rows = []
    for y in range(h):
        p = pixels_rgb[y]
        if bits == 24:
            row = p[:, ::-1].tobytes()
        elif bits == 32:
            a = alpha[y] if alpha is not None else np.zeros(w, np.uint8)
            row = np.concatenate([p[:, ::-1], a[:, None]], axis=1).tobytes()
        elif bits == 16:  # 5-5-5 from the top 5 bits
            v = ((p[:, 0].astype(np.uint16) >> 3) << 10) | ((p[:, 1].astype(np.uint16) >> 3) << 5) | (p[:, 2] >> 3)
            row = v.astype("<u2").tobytes()
        else:  # paletted: pixels_rgb holds indices in channel 0
            idx = p[:, 0].astype(np.uint32)
            per = 8 // bits
            row = bytearray((w + per - 1) // per)
            for x in range(w):
                row[x // per] |= int(idx[x]) << (8 - bits * (1 + x % per))
            row = bytes(row)
        rows.append(row + b"\0" * (stride - len(row)))
    if not top_down:
        rows = rows[::-1]
    data = b"".join(rows)
    pal = b""
    if palette is not None:
        pal = b"".join(bytes([c[2], c[1], c[0]]) + (b"" if header == 12 else b"\0") for c in palette)
    compression = 3 if masks is not None else 0
    if header == 12:
        dib = struct.pack("<IHHHH", 12, w, h, 1, bits)
    else:
        dib = struct.pack("<IiiHHIIiiII", header, w, -h if top_down else h, 1, bits, compression, len(data),
                          2835, 2835, len(palette) if palette is not None else 0, 0)
        if header >= 52:
            m = list(masks) if masks is not None else [0, 0, 0, 0]
            dib += struct.pack("<IIII", *m)
            dib += b"\0" * (header - len(dib))
        elif masks is not None:
            dib += struct.pack("<III", *masks[:3])
    off = 14 + len(dib) + len(pal)
    fh = b"BM" + struct.pack("<IHHI", off + len(data), 0, 0, off)
    with open(out(name), "wb") as f:
        f.write(fh + dib + pal + data)


src = rgb(cv2.resize(photos["coffee"], (13, 9), interpolation=cv2.INTER_AREA))  # odd width: row padding
bmp("rgb24.bmp", src, 24)
save_ref("ref_rgb24_bmp.npy", src)
bmp("rgb24_topdown.bmp", src, 24, top_down=True)
bmp("rgb24_core.bmp", src, 24, header=12)
bmp("rgb32.bmp", src, 32)  # BI_RGB: the 4th byte is unused
alpha = (np.arange(9 * 13).reshape(9, 13) * 2).astype(np.uint8)
bmp("rgba32_v4.bmp", src, 32, header=108, masks=(0xFF0000, 0xFF00, 0xFF, 0xFF000000), alpha=alpha)
save_ref("ref_rgba32_v4_bmp.npy", np.concatenate([src, alpha[..., None]], axis=2))
bmp("rgb16.bmp", src, 16)
save_ref("ref_rgb16_bmp.npy", np.round((src >> 3).astype(np.float64) * 255 / 31).astype(np.uint8))
pal8 = [(i, 255 - i, (i * 7) % 256) for i in range(256)]
idx8 = (np.arange(9 * 13).reshape(9, 13) * 5 % 256).astype(np.uint8)
bmp("pal8.bmp", np.repeat(idx8[..., None], 3, axis=2), 8, palette=pal8)
save_ref("ref_pal8_bmp.npy", np.array(pal8, np.uint8)[idx8])
gray_pal = [(i, i, i) for i in range(256)]
bmp("gray8.bmp", np.repeat(idx8[..., None], 3, axis=2), 8, palette=gray_pal)
save_ref("ref_gray8_bmp.npy", idx8)
pal4 = [(i * 17, 0, 255 - i * 17) for i in range(16)]
idx4 = (np.arange(9 * 13).reshape(9, 13) % 16).astype(np.uint8)
bmp("pal4.bmp", np.repeat(idx4[..., None], 3, axis=2), 4, palette=pal4)
save_ref("ref_pal4_bmp.npy", np.array(pal4, np.uint8)[idx4])
pal1 = [(10, 20, 30), (200, 150, 100)]
idx1 = (np.arange(9 * 13).reshape(9, 13) % 3 == 0).astype(np.uint8)
bmp("pal1.bmp", np.repeat(idx1[..., None], 3, axis=2), 1, palette=pal1)
save_ref("ref_pal1_bmp.npy", np.array(pal1, np.uint8)[idx1])
# OpenCV must agree with the pixels the files were written from (a check of this script).
for f, ref in [("rgb24.bmp", src), ("rgb24_topdown.bmp", src), ("rgb24_core.bmp", src), ("rgb32.bmp", src),
               ("pal8.bmp", np.array(pal8, np.uint8)[idx8]), ("pal4.bmp", np.array(pal4, np.uint8)[idx4]),
               ("pal1.bmp", np.array(pal1, np.uint8)[idx1])]:
    got = rgb(cv2.imread(out(f), cv2.IMREAD_COLOR))
    assert np.array_equal(got, ref), f

total = sum(os.path.getsize(out(f)) for f in os.listdir(HERE) if f != os.path.basename(__file__))
print(f"fixtures: {len(os.listdir(HERE)) - 1} files, {total} bytes")
assert total < 1_500_000
