"""PyTorch definitions of the large-kernel models whose reference code needs custom CUDA extensions: RepLKNet-31B
(DingXiaoH/RepLKNet-pytorch replknet.py) and SLaK-T (VITA-Group/SLaK models/SLaK.py), written with plain nn.Conv2d
so they run anywhere. Parameter names, shapes and counts equal the references' (checkpoints load with strict=True)
and the architectures equal configs/models/{replknet_31b,slak_tiny,slak_tiny_dense}.yaml.

    from bench.torch_models import build
    model = build("replknet_31b")   # or "slak_tiny", "slak_tiny_dense"; keyword overrides go to the constructor
"""
from .replknet import RepLKNet
from .slak import SLaK

_BUILDERS = {
    # configs/models/replknet_31b.yaml: create_RepLKNet31B
    "replknet_31b": lambda **kw: RepLKNet(**{**dict(kernels=(31, 29, 27, 13), depths=(2, 2, 18, 2),
                                                    channels=(128, 256, 512, 1024), small_kernel=5,
                                                    drop_path_rate=0.3), **kw}),
    # configs/models/slak_tiny.yaml: SLaK_tiny(kernel_size=[51, 49, 47, 13, 5], width_factor=1.3, Decom=True)
    "slak_tiny": lambda **kw: SLaK(**{**dict(kernels=(51, 49, 47, 13), small_kernel=5, width_factor=1.3,
                                             decomposed=True, drop_path_rate=0.1), **kw}),
    # configs/models/slak_tiny_dense.yaml: the same with dense K x K kernels (Decom=False)
    "slak_tiny_dense": lambda **kw: SLaK(**{**dict(kernels=(51, 49, 47, 13), small_kernel=5, width_factor=1.3,
                                                   decomposed=False, drop_path_rate=0.1), **kw}),
}

NAMES = tuple(_BUILDERS)


def build(name: str, **overrides):
    """The model called `name` ("replknet_31b", "slak_tiny", "slak_tiny_dense"), freshly initialised as its
    reference initialises it; `overrides` (num_classes, drop_path_rate, small_kernel_merged, ...) go to the
    constructor."""
    if name not in _BUILDERS:
        raise ValueError(f"build: unknown model '{name}' (known: {', '.join(NAMES)})")
    return _BUILDERS[name](**overrides)
