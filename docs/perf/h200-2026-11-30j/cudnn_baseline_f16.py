# The cuDNN time each fwd/bdc point of the ninth session's FP16 table used: the last --rows file with its own
# cuDNN time for the point, else the --cudnn-fallback files' (last wins, as bench/dwconv_tables.py loads them).
import csv, glob, sys
rows = """h200-2026-11-30d/call4_f16_*.csv h200-2026-11-30e/call1_f16_*.csv h200-2026-11-30e/call2_f16_*.csv
h200-2026-11-30e/call1_noring_17-31.csv h200-2026-11-30f/call4_f16_*_cc_registers.csv h200-2026-11-30f/call5_f16_fwd_17-31_final.csv
h200-2026-11-30f/call6_f16_*.csv h200-2026-11-30g/call3_cu_*.csv h200-2026-11-30h/call4_cu_f16_*.csv h200-2026-11-30i/call7_cu_*.csv""".split()
fb = "h200-2026-11-30e/call1_f16_*.csv h200-2026-11-30e/call2_f16_*.csv".split()
def expand(pats): return [f for p in pats for f in sorted(glob.glob(p))]
base = {}
for f in expand(fb):
    for r in csv.DictReader(open(f)):
        if r['cudnn_ms']: base[(r['op'], r['map'], r['filter'])] = (r, f)
own = {}
for f in expand(rows):
    for r in csv.DictReader(open(f)):
        k = (r['op'], r['map'], r['filter'])
        own[k] = (r, f)  # later files win, with or without a cuDNN time (as the table tool)
cols = ['op', 'map', 'filter', 'cudnn_ms', 'cudnn_algo', 'cudnn_max_rel_err', 'cudnn_mare', 'source']
w = csv.DictWriter(sys.stdout, cols, extrasaction='ignore', lineterminator='\n')
w.writeheader()
for k in sorted(own):
    if k[0] not in ('fwd', 'bdc'): continue
    r, f = own[k]
    if not r['cudnn_ms']: r, f = base[k]
    w.writerow({**r, 'source': f})
