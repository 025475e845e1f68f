"""The CPU kernels PyTorch runs with, and the named settings of ``scripts/kernel_settings.txt``
that cap them at an older CPU's instruction set: every library picks vectorised kernels for the
CPU it runs on, their results differ in the last bits and training amplifies that, so a trained
outcome is recorded with the kernels that made it."""
import json
import os
from pathlib import Path
from typing import Dict, Optional

REPO = Path(__file__).resolve().parents[2]
#: the named kernel settings (scripts/test.sh --kernels NAME reads the same file)
KERNEL_SETTINGS = REPO / 'scripts' / 'kernel_settings.txt'
#: the environment variables that choose ATen's, oneDNN's, MKL's and OpenBLAS's kernels
KERNEL_VARIABLES = ('ATEN_CPU_CAPABILITY', 'ONEDNN_MAX_CPU_ISA', 'MKL_ENABLE_INSTRUCTIONS',
                    'OPENBLAS_CORETYPE')


def kernel_setting(kernels_json: Optional[Path] = None) -> Dict[str, str]:
    """The kernels PyTorch ran with: ATen's CPU capability and the environment variables that
    cap ATen's, oneDNN's, MKL's and OpenBLAS's instruction sets ('' where unset). Read from
    ``kernels_json`` when the run's maker wrote one (its keys: ``cpu_capability`` and the
    variables), else this process's."""
    if kernels_json is not None and Path(kernels_json).is_file():
        written = json.loads(Path(kernels_json).read_text())
        return {key: str(written.get(key, '')) for key in ('cpu_capability', *KERNEL_VARIABLES)}
    import torch
    return dict(cpu_capability=torch.backends.cpu.get_cpu_capability(),
                **{name: os.environ.get(name, '') for name in KERNEL_VARIABLES})


def named_kernel_settings(path: Path = KERNEL_SETTINGS) -> Dict[str, Dict[str, str]]:
    """``{name: {variable: value}}`` of the settings file: a name, then ``VAR=value`` words."""
    settings = {}
    for line in Path(path).read_text().splitlines():
        words = line.split('#', 1)[0].split()
        if words:
            settings[words[0]] = dict(word.split('=', 1) for word in words[1:])
    return settings


def kernel_label(setting: Dict[str, str]) -> str:
    """``AVX512``; ``AVX2 (avx2)`` for a named setting of scripts/kernel_settings.txt; else the
    capability and the variables set, ``AVX2 (ONEDNN_MAX_CPU_ISA=AVX2)``."""
    chosen = {name: setting[name] for name in KERNEL_VARIABLES if setting.get(name)}
    if not chosen:
        return setting['cpu_capability']
    names = [name for name, values in named_kernel_settings().items() if values == chosen]
    shown = names[0] if names else ', '.join(f'{name}={value}' for name, value in chosen.items())
    return f'{setting["cpu_capability"]} ({shown})'

