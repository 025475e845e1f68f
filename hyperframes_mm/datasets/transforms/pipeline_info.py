"""What a pipeline's steps are, read from their config dicts: the one place the plugin's
inference, analysis and tools look steps up.

* :func:`transform_type`: a step's registry name, scope stripped (``mmaction.Flip`` -> ``Flip``);
* :data:`LOADING_TRANSFORMS`, :data:`SAMPLER_TRANSFORMS`: the steps that open or decode a
  video, and those that choose frame indices;
* :func:`stream_key`: where a stream's hyperframes are in the results and the model's inputs;
* :func:`fuses_streams`: whether a pipeline stacks its streams into one hyperframe;
* :func:`stacked_segments`: how many hyperframes it splits each clip into.
"""
from typing import Dict, Optional, Sequence

#: Pipeline steps that open or decode a video (a window's frames in memory are decoded already).
LOADING_TRANSFORMS = frozenset({
    'DecordInit', 'SafeDecordInit', 'PyAVInit', 'OpenCVInit', 'FrameCacheInit', 'DecordDecode',
    'PyAVDecode', 'OpenCVDecode', 'FrameCacheDecode', 'RawFrameDecode', 'PyAVDecodeMotionVector',
    'ImageDecode'
})
#: Steps that choose frame indices; a test pipeline has exactly one.
SAMPLER_TRANSFORMS = frozenset({
    'HyperframeSampleFrames', 'SampleFrames', 'UniformSample', 'UniformSampleFrames',
    'DenseSampleFrames'
})


def transform_type(transform: Dict) -> str:
    """The registry name in a config dict, without its scope: ``mmaction.Flip`` -> ``Flip``
    (a class given as the type gives its name)."""
    kind = transform.get('type', '')
    if isinstance(kind, type):
        return kind.__name__
    return str(kind).split('.')[-1]


def stream_key(name: Optional[str] = None) -> str:
    """The results / input key of a stream's hyperframes: ``imgs`` for a single-stream sample,
    ``imgs_<name>`` for stream ``name`` (what ``HyperframeStack`` writes,
    ``PackActionInputs(collect_keys=...)`` packs and ``FastSlowRecognizer`` reads)."""
    return 'imgs' if name is None else f'imgs_{name}'


def fuses_streams(pipeline: Sequence[Dict]) -> bool:
    """Whether the pipeline's ``HyperframeStack`` stacks a multi-stream sample's streams into one
    hyperframe (``fuse_streams=True``: early fusion), so that the model reads one input whose T
    is the streams' total."""
    return any(transform_type(step) == 'HyperframeStack' and step.get('fuse_streams', False)
               for step in pipeline)


def stacked_segments(pipeline: Sequence[Dict]) -> int:
    """How many hyperframes the pipeline's ``HyperframeStack`` splits each clip's frames into
    (``segments=S``, for a backbone that shifts features between them): the backbone's T is
    the sampled frames over S. 1 without that option."""
    return next((int(step.get('segments', 1)) for step in pipeline
                 if transform_type(step) == 'HyperframeStack'), 1)
