#!/usr/bin/env bash
# Packs two builds' bundles into one archive for the A/B scripts (scripts/device/ab_dwconv.sh and ab_train.sh with A =
# the archive and B = "-"): a/bundle and b/bundle, xz-compressed with a dictionary larger than the distance between the
# two libcnn.so, so the bytes they share are stored once. Two builds' libraries then cost a few MB more than one, where
# two archives would overrun the device tool's 64 MiB carry.
# usage: scripts/ab-pack.sh A_BUNDLE B_BUNDLE OUT.tar.xz
#   A_BUNDLE, B_BUNDLE: bundle folders as scripts/device-bundle.sh leaves them (.device/bundle: commit, env.sh, lib/,
#   bin/); A may hold only commit and lib/libcnn.so (side a then runs B's binaries on A's library).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: scripts/ab-pack.sh A_BUNDLE B_BUNDLE OUT.tar.xz" >&2; exit 2; }
for d in "$1" "$2"; do
  if [ ! -f "$d/commit" ] || [ ! -f "$d/lib/libcnn.so" ]; then
    echo "ab-pack.sh: $d is not a bundle (no commit or lib/libcnn.so)" >&2
    exit 2
  fi
done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/a" "$stage/b"
cp -a "$1" "$stage/a/bundle"
cp -a "$2" "$stage/b/bundle"
# Sorted names keep a's libcnn.so within the dictionary's reach of b's: a/bundle/lib, then b/bundle/bin and lib.
tar -C "$stage" --sort=name -cf - a b | xz -9 --lzma2=dict=256MiB > "$3.tmp"
mv "$3.tmp" "$3"
echo "ab-pack.sh: $3 ($(du -k "$3" | cut -f1) KiB): a = $(cat "$1/commit"), b = $(cat "$2/commit")"
