"""The synthetic motion benchmark: classes that differ only in motion, written as real videos.

See ``docs/synthetic_benchmark.md`` for the classes, the presets and the flip label map.
"""
from .classes import (CLASS_GROUPS, MOTION_CLASSES, ActorMotion, MotionClass, actor_motion,
                      check_classes, class_groups, flip_label_map)
from .generate import (GENERATOR_VERSION, PRESETS, Preset, clip_rng, interrupted_build,
                       load_meta, make_synthetic_dataset, render_clip, written_after_dataset)
from .render import Scene, render_scene, sample_scene
from .generate import (FAST_SPEED, MOTION_STATES, actor_speed, frame_labels_path,
                       motion_state_labels, write_frame_labels)

__all__ = [
    'CLASS_GROUPS', 'MOTION_CLASSES', 'ActorMotion', 'MotionClass', 'actor_motion',
    'check_classes', 'class_groups', 'flip_label_map', 'GENERATOR_VERSION', 'PRESETS', 'Preset',
    'clip_rng', 'interrupted_build', 'load_meta', 'make_synthetic_dataset', 'render_clip',
    'Scene', 'render_scene', 'sample_scene', 'written_after_dataset'
]
__all__ += ['FAST_SPEED', 'MOTION_STATES', 'actor_speed', 'frame_labels_path',
            'motion_state_labels', 'write_frame_labels']
