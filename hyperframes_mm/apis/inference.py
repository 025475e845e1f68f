"""Build a recognizer from a config and run its test pipeline on frames already in memory.

Streaming, export, FLOP counting and the dynamic-frame benchmark all need the same two things:

* :func:`init_recognizer`: the config's model, its checkpoint loaded through mmengine (so the
  plugin's weights-only allow-list applies), in eval mode on CUDA when present, else the CPU;
* :class:`WindowPipeline`: the config's ``test_pipeline`` without its video-opening and decoding
  steps. Its sampler (``HyperframeSampleFrames``, mmaction2's ``SampleFrames``...) is run in test
  mode on a *virtual video* of ``window`` frames, the last frames of a stream, so the frames a
  window uses are chosen by exactly the index arithmetic of offline testing; the remaining
  transforms (``Resize``, ``CenterCrop``, ``HyperframeStack``, ``PackActionInputs``...) are the
  config's own. Given the frames of a whole clip as the window, it reproduces offline testing.
"""
import copy
import itertools
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from mmengine.config import Config
from mmengine.dataset import Compose
from mmengine.registry import init_default_scope
from torch import nn

from ..datasets.transforms.pipeline_info import (LOADING_TRANSFORMS, SAMPLER_TRANSFORMS,
                                                 stream_key, transform_type)
from ..engine.checkpoint import (CheckpointRefusedError, check_input_basis, load_verified,
                                 mismatch_error)
from ..engine.segments_hook import check_stacked_segments

ConfigLike = Union[str, Path, Config]


def default_device() -> str:
    """``'cuda'`` when a GPU is visible, else ``'cpu'``."""
    return 'cuda' if torch.cuda.is_available() else 'cpu'


def load_config(config: ConfigLike, cfg_options: Optional[dict] = None) -> Config:
    """A config object from a path or a config, with ``cfg_options`` merged in (a copy).

    A config names its test pipeline twice, as ``test_pipeline`` (what the plugin's tools read:
    FLOPs, latency, export, streaming) and as the test dataloader's dataset ``pipeline`` (what
    ``tools/test.py`` runs), the second set to the first when the file is read. Where the file
    so links them, an override of one (``--cfg-options
    test_dataloader.dataset.pipeline.1.num_clips=4``) is carried to the other: the tools
    reported the cost of a test sample the test would not make.
    """
    if isinstance(config, (str, Path)):
        if not Path(config).is_file():
            raise FileNotFoundError(f'config file not found: {config}')
        cfg = Config.fromfile(str(config))
    elif isinstance(config, Config):
        cfg = copy.deepcopy(config)
    else:
        raise TypeError(f'config must be a path or an mmengine Config, got {type(config).__name__}')
    if cfg_options:
        loader = _test_dataset(cfg)
        linked = (loader is not None and 'test_pipeline' in cfg
                  and loader['pipeline'] == cfg.test_pipeline)
        before = copy.deepcopy(cfg.get('test_pipeline'))
        cfg.merge_from_dict(cfg_options)
        if linked:
            loader = _test_dataset(cfg)
            if cfg.test_pipeline != before and loader['pipeline'] == before:
                loader['pipeline'] = copy.deepcopy(cfg.test_pipeline)
            elif loader['pipeline'] != before and cfg.test_pipeline == before:
                cfg.test_pipeline = copy.deepcopy(loader['pipeline'])
    return cfg


def _test_dataset(cfg: Config) -> Optional[dict]:
    """The test dataloader's dataset config that holds the pipeline (inside wrappers such as
    ``GuardedDataset(dataset=...)``), None without one."""
    dataset = (cfg.get('test_dataloader') or {}).get('dataset')
    while isinstance(dataset, dict) and 'pipeline' not in dataset:
        dataset = dataset.get('dataset')
    return dataset if isinstance(dataset, dict) else None


def head_classes(cfg) -> Optional[int]:
    """The class count the config's head scores (``model.cls_head.num_classes``, or its
    inner head's), None where it names none."""
    head = ((cfg or {}).get('model') or {}).get('cls_head') or {}
    count = head.get('num_classes', (head.get('head') or {}).get('num_classes'))
    return count if isinstance(count, int) else None


def init_recognizer(config: ConfigLike,
                    checkpoint: Optional[str] = None,
                    device: Optional[str] = None,
                    cfg_options: Optional[dict] = None,
                    *,
                    init_weights: bool = True,
                    allow_onnx: bool = True,
                    threads: Optional[int] = None) -> nn.Module:
    """Build ``config``'s model, load ``checkpoint`` strictly, and put it in eval mode.

    The one place the plugin builds a recognizer from a config (inference, export, FLOP
    counting, the temporal probe, the doctor). The config's ``custom_imports`` are imported
    first, as ``Config.fromfile`` does, so that a config made in code finds its modules too.
    The checkpoint goes through :func:`~hyperframes_mm.engine.load_verified` (checked, then
    weights-only loading with the globals of mmengine checkpoints allowed for that load);
    every weight must match (``strict=True``), so a checkpoint of another
    model fails instead of leaving layers random, and a hyperframe checkpoint whose saved config
    names another input encoding than the model's is refused
    (:func:`~hyperframes_mm.engine.checkpoint.check_input_basis`), as is a test pipeline that
    makes another number of hyperframes a clip than a shifted backbone shifts between
    (:func:`~hyperframes_mm.engine.segments_hook.check_stacked_segments`). Without a
    checkpoint the model is initialised by its ``init_cfg`` (for tests and speed
    measurements).

    Args:
        config (str | Path | Config): the model's config.
        checkpoint (str, optional): a local checkpoint file, or an exported ``.onnx`` file
            (float or int8, ``tools/deployment/``): then an
            :class:`~hyperframes_mm.apis.onnx_recognizer.OnnxRecognizer` that runs it through
            onnxruntime on the CPU, with the same ``test_step`` outputs. Defaults to None.
        device (str, optional): ``'cpu'``, ``'cuda'``, ``'cuda:1'``... Defaults to
            :func:`default_device`.
        cfg_options (dict, optional): overrides merged into the config. Defaults to None.
        init_weights (bool): without a checkpoint, run the model's ``init_weights`` (which
            reads a backbone's ``pretrained`` file); False builds the architecture only and
            reads no file, for inspecting a config whose files may be missing. Defaults to True.
        allow_onnx (bool): accept an ``.onnx`` file as ``checkpoint``. False for the callers
            that need the PyTorch model itself (export, quantisation, re-inflation): given a
            graph they would fail on a missing attribute far from the cause. Defaults to True.
        threads (int, optional): an ``.onnx`` checkpoint's onnxruntime intra-op threads
            (a PyTorch model runs on the process's, ``torch.set_num_threads``). Defaults to
            onnxruntime's own choice.

    Returns:
        nn.Module: the model in eval mode, with the config as ``model.cfg``.

    Raises:
        FileNotFoundError: the config or the checkpoint does not exist.
        ValueError: an ``.onnx`` graph exported from another config (its clips or channels
            are not what the config's test pipeline makes, or it scores another number of
            classes than the head), a file onnxruntime cannot load, or any ``.onnx`` graph
            where ``allow_onnx`` is False.
        CheckpointRefusedError: the checkpoint does not fit the model
            (:class:`~hyperframes_mm.engine.CheckpointMismatchError`, naming the file and the
            keys), is damaged or holds more than weights.
    """
    from mmaction.registry import MODELS
    from mmengine.runner.checkpoint import _load_checkpoint_to_model
    from mmengine.utils import import_modules_from_strings
    cfg = load_config(config, cfg_options)
    if cfg.get('custom_imports'):
        import_modules_from_strings(**cfg.custom_imports)
    init_default_scope(cfg.get('default_scope', 'mmaction'))
    if checkpoint is not None and Path(checkpoint).suffix.lower() == '.onnx':
        if not allow_onnx:
            raise ValueError(f'{checkpoint} is an exported ONNX graph; this needs the PyTorch '
                             'checkpoint (.pth) it was exported from')
        from .onnx_recognizer import OnnxRecognizer
        recognizer = OnnxRecognizer(checkpoint, cfg, threads).to(device or 'cpu')
        try:
            example = example_inputs(cfg, REFERENCE_FRAME_SIZES[0])
        except (KeyError, ValueError):  # no test pipeline to compare the graph with
            return recognizer
        # frames of other heights, widths and shapes (square, portrait, 16:9) tell which of the
        # sample's sizes follow the video's (a keep-ratio resize fixes one side or the other
        # by the frame's shape); made only where the first sample disagrees with the graph
        recognizer.check_inputs(example, (example_inputs(cfg, size)
                                          for size in REFERENCE_FRAME_SIZES[1:]))
        recognizer.check_classes(
            itertools.chain([example], (example_inputs(cfg, size)
                                        for size in REFERENCE_FRAME_SIZES[1:])),
            head_classes(cfg))
        return recognizer
    model = MODELS.build(cfg.model)
    # streaming, export and inference read the test pipeline's clips: what tools/test.py
    # refuses (SegmentsHook) they refuse too
    check_stacked_segments(model, [int(step.get('segments', 1))
                                   for step in cfg.get('test_pipeline') or ()
                                   if transform_type(step) == 'HyperframeStack'],
                           f'{cfg.filename or "the config"}: test_pipeline')
    if checkpoint is not None:
        if not Path(checkpoint).is_file():
            raise FileNotFoundError(f'checkpoint file not found: {checkpoint}')
        loaded = load_verified(str(checkpoint), 'cpu')
        # what tools/test.py refuses (HyperframeRunner) is refused on every other load too
        check_input_basis(model, loaded, str(checkpoint))
        try:
            _load_checkpoint_to_model(model, loaded, strict=True)
        except CheckpointRefusedError:
            raise  # already names the file and says why
        except RuntimeError as error:
            raise mismatch_error(checkpoint, error) from error
    elif init_weights:
        model.init_weights()
    model.cfg = cfg
    return model.to(device or default_device()).eval()


class WindowPipeline:
    """A config's test pipeline applied to frames held in memory (a stream's last frames).

    The pipeline is split at its sampler: steps that open or decode a video
    (:data:`LOADING_TRANSFORMS`) are dropped, the sampler is built in test mode, and every other
    step is kept in order. :meth:`layout` runs the sampler on a virtual video of ``window``
    frames; :meth:`__call__` hands the frames at those indices to the remaining steps, as
    ``DecordDecode`` hands them over offline.

    Args:
        pipeline (Sequence[dict]): the pipeline config (e.g. ``cfg.test_pipeline``).
        sampler_overrides (dict, optional): arguments that replace the sampler's own, e.g.
            ``dict(num_frames=3, interval=4)`` for a re-inflated model. Defaults to None.
    """

    def __init__(self, pipeline: Sequence[dict],
                 sampler_overrides: Optional[dict] = None) -> None:
        from mmaction.registry import TRANSFORMS
        steps = [dict(step) for step in pipeline]
        kinds = [transform_type(step) for step in steps]
        samplers = [index for index, kind in enumerate(kinds) if kind in SAMPLER_TRANSFORMS]
        if len(samplers) != 1:
            raise ValueError(f'WindowPipeline: the test pipeline needs exactly one frame sampler '
                             f'({sorted(SAMPLER_TRANSFORMS)}), found {len(samplers)} in {kinds}')
        position = samplers[0]
        before = [kind for kind in kinds[:position] if kind not in LOADING_TRANSFORMS]
        if before:
            raise ValueError(f'WindowPipeline: steps {before} come before the sampler and do not '
                             'open a video; a stream cannot reproduce them')
        sampler_cfg = dict(steps[position], test_mode=True)
        sampler_cfg.update(sampler_overrides or {})
        self.sampler_cfg = sampler_cfg
        self.sampler = TRANSFORMS.build(sampler_cfg)
        rest = [step for step in steps[position + 1:]
                if transform_type(step) not in LOADING_TRANSFORMS]
        self.transform_cfgs = rest
        self.transforms = Compose(rest)
        decoders = [kind for kind in kinds if kind.endswith('Decode')]
        #: the decoder of offline testing: a stream that decodes with it gets the same pixels.
        self.decoder = 'pyav' if any(kind.startswith('PyAV') for kind in decoders) else 'decord'
        self._layouts: Dict[Tuple[int, Optional[float]], Dict] = {}

    @property
    def num_clips(self) -> int:
        """K, clips per window."""
        return int(getattr(self.sampler, 'num_clips', 1))

    def span(self, fps: Optional[float] = None) -> int:
        """Frames from the first to the last pick of one clip (all streams), at ``fps``.

        Raises:
            ValueError: the sampler spreads its picks over the whole video (``mode='uniform'``,
                ``UniformSample``...), so a window length must be given.
        """
        from ..datasets.transforms.sampling import HyperframeSampleFrames, pick_offsets
        sampler = self.sampler
        if isinstance(sampler, HyperframeSampleFrames) and sampler.mode == 'interval':
            if sampler.time_based and not fps:
                raise ValueError('WindowPipeline: a time-based sampler needs the stream\'s fps')
            rate = fps if sampler.time_based else None
            spans = [int(pick_offsets(num_frames, interval, rate)[-1]) + 1
                     for _, num_frames, interval in sampler.streams if interval is not None]
            if spans:  # a uniform stream beside them spreads over the window
                return max(spans)
        if type(sampler).__name__ == 'SampleFrames':
            return (sampler.clip_len - 1) * sampler.frame_interval + 1
        raise ValueError(f'WindowPipeline: {type(sampler).__name__}({self.sampler_cfg}) spreads '
                         'its picks over the whole video; give the window length in frames')

    def spreads_over_video(self) -> bool:
        """Whether the sampler spreads its picks over the whole video (``mode='uniform'``,
        ``UniformSample``...), so that a window has no length of its own (:meth:`span`)."""
        try:
            self.span(fps=1.0)  # a time-based sampler's span needs some rate
        except ValueError:
            return True
        return False

    def _fixed_span(self, fps: Optional[float]) -> Optional[int]:
        """:meth:`span`, or None for a sampler that spreads its picks over any window."""
        try:
            return self.span(fps)
        except ValueError:
            return None

    def default_window(self, fps: Optional[float] = None) -> int:
        """Frames of a window: K clip spans, so K test clips tile the window."""
        return self.span(fps) * self.num_clips

    def layout(self, window: int, fps: Optional[float] = None) -> Dict:
        """The sampler's output for a virtual video of ``window`` frames (cached).

        Returns:
            dict: ``frame_inds`` (int64, in ``[0, window)``, window-relative) and the layout
            keys the sampler adds (``clip_len``, ``num_clips``, ``frame_interval``,
            ``hyperframe_streams``...).
        """
        key = (int(window), None if fps is None else float(fps))
        if key not in self._layouts:
            if window < 1:
                raise ValueError(f'WindowPipeline: window must be >= 1 frame, got {window}')
            span = self._fixed_span(fps)
            if span is not None and window < span:
                # the sampler would loop its picks over the short window: frames out of time
                # order, scored as confidently as real ones
                raise ValueError(
                    f'WindowPipeline: a window of {window} frames is shorter than one clip of the '
                    f'sampler ({span} frames from its first pick to its last); give a window of '
                    f'at least {span} frames (its default: {self.default_window(fps)})')
            results = self.sampler(dict(total_frames=int(window), start_index=0,
                                        avg_fps=fps, filename='stream window'))
            results.pop('total_frames')
            results.pop('avg_fps')
            results.pop('filename')
            results.pop('start_index')
            results['frame_inds'] = np.asarray(results['frame_inds'], np.int64).reshape(-1)
            self._layouts[key] = results
        return self._layouts[key]

    def frame_indices(self, window: int, fps: Optional[float] = None) -> np.ndarray:
        """Window-relative indices of the frames a window uses, in the sampler's order."""
        return self.layout(window, fps)['frame_inds']

    def __call__(self, frames: Sequence[np.ndarray], window: int, fps: Optional[float] = None,
                 filename: str = 'stream') -> Dict:
        """Run the pipeline on the frames the sampler picked.

        Args:
            frames (Sequence[np.ndarray]): ``H x W x 3`` uint8 RGB frames, one per entry of
                :meth:`frame_indices` (same order), e.g. ``[buffer[i] for i in indices]``.
            window (int): window length the indices were taken for.
            fps (float, optional): the stream's frame rate (time-based samplers need it).
            filename (str): named in the transforms' log lines and errors.

        Returns:
            dict: what the test pipeline's last step returns, e.g. ``PackActionInputs``'
            ``dict(inputs=..., data_samples=...)``.
        """
        layout = self.layout(window, fps)
        if len(frames) != len(layout['frame_inds']):
            raise ValueError(f'WindowPipeline: {len(frames)} frames given for '
                             f'{len(layout["frame_inds"])} picks')
        results = copy.copy(layout)
        results.update(imgs=list(frames), original_shape=frames[0].shape[:2],
                       img_shape=frames[0].shape[:2], total_frames=int(window), start_index=0,
                       avg_fps=fps, filename=filename, modality='RGB')
        return self.transforms(results)

    def __repr__(self) -> str:
        return f'{self.__class__.__name__}(sampler={self.sampler!r}, transforms={self.transforms})'


def predict_scores(model: nn.Module, packed: Sequence[Dict]) -> torch.Tensor:
    """Class scores ``[N, num_classes]`` of packed samples, through the model's ``test_step``.

    ``test_step`` runs the model's data preprocessor (batching, normalisation, device) and its
    predict mode, so the scores equal mmaction2's test loop ``pred_score``.
    """
    if not packed:
        raise ValueError('predict_scores: no samples given')
    data = dict(inputs=[sample['inputs'] for sample in packed],
                data_samples=[sample['data_samples'] for sample in packed])
    with torch.no_grad():
        samples = model.test_step(data)
    return torch.stack([sample.pred_score for sample in samples]).float().cpu()


#: length of the blank video :func:`example_inputs` samples when the picks span the whole video
WHOLE_VIDEO_FRAMES = 64


#: the decoded frame sizes ``(H, W)`` an exported graph's input is compared at
#: (:meth:`~hyperframes_mm.apis.onnx_recognizer.OnnxRecognizer.check_inputs`): the first is
#: the export tool's default; a dimension of the sample that differs between them follows the
#: video and is not compared
REFERENCE_FRAME_SIZES = ((256, 340), (300, 300), (340, 256), (180, 320))


def example_inputs(config: ConfigLike, video_size: Tuple[int, int] = (256, 340),
                   window: Optional[int] = None, fps: float = 30.0,
                   pipeline_key: str = 'test_pipeline') -> Union[torch.Tensor,
                                                                 Dict[str, torch.Tensor]]:
    """One sample's model input as the config's test pipeline makes it, from blank frames.

    Args:
        config (str | Path | Config): the config.
        video_size (tuple[int, int]): decoded frame size ``(H, W)``. Defaults to (256, 340).
        window (int, optional): frames of the virtual video. Defaults to the pipeline's own
            window, or :data:`WHOLE_VIDEO_FRAMES` for a sampler that spreads its picks over
            the whole video (the input's shape does not depend on the video's length).
        fps (float): frame rate for time-based samplers. Defaults to 30.
        pipeline_key (str): the config's pipeline. Defaults to ``'test_pipeline'``.

    Returns:
        Tensor | dict[str, Tensor]: ``[1, K, 3T, H, W]`` uint8 (or one per stream).
    """
    cfg = load_config(config)
    if pipeline_key not in cfg:
        raise KeyError(f'{getattr(cfg, "filename", "config")} has no {pipeline_key}')
    init_default_scope(cfg.get('default_scope', 'mmaction'))
    pipeline = WindowPipeline(cfg[pipeline_key])
    if window is None:
        try:
            window = pipeline.default_window(fps)
        except ValueError:  # uniform picks: any length gives the same shapes
            window = WHOLE_VIDEO_FRAMES
    indices = pipeline.frame_indices(window, fps)
    blank = np.zeros(tuple(video_size) + (3, ), np.uint8)
    inputs = pipeline([blank] * len(indices), window, fps)['inputs']
    if isinstance(inputs, dict):
        return {key: value[None] for key, value in inputs.items()}
    return inputs[None]


def stream_keys(model: nn.Module) -> List[str]:
    """Input names of a model: ``['imgs_fast', 'imgs_slow']`` for a multi-stream recognizer,
    ``['imgs']`` otherwise."""
    streams = getattr(model, 'streams', None)
    return [stream_key(name) for name in streams] if streams else [stream_key()]
