#!/usr/bin/env python3
"""Hybrid-accumulation backward-filter times under the tiles the planner would pick with branch ha-tiles-s11's table
change (kBfcHaMeasuredTiles / kBfcHaNarrowTiles; not merged), assembled from runs of the same kernels: call 7's checked run of the
whole-run kernel (planner tiles of the time: 7x7 2x8, 17x17 1x17 -> 2x9 where narrow, 51x51 2x13, and 13x13 2x13 on
128x32x32x1024, where the new narrow rule goes back to 2x13) and call 8's forced runs (9x9 3x9, 13x13 1x13 on the
64-column-segment maps, 31x31 1x31). Writes ha_default_tiles.csv. Run from this folder."""
import csv

rows = {}
with open("call7_ha_new_1.csv") as f:
    for r in csv.DictReader(f):
        rows[(r["map"], r["filter"])] = r
fields = list(r.keys())
for name, keep in (("call8_ha9_3x9.csv", None), ("call8_ha13_1x13.csv", {"128x128x128x128", "128x64x64x256"}),
                   ("call8_ha31_1x31.csv", None)):
    with open(name) as f:
        for r in csv.DictReader(f):
            if keep is None or r["map"] in keep:
                rows[(r["map"], r["filter"])] = r
with open("ha_default_tiles.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=fields)
    w.writeheader()
    for key in rows:
        w.writerow(rows[key])
