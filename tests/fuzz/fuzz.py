#!/usr/bin/env python3
"""Fuzz harness of cnn-train: generates bad inputs of four kinds (configs: model YAMLs, recipes; flags; data: image
trees with one bad file; checkpoints: mutated run folders and safetensors), runs cnn-train on each with a time limit
and counts, per kind, crashes (a signal, an unexpected exit status or a sanitizer report), hangs (over --timeout
seconds) and silent acceptances (a bad input that ran; for image trees, a bad file never named). Exit status 1 when
any count is not 0.

  tests/fuzz/fuzz.py --bin build/bin/cnn-train --preset ci            # the CI corpus (ctest: fuzz_corpus)
  tests/fuzz/fuzz.py --bin build/bin/cnn-train --preset full --jobs 2 # >= 2,000 cases (docs/reliability.md)
"""
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import argparse
import concurrent.futures
import glob
import json
import os
import random
import shlex
import shutil
import subprocess
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generators as gen  # noqa: E402

PRESETS = {  # cases per generator
    "ci": {"models": 90, "recipes": 40, "flags": 80, "checkpoints": 80, "data": 21},
    "full": {"models": 630, "recipes": 220, "flags": 470, "checkpoints": 480, "data": 210},
}
TINY_GRAY_MODEL = ("family: convmixer\nin_channels: 1\nnum_classes: 10\ninput_size: 28\ndim: 16\ndepth: 2\n"
                   "kernel_size: 7\npatch_size: 4\nactivation: gelu\n")
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "UndefinedBehaviorSanitizer")


def make_base_run(binary, out, model):
    """A stopped run (step 3 of 16) on synthetic data: the original every checkpoint case mutates."""
    runs = os.path.join(out, "base_runs")
    shutil.rmtree(runs, ignore_errors=True)
    cmd = [binary, "--model", model, "--dataset", "synthetic", "--synthetic-size", "64", "--batch-size", "8",
           "--epochs", "2", "--stop-after", "3", "--device", "cpu", "--workers", "1", "--output", runs]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"fuzz: the base run failed:\n{r.stdout}{r.stderr}")
    return glob.glob(os.path.join(runs, "*"))[0]


def run_case(binary, case_dir, kind, name, setup, argv, timeout):
    os.makedirs(case_dir)
    values = setup(case_dir)
    args = [binary] + shlex.split(argv.format(**values))
    t0 = time.monotonic()
    try:
        p = subprocess.run(args, capture_output=True, timeout=timeout, cwd=case_dir,
                           stdin=subprocess.DEVNULL)
        status, out, err = p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        status, out, err = None, (e.stdout or b"").decode(errors="replace"), (e.stderr or b"").decode(errors="replace")
    seconds = time.monotonic() - t0
    return classify(kind, values, status, out, err), {"kind": kind, "name": name, "argv": argv.format(**values),
                                                      "status": status, "seconds": round(seconds, 3),
                                                      "stderr": err[-600:]}


def classify(kind, values, status, out, err):
    if status is None:
        return "hang"
    if any(m in err for m in SANITIZER_MARKS):
        return "sanitizer"
    if status not in (0, 1, 2):
        return "crash"
    if kind == "data":
        named = os.path.basename(values["bad"]) in (out + err)
        if not named:
            return "silent"
        return "refused" if status != 0 else "skipped"
    if status == 0:
        return "silent"
    lines = [l for l in err.splitlines() if l.strip()]
    if not lines or not lines[-1].startswith("cnn-train: error:") or " at /" in err:
        return "unclear"
    return "refused"


def cases(preset, rng, source, base_run, tiny_model):
    n = PRESETS[preset]
    models = sorted(glob.glob(os.path.join(source, "configs", "models", "*.yaml")))
    recipes = sorted(glob.glob(os.path.join(source, "configs", "train", "*.yaml")))
    yield from gen.model_cases(rng, n["models"], models)
    yield from gen.recipe_cases(rng, n["recipes"], recipes, tiny_model)
    yield from gen.flag_cases(rng, n["flags"], tiny_model)
    yield from gen.run_folder_cases(rng, n["checkpoints"], base_run)
    yield from gen.image_tree_cases(rng, n["data"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="the cnn-train binary")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="ci")
    ap.add_argument("--out", default="fuzz-out", help="scratch folder (emptied first)")
    ap.add_argument("--source", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds after which a case counts as a hang")
    ap.add_argument("--report", help="write every case's result as JSON Lines here")
    a = ap.parse_args()
    binary, out = os.path.abspath(a.bin), os.path.abspath(a.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    tiny_model = os.path.join(out, "tiny.yaml")
    open(tiny_model, "w").write(TINY_GRAY_MODEL)
    base_run = make_base_run(binary, out, tiny_model)
    rng = random.Random(a.seed)
    t0 = time.monotonic()
    counts, bad = {}, []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        futures = [pool.submit(run_case, binary, os.path.join(out, f"case_{i:05d}"), *c, a.timeout)
                   for i, c in enumerate(cases(a.preset, rng, a.source, base_run, tiny_model))]
        results = [f.result() for f in futures]
    report = open(a.report, "w") if a.report else None
    for verdict, rec in results:
        rec["verdict"] = verdict
        per = counts.setdefault(rec["kind"], {})
        per[verdict] = per.get(verdict, 0) + 1
        if report:
            report.write(json.dumps(rec) + "\n")
        if verdict in ("crash", "hang", "silent", "sanitizer", "unclear"):
            bad.append(rec)
    for rec in bad[:40]:
        print(f"{rec['verdict']}: {rec['kind']} {rec['name']}: cnn-train {rec['argv']}\n  status {rec['status']}: "
              f"{rec['stderr'].strip()[-300:]}")
    total = sum(sum(v.values()) for v in counts.values())
    print(f"fuzz: {total} cases in {time.monotonic() - t0:.1f} s ({a.preset}, seed {a.seed}, {a.jobs} jobs)")
    print(f"{'kind':12} {'cases':>6} {'crash':>6} {'hang':>6} {'silent':>7} {'sanitizer':>9} {'unclear':>8}"
          f" {'refused':>8} {'skipped':>8}")
    for kind in ("configs", "flags", "data", "checkpoints"):
        c = counts.get(kind, {})
        print(f"{kind:12} {sum(c.values()):>6} {c.get('crash', 0):>6} {c.get('hang', 0):>6} {c.get('silent', 0):>7}"
              f" {c.get('sanitizer', 0):>9} {c.get('unclear', 0):>8} {c.get('refused', 0):>8} {c.get('skipped', 0):>8}")
    failed = sum(1 for r in bad if r["verdict"] != "unclear")
    if not bad:
        shutil.rmtree(out, ignore_errors=True)
    sys.exit(1 if failed or bad else 0)


if __name__ == "__main__":
    main()
