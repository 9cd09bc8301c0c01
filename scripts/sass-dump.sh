#!/usr/bin/env bash
# SASS of one CUDA source file for sm_90, on the build machine (no GPU needed).
# usage: scripts/sass-dump.sh FILE.cu [OUT.sass]      (default OUT: /tmp/<file>.sass; one line per instruction)
#
# The CUDA 13 toolkit here has no disassembler. Debian's nvidia-cuda-toolkit (CUDA 11.8, section non-free) has
# nvdisasm, which decodes sm_90 instructions but not CUDA 13's newer ELF header (OS/ABI 0x41, ABI version 8, other
# e_flags); the cubin's header is rewritten to the old form (OS/ABI 0x33, version 7, EF_CUDA_SM90 flags) before
# disassembly. Instructions newer than CUDA 11.8 may print as unknown opcodes. NVDISASM=path overrides the tool.
set -euo pipefail
src=${1:?usage: scripts/sass-dump.sh FILE.cu [OUT.sass]}
out=${2:-/tmp/$(basename "$src" .cu).sass}
[ -f "$src" ] || { echo "sass-dump.sh: no such file: $src" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
tools=${SASS_TOOLS:-$HOME/.cache/cnn-sass-tools}
nvdisasm=${NVDISASM:-$tools/usr/bin/nvdisasm}
if [ ! -x "$nvdisasm" ]; then
  mkdir -p "$tools"
  if ! (cd "$tools" && apt-get download nvidia-cuda-toolkit >/dev/null 2>&1); then
    echo "sass-dump.sh: cannot download Debian's nvidia-cuda-toolkit (enable the contrib and non-free components in" \
      "/etc/apt/sources.list.d and run apt-get update), or set NVDISASM" >&2
    exit 2
  fi
  dpkg -x "$tools"/nvidia-cuda-toolkit_*.deb "$tools"
  rm -f "$tools"/nvidia-cuda-toolkit_*.deb
fi
cubin=$(mktemp --suffix=.cubin)
trap 'rm -f "$cubin"' EXIT
nvcc -std=c++20 -O3 -arch=sm_90 -I"$root" -cubin -o "$cubin" "$src"
python3 - "$cubin" <<'PY'
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
if b[:4] != b'\x7fELF':
    sys.exit(f'sass-dump.sh: {p} is not an ELF file')
b[7], b[8] = 0x33, 7                          # OS/ABI and ABI version of CUDA <= 12 cubins
struct.pack_into('<I', b, 48, 0x005a055a)     # e_flags: sm_90, virtual sm_90, 64-bit addresses, unified textures
open(p, 'wb').write(b)
PY
"$nvdisasm" -c "$cubin" | sed -E 's/^\s+//; s/\s+;/;/; s/ +/ /g' > "$out.tmp"
mv "$out.tmp" "$out"
echo "sass-dump.sh: $(grep -c '^/\*' "$out") instructions in $(grep -c '^\.text\.' "$out") kernels -> $out"
