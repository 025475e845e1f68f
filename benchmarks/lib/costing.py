"""What a model costs, side by side: GFLOPs and parameters (mmengine's count, multiply-adds as
mmaction2's model zoo) and CPU latency with every model of a table timed in interleaved rounds
(so that a change of load on a shared machine hits every row alike)."""
import os
import platform
from pathlib import Path
from typing import Dict, Tuple


def side_by_side(configs: Dict[str, object], video_size: Tuple[int, int], per_view: bool = False,
                 repeats: int = 20, warmup: int = 3, progress: bool = False) -> Dict[str, Dict]:
    """``{name: dict(gflops, params_m, latency_ms)}`` of each config, on one torch thread.

    Args:
        configs (dict): name -> config (path or ``Config``), in table order.
        video_size (tuple): decoded frame size the test pipeline sees.
        per_view (bool): count GFLOPs and params on one view (the model zoo's convention,
            :func:`benchmarks.lib.zoo.view_options`) instead of one whole test sample. Latency
            is always of one test sample (all its clips, batch 1). Defaults to False.
        repeats (int): timed rounds. Defaults to 20.
        warmup (int): untimed rounds. Defaults to 3.
        progress (bool): show a progress bar while timing. Defaults to False.
    """
    import torch
    from mmengine.config import Config
    from hyperframes_mm.analysis.complexity import compare_latency, model_complexity
    from .zoo import view_options
    torch.set_num_threads(1)
    out = {}
    for name, config in configs.items():
        options = None
        if per_view:
            cfg = config if isinstance(config, Config) else Config.fromfile(str(config))
            options = view_options(cfg)
        count = model_complexity(config, video_size=video_size, cfg_options=options)
        out[name] = dict(gflops=count['flops'] / 1e9, params_m=count['params'] / 1e6)
    latency = compare_latency(configs, repeats=repeats, warmup=warmup, video_size=video_size,
                              progress=progress)
    for name, timing in latency.items():
        out[name]['latency_ms'] = timing['median_ms']
    return out


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` knows."""
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path('/proc/cpuinfo')
    if cpuinfo.is_file():
        names = [line.split(':', 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                 if line.startswith('model name')]
        cpu = names[0] if names else cpu
    return cpu


def load_average() -> float:
    """The 1-minute load average (NaN where the system has none)."""
    return os.getloadavg()[0] if hasattr(os, 'getloadavg') else float('nan')
