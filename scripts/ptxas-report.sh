#!/usr/bin/env bash
# Resource use of every CUDA kernel in the given sources, as ptxas reports it: registers, shared memory, stack frame
# and spill bytes per kernel and architecture. Each file is compiled once more with its exact command from
# build/compile_commands.json plus -Xptxas -v (no GPU needed; configure build/ first, e.g. scripts/build.sh).
# usage: scripts/ptxas-report.sh [FILE.cu ...]     (default: every .cu under kernels/dwconv/)
# Spills or a register count at the 255 limit are what to look for after a kernel change.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
db=${CNN_BUILD_DIR:-$root/build}/compile_commands.json
[ -f "$db" ] || { echo "ptxas-report.sh: no $db (configure the build first: scripts/build.sh)" >&2; exit 2; }
if [ $# -eq 0 ]; then
  mapfile -t files < <(cd "$root" && find kernels/dwconv -name '*.cu' | sort)
else
  files=("$@")
fi
[ ${#files[@]} -gt 0 ] || { echo "ptxas-report.sh: no .cu files to report on" >&2; exit 2; }
python3 - "$db" "$root" "${files[@]}" <<'PY'
import json, os, re, shlex, subprocess, sys, tempfile

db_path, root, files = sys.argv[1], sys.argv[2], sys.argv[3:]
entries = {os.path.realpath(e['file']): e for e in json.load(open(db_path))}

def demangle(names):
    out = subprocess.run(['c++filt'], input='\n'.join(names), capture_output=True, text=True, check=True).stdout
    return out.splitlines()

def short(name):
    # "void ns::(anonymous namespace)::kernel<A, B>(args)" -> "ns::kernel<A, B>": the template arguments identify the
    # instance, the parameter list is the same for all of them.
    name = name.replace('(anonymous namespace)::', '')
    if name.startswith('void '):
        name = name[5:]
    depth = 0
    for i, ch in enumerate(name):
        depth += ch == '<'
        depth -= ch == '>'
        if ch == '(' and depth == 0:
            return name[:i]
    return name

def report(path):
    real = os.path.realpath(path if os.path.isabs(path) else os.path.join(root, path))
    entry = entries.get(real)
    if entry is None:
        sys.exit(f'ptxas-report.sh: {path} is not in {db_path} (not a CUDA source of this build?)')
    args = entry['arguments'] if 'arguments' in entry else shlex.split(entry['command'])
    with tempfile.TemporaryDirectory() as tmp:
        out = args.index('-o')
        args = args[:out + 1] + [os.path.join(tmp, 'k.o')] + args[out + 2:] + ['-Xptxas', '-v']
        run = subprocess.run(args, cwd=entry['directory'], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f'ptxas-report.sh: compiling {path} failed:\n{run.stderr}')
    rows, current, props_for = [], None, None
    for line in run.stderr.splitlines():
        m = re.search(r"Compiling entry function '(\S+)' for '(sm_\w+)'", line)
        if m:
            current = {'name': m.group(1), 'arch': m.group(2), 'regs': 0, 'smem': 0, 'stack': 0, 'spill': '0/0'}
            rows.append(current)
            continue
        if current is None:
            continue
        m = re.search(r'Function properties for (\S+)', line)
        if m:
            props_for = m.group(1)  # the entry itself or a device function it calls
            continue
        m = re.search(r'(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads', line)
        if m and props_for == current['name']:
            current['stack'], current['spill'] = int(m.group(1)), f'{m.group(2)}/{m.group(3)}'
        m = re.search(r'Used (\d+) registers', line)
        if m:
            current['regs'] = int(m.group(1))
            s = re.search(r'(\d+) bytes smem', line)
            current['smem'] = int(s.group(1)) if s else 0
            current = None  # later lines belong to the next entry function
    for r, name in zip(rows, demangle([r['name'] for r in rows])):
        name = short(name)
        print(f"{os.path.relpath(real, root):44} {r['arch']:6} {r['regs']:4} {r['smem']:7} {r['stack']:5} "
              f"{r['spill']:>9}  {name}")
    return len(rows)

print(f"{'file':44} {'arch':6} {'regs':>4} {'smem':>7} {'stack':>5} {'spill st/ld':>9}  kernel")
total = sum(report(f) for f in files)
print(f'ptxas-report.sh: {total} kernels in {len(files)} files')
PY
