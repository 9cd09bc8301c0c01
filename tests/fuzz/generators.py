"""Bad-input generators of the fuzz harness. Each generator yields cases (kind, name, setup, argv, expect): `setup(dir)`
writes the case's files into its own folder and returns a dict of placeholders for argv. Every generated input is
invalid by construction (a mutation class that the rules always refuse), so accepting one is a defect."""
import json
import os
import random
import re
import shutil
import struct

from images import BAD_IMAGE_KINDS, good_jpeg, write_bad_image

# Values no numeric key accepts: wrong types, non-finite spellings, out-of-range signs, YAML tags.
BAD_NUMBERS = ["seven", '"7"', "'7'", "[1, 2]", "{a: 1}", "", "~", "-1", "nan", ".inf", "-.inf", "1e999", "0x10",
               "!!str 7", "!!int 7", "!!float 7", "True", "7 7"]
BAD_BOOLS = ["True", "False", "yes", "no", "1", "0", '"true"', "[true]", "!!bool true", ""]
REQUIRED_MODEL_KEYS = {"family", "in_channels", "num_classes", "input_size", "depth", "dim", "kernel_size",
                       "patch_size", "small_kernel", "width_factor", "decomposed", "stages", "channels"}
# Free run-control keys of a run's config.yaml may legitimately change on resume (resume_check.h); string keys whose
# check is semantic (device, model, output, data_dir) are left to the flag generator.
FREE_RUN_KEYS = {"device", "workers", "log_interval", "eval_interval", "checkpoint_interval", "keep", "output"}
SEMANTIC_STRING_KEYS = {"device", "model", "output", "data_dir"}

YAML_WRECKS = {
    "alias_cycle_list": "cycle: &a [*a]\n",
    "alias_cycle_map": "cycle: &a {b: *a}\n",
    "second_document": "---\nepochs: 2\n",
    "deep_nesting": "deep: " + "[" * 200 + "]" * 200 + "\n",
    "tab_indent": "stages:\n\t- depth: 1\n",
    "binary": "\x00\x01\x02\xff\xfe",
    "unclosed_flow": "bad: {a: 1, b: [2\n",
    "bad_indent": "  x: 1\n y: 2\n",
}


def alias_bomb(levels=10, width=10):
    lines = ["b0: &b0 [" + ", ".join(["x"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"b{i}: &b{i} [" + ", ".join([f"*b{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def scalar_spans(text):
    """(key, start, end) of every `key: value` scalar (block or flow style) whose value is not a nested block."""
    spans = []
    for m in re.finditer(r"([A-Za-z_]+): *([^,{}\[\]\n#]+?)(?=\s*[,}\n#]|\s*$)", text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if "#" not in text[line_start : m.start()]:  # not inside a comment
            spans.append((m.group(1), m.start(2), m.end(2)))
    return spans


def kind_of_value(v):
    v = v.strip()
    if v in ("true", "false"):
        return "bool"
    if re.fullmatch(r"[-+]?[0-9.]+(e[-+]?[0-9]+)?", v):
        return "number"
    return "string"


def mutate_yaml(text, rng, required_keys, locked_huge, skip_keys=(), can_truncate=True):
    """One invalid mutation of a YAML config text. Returns (mutation name, new text)."""
    spans = [s for s in scalar_spans(text) if s[0] not in skip_keys]
    choice = rng.randrange(10)
    if choice <= 3 and spans:
        key, a, b = rng.choice(spans)
        kind = kind_of_value(text[a:b])
        if kind == "number":
            bad = rng.choice(BAD_NUMBERS)
        elif kind == "bool":
            bad = rng.choice(BAD_BOOLS)
        else:
            bad = rng.choice(["bogus_value", "7", "[a, b]", "{x: 1}", "!custom x", "!!int 3"])
        return f"bad_value:{key}={bad}", text[:a] + bad + text[b:]
    if choice == 4 and spans:
        key, a, b = rng.choice([s for s in spans if s[0] in locked_huge] or spans)
        if key in locked_huge:
            return f"huge:{key}", text[:a] + rng.choice(locked_huge[key]) + text[b:]
        return f"wrong_type:{key}", text[:a] + "[]" + text[b:]
    if choice == 5:
        lines = text.splitlines(True)
        idx = [i for i, l in enumerate(lines) if re.match(r"^[A-Za-z_]+:", l)]
        i = rng.choice(idx)
        return "duplicate_key", "".join(lines[: i + 1] + [lines[i]] + lines[i + 1 :])
    if choice == 6:
        return "unknown_key", text + rng.choice(["colour: blue\n", "stop_after: 3\n", "Epochs: 2\n", "x y: 1\n"])
    if choice == 7:
        lines = text.splitlines(True)
        idx = [i for i, l in enumerate(lines) if re.match(r"^([A-Za-z_]+):", l) and
               re.match(r"^([A-Za-z_]+):", l).group(1) in required_keys]
        if idx:
            i = rng.choice(idx)
            return f"missing_key:{lines[i].split(':')[0]}", "".join(lines[:i] + lines[i + 1 :])
    if choice == 8 or not can_truncate:
        name = rng.choice(sorted(YAML_WRECKS) + ["alias_bomb"])
        wreck = alias_bomb() if name == "alias_bomb" else YAML_WRECKS[name]
        # A leading '---' only starts the one document: the second document goes after the text.
        first = rng.random() < 0.5 and name != "second_document"
        return f"yaml:{name}", (wreck + text) if first else (text + wreck)
    # A cut inside a key name: a cut at a line boundary can leave a valid shorter config (fewer stages), a cut in a
    # value a valid shorter number; a partial key is always refused (a syntax error or an unknown key).
    keys = [m for m in re.finditer(r"^\s*-?\s*([A-Za-z_]{2,}):", text, flags=re.M)]
    m = rng.choice(keys)
    return "truncated", text[: rng.randrange(m.start(1) + 1, m.end(1))]


MODEL_HUGE = {
    "depth": ["1000000", "2147483647", "2147483648"],
    "dim": ["2147483647", "100000000"],
    "channels": ["2147483647", "100000000"],
    "kernel_size": ["99999", "8", "0", "-3"],
    "small_kernel": ["99999", "4"],
    "input_size": ["1", "0", "4294967296"],
    "patch_size": ["99999", "0"],
    "num_classes": ["0", "2147483648"],
    "in_channels": ["7", "0", "2"],
}
RECIPE_HUGE = {"epochs": ["1000000"], "batch_size": ["2097152", "0"], "accum_steps": ["5000", "0"],
               "lr": ["0", "-1e-3"], "beta1": ["1", "1.5"], "workers": ["0", "5000"], "label_smoothing": ["1"],
               "drop_path": ["1", "-0.1"], "keep": ["-1"], "num_classes": ["-1", "2097152"], "image_size": ["5000"]}


def model_cases(rng, n, sources):
    for k in range(n):
        src = rng.choice(sources)
        text = open(src).read()
        if rng.random() < 0.06:
            special = rng.choice(["fifo", "folder", "empty", "missing", "list_root"])
            yield "configs", f"model_{special}_{k}", _special_file(special, "m.yaml"), \
                "--model {m} --synthetic --steps 1 --bench-warmup 0 --batch-size 1 --device cpu"
            continue
        # in_channels 2 is invalid only as an in_channels value; other "huge" values apply to their own keys.
        what, new = mutate_yaml(text, rng, REQUIRED_MODEL_KEYS, MODEL_HUGE)
        yield "configs", f"model_{os.path.basename(src)}_{what}_{k}", _write_file("m.yaml", new), \
            "--model {m} --synthetic --steps 1 --bench-warmup 0 --batch-size 1 --device cpu"


def recipe_cases(rng, n, sources, tiny_model):
    for k in range(n):
        src = rng.choice(sources)
        text = open(src).read()
        text = re.sub(r"^(model|device|amp|bfc_accum):.*\n", "", text, flags=re.M)  # the command sets these
        # A recipe has no required key: a shorter file is a valid recipe, so no truncation here.
        what, new = mutate_yaml(text, rng, set(), RECIPE_HUGE, skip_keys=SEMANTIC_STRING_KEYS, can_truncate=False)
        yield "configs", f"recipe_{os.path.basename(src)}_{what}_{k}", _write_file("r.yaml", new), \
            "--config {m} --model " + tiny_model + " --synthetic --steps 1 --bench-warmup 0 --device cpu --no-amp"


def _write_file(name, text):
    def setup(d):
        path = os.path.join(d, name)
        with open(path, "w", errors="surrogateescape") as f:
            f.write(text)
        return {"m": path}
    return setup


def _special_file(kind, name):
    def setup(d):
        path = os.path.join(d, name)
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "folder":
            os.mkdir(path)
        elif kind == "empty":
            open(path, "w").close()
        elif kind == "list_root":
            open(path, "w").write("- family\n- convnext\n")
        return {"m": path}
    return setup


# ---- flags -----------------------------------------------------------------------------------------------------

INT_FLAGS = ["epochs", "batch-size", "accum-steps", "train-samples", "val-samples", "image-size", "num-classes",
             "seed", "workers", "log-interval", "eval-interval", "checkpoint-interval", "keep", "stop-after",
             "synthetic-size", "max-nonfinite-steps"]
NUM_FLAGS = ["lr", "min-lr", "weight-decay", "beta1", "beta2", "opt-eps", "warmup-epochs", "warmup-lr-init",
             "label-smoothing", "clip-grad", "drop-path"]
BAD_INTS = ["x", "1.5", "-1", "99999999999999999999", "0x10", "1e3", "' '", "--", "7abc"]
BAD_NUMS = ["nan", "inf", "-inf", "x", "1e999", "-1", "0x1p3", "1,5"]
CROSS = [
    "--min-lr 1 --lr 0.1", "--warmup-lr-init 1 --lr 0.1", "--warmup-epochs 5 --epochs 2", "--warmup-epochs 1e300",
    "--batch-size 100000", "--train-samples 70000", "--num-classes 5", "--steps 5", "--bench-warmup 2",
    "--synthetic --stop-after 3", "--bench-data --synthetic", "--bench-seconds 2", "--amp", "--bfc-accum ha",
    "--image-size 1", "--resume {d}/nowhere", "--resume {d}/afile", "--config {d}/missing.yaml", "--bogus 1",
    "--epochs", "--data-dir {d}/nowhere", "--dataset imagenet", "--output {d}/afile", "--device tpu",
    "--device cuda:x", "--device cuda:-1", "--dataset bogus", "--sched step", "--opt sgd", "--augment maybe",
    "--bfc-accum fp64", "--amp=maybe", "--model {d}/afile", "--model no_such_model", "--data-dir {d}/afile",
    "--dataset imagenet --data-dir {d}", "--resume {d}", "--config {d}", "--config {d}/afile",
    "--val-samples 99999999", "--synthetic --steps 0", "--bench-data --bench-seconds 0.1",
]


def flag_cases(rng, n, tiny_model):
    base = "--model " + tiny_model + " --device cpu --output {d}/runs --workers 1"

    def setup(d):
        open(os.path.join(d, "afile"), "w").write("x")
        return {"d": d}
    for k in range(n):
        r = rng.random()
        if r < 0.35:
            flag = rng.choice(INT_FLAGS)
            bad = f"--{flag} {rng.choice(BAD_INTS)}"
        elif r < 0.6:
            bad = f"--{rng.choice(NUM_FLAGS)} {rng.choice(BAD_NUMS)}"
        else:
            bad = rng.choice(CROSS)
        yield "flags", f"flags_{k}_{re.sub(r'[^A-Za-z0-9]+', '_', bad)[:40]}", setup, base + " " + bad


# ---- checkpoints and run folders ---------------------------------------------------------------------------------

def st_read(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8 : 8 + n]), bytearray(data[8 + n :])


def st_write(path, header, buf):
    text = json.dumps(header).encode()
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + bytes(buf))


_FMT = {"F32": ("<f", 4), "F64": ("<d", 8), "I64": ("<q", 8)}


def st_set(header, buf, name, index, value):
    e = header[name]
    fmt, size = _FMT[e["dtype"]]
    at = e["data_offsets"][0] + index * size
    buf[at : at + size] = struct.pack(fmt, value)


def st_get(header, buf, name, index=0):
    e = header[name]
    fmt, size = _FMT[e["dtype"]]
    at = e["data_offsets"][0] + index * size
    return struct.unpack(fmt, bytes(buf[at : at + size]))[0]


def _tensors(header, prefix="", dtype=None):
    return sorted(k for k, v in header.items()
                  if k != "__metadata__" and k.startswith(prefix) and (dtype is None or v["dtype"] == dtype))


def mutate_state(path, rng):
    """One invalid change of a state.safetensors; returns its name."""
    h, buf = st_read(path)
    step = st_get(h, buf, "train.step")
    k = rng.randrange(11)
    if k == 0:
        name = rng.choice(_tensors(h, "optim.", "F32"))
        st_set(h, buf, name, 0, rng.choice([float("nan"), float("inf"), -float("inf")]))
    elif k == 1:
        name = rng.choice([t for t in _tensors(h, "optim.", "F32") if t.endswith("exp_avg_sq")])
        st_set(h, buf, name, 0, -rng.uniform(1e-6, 10))
    elif k == 2:
        name = rng.choice(["train.step", "train.epoch", "train.next_batch", "train.best_step", "train.log_loss_count",
                           "train.epoch_loss_count", "train.nonfinite_skipped", "train.nonfinite_streak", "optim.step"])
        low = -2 if name == "train.best_step" else -1  # best_step -1 means "no evaluation yet", a valid value
        st_set(h, buf, name, 0, rng.choice([low, -(1 << 62), 1 << 62, step + 5, (1 << 63) - 1]))
    elif k == 3:
        name = rng.choice(["train.log_loss_sum", "train.epoch_loss_sum", "train.best_top1"])
        # -0.5 / 5.0 fit no best_top1 (-1 or [0, 1]); a negative sum fits no sum of cross-entropy losses.
        bad = [-0.5, 5.0] if name == "train.best_top1" else [-1.0]
        st_set(h, buf, name, 0, rng.choice([float("nan"), float("inf")] + bad))
    elif k == 4:
        name = rng.choice(_tensors(h))
        off = h.pop(name)["data_offsets"]
        del buf[off[0] : off[1]]
        for v in h.values():
            if isinstance(v, dict) and "data_offsets" in v and v["data_offsets"][0] >= off[1]:
                v["data_offsets"] = [v["data_offsets"][0] - (off[1] - off[0]), v["data_offsets"][1] - (off[1] - off[0])]
    elif k == 5:
        name = rng.choice(["train.extra", "optim.ghost.exp_avg", "loss_scaler.scale", "model.weight"])
        h[name] = {"dtype": "F32", "shape": [1], "data_offsets": [len(buf), len(buf) + 4]}
        buf += struct.pack("<f", 1.0)
    elif k == 6:
        meta = h.setdefault("__metadata__", {})
        what = rng.choice(["format", "model", "config_missing", "config_broken", "config_locked", "config_changed"])
        name = "metadata:" + what
        if what == "format":
            meta["format"] = rng.choice(["cnn-train-state-1", "", "other"])
        elif what == "model":
            meta["model"] = "someone_else"
        elif what == "config_missing":
            meta.pop("config", None)
        elif what == "config_broken":
            meta["config"] = meta.get("config", "")[: rng.randrange(1, 40)] + "\n: [\n"
        elif what == "config_locked":
            meta["config"] = re.sub(r"batch_size: \d+", "batch_size: 3", meta["config"])
        else:
            meta["config"] = re.sub(r"lr: [0-9.e-]+", "lr: 0.5", meta["config"])
    elif k == 7:
        name = rng.choice(_tensors(h, "optim.", "F32"))
        h[name]["shape"] = [d + 1 for d in h[name]["shape"]]
        name = "shape:" + name
    elif k == 8:
        name = rng.choice(_tensors(h, "train.", "I64"))
        h[name]["dtype"] = rng.choice(["F64", "I32", "F32"])
        name = "dtype:" + name
    elif k == 9:
        data = open(path, "rb").read()
        open(path, "wb").write(data[: rng.randrange(0, len(data) - 1)])
        return "truncated"
    else:
        data = bytearray(open(path, "rb").read())
        data[0:8] = struct.pack("<Q", rng.choice([0, 7, len(data), 1 << 40, (1 << 64) - 1]))
        open(path, "wb").write(data)
        return "header_length"
    st_write(path, h, buf)
    return f"state:{k}:{name}"


def mutate_model_file(path, rng):
    h, buf = st_read(path)
    k = rng.randrange(4)
    if k == 0:
        name = rng.choice(_tensors(h, dtype="F32"))
        count = 1
        for d in h[name]["shape"]:
            count *= d
        st_set(h, buf, name, rng.randrange(count), rng.choice([float("nan"), float("inf"), -float("inf")]))
    elif k == 1:
        name = rng.choice(_tensors(h))
        h.pop(name)  # the buffer then holds bytes of no tensor: refused either way
    elif k == 2:
        name = "extra.weight"
        h[name] = {"dtype": "F32", "shape": [1], "data_offsets": [len(buf), len(buf) + 4]}
        buf += struct.pack("<f", 0.5)
    else:
        name = rng.choice(_tensors(h, dtype="F32"))
        h[name]["shape"] = list(reversed(h[name]["shape"])) + [1]
    st_write(path, h, buf)
    return f"model:{k}:{name}"


def run_folder_cases(rng, n, base_run):
    """Mutations of a copy of a stopped run; each resumed with --resume."""
    for k in range(n):
        def setup(d, k=k, seed=rng.randrange(1 << 30)):
            r = random.Random(seed)
            run = os.path.join(d, "run")
            shutil.copytree(base_run, run, symlinks=True)
            ckpt = os.path.join(run, "checkpoints", "last")
            choice = r.randrange(10)
            if choice <= 4:
                what = mutate_state(os.path.join(ckpt, "state.safetensors"), r)
            elif choice <= 6:
                what = mutate_model_file(os.path.join(ckpt, "model.safetensors"), r)
            elif choice == 7:
                yaml_path = os.path.join(run, "config.yaml")
                text = open(yaml_path).read()
                # Locked and changeable keys only: an edit of a free key is allowed (resume_check.h).
                what, new = mutate_yaml(text, r, set(), RECIPE_HUGE, skip_keys=FREE_RUN_KEYS, can_truncate=False)
                if what.startswith("duplicate") or what.startswith("unknown") or what.startswith("yaml"):
                    pass
                else:
                    span = [s for s in scalar_spans(text) if s[0] not in FREE_RUN_KEYS]
                    key, a, b = r.choice(span)
                    value = text[a:b]
                    new = text[:a] + (value + "1" if kind_of_value(value) == "number" else '"changed"') + text[b:]
                    what = f"edited:{key}"
                open(yaml_path, "w").write(new)
                what = "config.yaml:" + what
            else:
                target = r.choice(["config.yaml", "checkpoints/last", "checkpoints/last/state.safetensors",
                                   "checkpoints/last/model.safetensors"])
                path = os.path.join(run, target)
                kind = r.choice(["fifo", "folder", "missing", "symlink_loop", "dangling"])
                if os.path.islink(path) or os.path.isfile(path):
                    os.remove(path)
                else:
                    shutil.rmtree(path)
                if kind == "fifo":
                    os.mkfifo(path)
                elif kind == "folder":
                    os.mkdir(path)
                elif kind == "symlink_loop":
                    os.symlink(os.path.basename(path), path)
                elif kind == "dangling":
                    os.symlink("nowhere", path)
                what = f"{target}:{kind}"
            open(os.path.join(d, "what"), "w").write(what)
            return {"run": run}
        yield "checkpoints", f"run_{k}", setup, "--resume {run}"


# ---- image trees -----------------------------------------------------------------------------------------------

TINY_RGB_MODEL = ("family: convmixer\nin_channels: 3\nnum_classes: 2\ninput_size: 16\ndim: 8\ndepth: 1\n"
                  "kernel_size: 3\npatch_size: 4\nactivation: gelu\n")


def image_tree_cases(rng, n):
    """An ImageNet-style tree (2 classes, 10 good JPEGs and one bad file in train) per case, trained for one epoch."""
    for k in range(n):
        kind = BAD_IMAGE_KINDS[k % len(BAD_IMAGE_KINDS)]

        def setup(d, kind=kind, seed=rng.randrange(1 << 30)):
            r = random.Random(seed)
            root = os.path.join(d, "data")
            for split, count in (("train", 10), ("val", 2)):
                for i in range(count):
                    folder = os.path.join(root, split, f"c{i % 2}")
                    os.makedirs(folder, exist_ok=True)
                    open(os.path.join(folder, f"img_{i}.JPEG"), "wb").write(good_jpeg(r))
            name = r.choice(["bad.JPEG", "bad.jpg", "bad.png", "bad.PNG"])
            bad = os.path.join(root, "train", "c1", name)
            write_bad_image(bad, kind, r)
            model = os.path.join(d, "rgb.yaml")
            open(model, "w").write(TINY_RGB_MODEL)
            return {"data": root, "model": model, "bad": bad, "d": d}
        # One epoch at batch 1 reads every training file exactly once (a timed --bench-data may stop earlier).
        yield "data", f"images_{k}_{kind}", setup, \
            "--model {model} --dataset imagenet --data-dir {data} --epochs 1 --batch-size 1 --workers 2 " \
            "--device cpu --log-interval 100 --output {d}/runs"
