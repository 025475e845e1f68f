"""An exported (float or int8) ONNX model behind the recognizer interface the plugin's inference
and streaming code call: ``test_step`` on packed samples, giving ``pred_score``.

So that deployment runs what it will ship: :func:`~hyperframes_mm.apis.init_recognizer` given a
``.onnx`` file instead of a checkpoint returns one, and the streaming pipeline, the cascade and
:func:`~hyperframes_mm.apis.predict_scores` take it unchanged. The graph is the one
:func:`~hyperframes_mm.deploy.export.export_onnx` writes: raw pixels in (the normalisation is in
the graph), the test step's scores out.
"""
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

import numpy as np
import torch


class OnnxRecognizer:
    """An onnxruntime session (CPU) that answers ``test_step`` like an mmaction2 recognizer.

    Args:
        path (str | Path): the ``.onnx`` file.
        cfg (Config): the model's config (its ``test_pipeline`` feeds the model).
        threads (int, optional): onnxruntime's intra-op threads. Defaults to its own choice.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the graph's inputs are not those export writes (``imgs``, or one
            ``imgs_<stream>`` per stream).
    """

    def __init__(self, path: Union[str, Path], cfg, threads: Optional[int] = None) -> None:
        import onnxruntime as ort
        if not Path(path).is_file():
            raise FileNotFoundError(f'ONNX file not found: {path}')
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        self.session = ort.InferenceSession(str(path), options,
                                            providers=['CPUExecutionProvider'])
        self.path = Path(path)
        self.cfg = cfg
        self.inputs = self.session.get_inputs()
        names = [meta.name for meta in self.inputs]
        if names == ['imgs']:
            self.streams: Optional[List[str]] = None
        elif names and all(name.startswith('imgs_') for name in names):
            self.streams = [name[len('imgs_'):] for name in names]
        else:
            raise ValueError(f'{path}: inputs {names} are not an exported recognizer\'s '
                             '(imgs, or imgs_<stream> per stream)')

    def eval(self) -> 'OnnxRecognizer':
        return self

    def to(self, device) -> 'OnnxRecognizer':
        if str(device) != 'cpu':
            raise ValueError(f'{self.path}: the ONNX model runs on the CPU (onnxruntime), not '
                             f'{device}')
        return self

    def scores(self, inputs: Sequence[Union[torch.Tensor, Dict[str, torch.Tensor]]]
               ) -> np.ndarray:
        """``[N, num_classes]`` scores of N samples' ``inputs`` (``[K, 3T, H, W]`` each, or one
        per stream)."""
        feeds = {}
        for meta in self.inputs:
            key = meta.name[len('imgs_'):] if self.streams else None
            batch = torch.stack([sample[key] if key else sample for sample in inputs])
            dtype = np.uint8 if meta.type == 'tensor(uint8)' else np.float32
            feeds[meta.name] = batch.cpu().numpy().astype(dtype)
        return self.session.run(['scores'], feeds)[0]

    def test_step(self, data: Dict) -> list:
        """mmaction2's test step contract: ``data_samples`` with ``pred_score`` set."""
        scores = torch.from_numpy(self.scores(data['inputs']))
        samples = data['data_samples']
        for sample, score in zip(samples, scores):
            sample.set_pred_score(score)
        return samples

    def __repr__(self) -> str:
        return f'{self.__class__.__name__}({str(self.path)!r})'
