#!/usr/bin/env python3
"""Writes the first N training and M test samples of Fashion-MNIST as IDX gzip files with the standard names, so a
subset small enough to carry to the GPU machine loads with --data-dir like the full set.
usage: fmnist_subset.py OUT_DIR N_TRAIN N_TEST [SRC_DIR (default /usr/share/datasets/fashion-mnist)]"""
import gzip
import os
import struct
import sys


def subset(src, dst, count):
    with gzip.open(src, "rb") as f:
        data = f.read()
    magic, dims = struct.unpack(">I", data[:4])[0], data[3]
    if magic >> 8 != 0x08:
        sys.exit(f"fmnist_subset.py: {src}: not an unsigned-byte IDX file")
    shape = list(struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims]))
    if count > shape[0]:
        sys.exit(f"fmnist_subset.py: {src} has {shape[0]} samples, asked for {count}")
    row = 1
    for d in shape[1:]:
        row *= d
    head = 4 + 4 * dims
    out = data[:4] + struct.pack(">" + "I" * dims, count, *shape[1:]) + data[head:head + count * row]
    tmp = dst + ".tmp"
    with gzip.open(tmp, "wb", compresslevel=9) as f:
        f.write(out)
    os.replace(tmp, dst)


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    out, n_train, n_test = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    src = sys.argv[4] if len(sys.argv) == 5 else "/usr/share/datasets/fashion-mnist"
    os.makedirs(out, exist_ok=True)
    for split, n in (("train", n_train), ("t10k", n_test)):
        for kind in ("images-idx3-ubyte.gz", "labels-idx1-ubyte.gz"):
            name = f"{split}-{kind}"
            subset(os.path.join(src, name), os.path.join(out, name), n)
    print(f"fmnist_subset.py: {n_train} train / {n_test} test samples in {out}")


if __name__ == "__main__":
    main()
