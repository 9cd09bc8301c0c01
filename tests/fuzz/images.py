"""Image files for the fuzz harness, written with the standard library only: a baseline JPEG encoder for
block-constant images (DC coefficients only), a PNG writer, and the kinds of bad image file a data set can hold."""
import os
import random
import struct
import zlib

# Standard luminance DC Huffman table (ITU T.81 K.3): code lengths per category 0..11.
_DC_BITS = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
_DC_VALS = list(range(12))


def _dc_codes():
    codes, code, k = {}, 0, 0
    for length in range(1, 17):
        for _ in range(_DC_BITS[length - 1]):
            codes[_DC_VALS[k]] = (code, length)
            code += 1
            k += 1
        code <<= 1
    return codes


class _Bits:
    def __init__(self):
        self.out, self.acc, self.n = bytearray(), 0, 0

    def put(self, value, length):
        for i in range(length - 1, -1, -1):
            self.acc = (self.acc << 1) | ((value >> i) & 1)
            self.n += 1
            if self.n == 8:
                self.out.append(self.acc)
                if self.acc == 0xFF:
                    self.out.append(0)  # byte stuffing
                self.acc, self.n = 0, 0

    def flush(self):
        while self.n:
            self.put(1, 1)
        return bytes(self.out)


def _segment(marker, payload):
    return bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload


def jpeg(blocks_w, blocks_h, levels, channels=3, progressive=False):
    """A baseline JPEG of (8*blocks_w) x (8*blocks_h) pixels whose 8x8 blocks are constant: levels[i] (0..255) is the
    luma of block i in raster order; chroma is neutral. The AC table holds only end-of-block."""
    comps = 3 if channels == 3 else 1
    dc = _dc_codes()
    out = bytearray(b"\xFF\xD8")
    out += _segment(0xDB, bytes([0]) + bytes([1] * 64))  # quant table 0: all ones
    frame = 0xC2 if progressive else 0xC0
    sof = struct.pack(">BHHB", 8, 8 * blocks_h, 8 * blocks_w, comps)
    for c in range(comps):
        sof += bytes([c + 1, 0x11, 0])
    out += _segment(frame, sof)
    out += _segment(0xC4, bytes([0x00]) + bytes(_DC_BITS) + bytes(_DC_VALS))
    out += _segment(0xC4, bytes([0x10]) + bytes([1] + [0] * 15) + bytes([0x00]))  # AC: EOB = '0'
    sos = bytes([comps])
    for c in range(comps):
        sos += bytes([c + 1, 0x00])
    out += _segment(0xDA, sos + bytes([0, 63, 0]))
    bits, pred = _Bits(), [0] * comps
    for i in range(blocks_w * blocks_h):
        for c in range(comps):
            value = 8 * ((levels[i % len(levels)] if c == 0 else 128) - 128)
            diff = value - pred[c]
            pred[c] = value
            cat = abs(diff).bit_length()
            code, length = dc[cat]
            bits.put(code, length)
            if cat:
                bits.put(diff if diff > 0 else diff + (1 << cat) - 1, cat)
            bits.put(0, 1)  # EOB
    out += bits.flush() + b"\xFF\xD9"
    return bytes(out)


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png(width, height, seed=0, bad_crc=False, declared=None):
    rng = random.Random(seed)
    raw = b"".join(b"\x00" + bytes(rng.randrange(256) for _ in range(width * 3)) for _ in range(height))
    w, h = declared or (width, height)
    ihdr = _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    idat = _chunk(b"IDAT", zlib.compress(raw))
    if bad_crc:
        idat = idat[:-1] + bytes([idat[-1] ^ 0x5A])
    return b"\x89PNG\r\n\x1a\n" + ihdr + idat + _chunk(b"IEND", b"")


def good_jpeg(rng):
    return jpeg(2, 2, [rng.randrange(256) for _ in range(4)])


def _cut(data, rng, lo, hi):
    return data[: max(1, int(len(data) * rng.uniform(lo, hi)))]


def _scan_start(data):
    return data.index(b"\xFF\xDA")


def write_bad_image(path, kind, rng):
    """Writes a bad file of `kind` at `path` (a FIFO, folder or symlink for the non-file kinds)."""
    j = jpeg(4, 4, [rng.randrange(256) for _ in range(16)])
    p = png(8, 8, rng.randrange(1 << 30))
    if kind == "fifo":
        os.mkfifo(path)
        return
    if kind == "symlink_loop":
        os.symlink(os.path.basename(path), path)
        return
    if kind == "dangling_symlink":
        os.symlink("missing-target.jpeg", path)
        return
    data = {
        "empty": lambda: b"",
        "text": lambda: b"not an image at all\n",
        "random": lambda: bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))),
        "jpeg_soi_only": lambda: b"\xFF\xD8\xFF",
        "jpeg_cut_in_header": lambda: j[: rng.randrange(3, _scan_start(j))],
        "jpeg_cut_in_scan": lambda: j[: rng.randrange(_scan_start(j) + 14, len(j) - 6)],
        "jpeg_zero_width": lambda: j.replace(struct.pack(">HH", 32, 32), struct.pack(">HH", 32, 0), 1),
        "jpeg_bad_marker_length": lambda: j[:4] + b"\xFF\xFF" + j[6:],
        "jpeg_garbage_scan": lambda: j[: _scan_start(j) + 14] + bytes([0xFF, 0xC0]) + j[_scan_start(j) + 16 :],
        "jpeg_progressive_cut": lambda: jpeg(4, 4, [7] * 16, progressive=True)[:-40],
        "png_cut": lambda: _cut(p, rng, 0.1, 0.9),
        "png_bad_crc": lambda: png(8, 8, rng.randrange(1 << 30), bad_crc=True),
        "png_huge_dims": lambda: png(8, 8, 1, declared=(1 << 24, 1 << 24)),
        "png_zero_dims": lambda: png(8, 8, 1, declared=(0, 8)),
        "png_signature_only": lambda: p[:8],
        "png_no_ihdr": lambda: p[:8] + p[33:],
    }[kind]()
    with open(path, "wb") as f:
        f.write(data)


BAD_IMAGE_KINDS = [
    "fifo", "symlink_loop", "dangling_symlink", "empty", "text", "random", "jpeg_soi_only",
    "jpeg_cut_in_header", "jpeg_cut_in_scan", "jpeg_zero_width", "jpeg_bad_marker_length",
    "jpeg_garbage_scan", "jpeg_progressive_cut", "png_cut", "png_bad_crc", "png_huge_dims", "png_zero_dims",
    "png_signature_only", "png_no_ihdr",
]
