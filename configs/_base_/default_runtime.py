# mmaction2's default runtime, plus the plugin import that lets mmaction2's own tools/train.py
# and tools/test.py run these configs unchanged, and the plugin's engine parts
# (hyperframes_mm.engine, docs/reliability.md): a runner whose checkpoint loads are checked
# (damaged, code-carrying and NaN files refused by name) and whose --resume survives a kill, and
# which trains several processes on a CPU; checkpoints written atomically, saved before the
# oldest is pruned. No best checkpoint is kept: some families validate on their test split.
default_scope = 'mmaction'
custom_imports = dict(imports=['hyperframes_mm'], allow_failed_imports=False)
runner_type = 'HyperframeRunner'

default_hooks = dict(
    runtime_info=dict(type='RuntimeInfoHook'),
    timer=dict(type='IterTimerHook'),
    logger=dict(type='LoggerHook', interval=20, ignore_last=False),
    param_scheduler=dict(type='ParamSchedulerHook'),
    checkpoint=dict(type='SafeCheckpointHook', interval=1, max_keep_ckpts=3,
                    backend_args=dict(backend='atomic_local')),
    sampler_seed=dict(type='DistSamplerSeedHook'),
    sync_buffers=dict(type='SyncBuffersHook'))

env_cfg = dict(
    cudnn_benchmark=False,
    mp_cfg=dict(mp_start_method='fork', opencv_num_threads=0),
    dist_cfg=dict(backend='nccl'))

log_processor = dict(type='LogProcessor', window_size=20, by_epoch=True)

vis_backends = [dict(type='LocalVisBackend')]
visualizer = dict(type='ActionVisualizer', vis_backends=vis_backends)

log_level = 'INFO'
load_from = None
resume = False
