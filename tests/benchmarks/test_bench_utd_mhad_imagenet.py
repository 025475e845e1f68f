"""benchmarks/bench_utd_mhad_imagenet.py: each ablation row changes what it says and nothing
else; one command selects one run; learning curves are read against the control; targets and
claims are computed from the numbers given; the record alone rewrites the tables."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mmengine.config import Config

from benchmarks import bench_utd_mhad_imagenet as bench
from benchmarks.lib import rows as lib
from benchmarks.lib import runner
from benchmarks.lib.edits import epochs, input_size, lr_scale, stop_after, train_augment
from .config_diff import differing_paths, flat

ROWS = {row.name: row for row in bench.ROWS}
REPO = Path(__file__).resolve().parents[2]
LOADERS = ('train_dataloader', 'val_dataloader', 'test_dataloader')
#: what an input-size edit changes: the crop of training, the resize of the test views
SIZE_CHANGED = {'input_size', 'train_dataloader.dataset.pipeline[3].size'} | {
    f'{loader}.dataset.pipeline[3].scale[{side}]' for loader in LOADERS[1:] for side in (0, 1)}


@pytest.fixture(scope='module')
def written(tmp_path_factory):
    """The recipe's and every ablation row's seed-0 config, for a fake data root."""
    root = tmp_path_factory.mktemp('bench_utd_mhad_imagenet')
    args = bench.parse_args(['--data', str(root / 'data'), '--work-dir', str(root / 'work'),
                             '--record', str(root / 'record.json')])
    configs = {}
    for row in [ROWS[bench.RECIPE_ROW], ROWS[bench.TSM_ROW], ROWS[bench.T8_ROW],
                ROWS['hyperframe T=8, mixup'], ROWS['hyperframe T=8, mixup + cutmix'],
                ROWS[bench.EFF_T8_ROW], *bench.ABLATION_ROWS]:
        folder = root / str(len(configs))
        folder.mkdir()
        configs[row.name] = Config.fromfile(str(bench.BENCH.run_config(row, 0, args, folder)))
    return root / 'data', args, configs


def _changed(configs, name, base=bench.RECIPE_ROW):
    """What a row's config changes in its base's, but the pipeline variables (which follow the
    dataloaders')."""
    return {path for path in differing_paths(flat(configs[base]), flat(configs[name]))
            if not path.startswith(('train_pipeline', 'val_pipeline', 'test_pipeline'))}


@pytest.mark.parametrize('name, changed', [
    ('conv1 center', {'model.backbone.inflate_init'}),
    (bench.RANDOM_ROW, {'model.backbone.inflate_init'}),
    ('lr 0.5x', {'optim_wrapper.optimizer.lr'}),
    ('lr 2x', {'optim_wrapper.optimizer.lr'}),
    ('lr 4x', {'optim_wrapper.optimizer.lr'}),
    ('lr 0.5x, 5 warm-up epochs', {'optim_wrapper.optimizer.lr', 'param_scheduler[0].end',
                                   'param_scheduler[1].begin', 'param_scheduler[1].T_max'}),
    ('lr 1x, no warm-up', {'param_scheduler'}),
    ('extra BN', {'model.backbone.extra_bn'}),
    ('norm_eval', {'model.backbone.norm_eval'}),
    ('partial BN', {'model.backbone.partial_bn'}),
    ('input 160', SIZE_CHANGED),
    ('calibrated norms', {'model.backbone.pretrained'}),
])
def test_ablation_rows_change_only_what_they_say(written, name, changed):
    assert _changed(written[2], name) == changed


def test_the_second_networks_lr_rows_change_only_its_gain_rows_lr(written, tmp_path):
    configs = written[2]
    lr = configs[bench.EFF_GAIN_ROW].optim_wrapper.optimizer.lr
    assert [configs[name].optim_wrapper.optimizer.lr for name in bench.EFF_LR_ROWS] == [
        lr * 0.5, lr * 2.0, lr * 4.0, lr * 8.0]
    for name in bench.EFF_LR_ROWS:
        assert _changed(configs, name, bench.EFF_GAIN_ROW) == {'optim_wrapper.optimizer.lr'}
        assert bench.base_row(ROWS[name]) == bench.EFF_GAIN_ROW
    # the chosen rate's config file (validated as the gain row with the lr edit, then given a
    # file of its own) trains what that edit trained: the same runs, by key
    chosen = f'{bench.EFF_GAIN_ROW}, lr {bench.EFF_LR_CHOSEN:g}x'
    assert (ROWS[chosen].config, ROWS[chosen].edits) == (bench.EFF_LR_CONFIG, ())
    edit = ROWS[bench.EFF_GAIN_ROW]._replace(edits=(lr_scale(bench.EFF_LR_CHOSEN), ))
    edited = Config.fromfile(str(bench.BENCH.run_config(edit, 0, written[1], tmp_path))).to_dict()
    own = configs[chosen].to_dict()
    assert all(runner.run_identity(own, key) == runner.run_identity(edited, key)
               for key in runner.RUN_KEYS)


def test_the_second_networks_drop_path_row_sets_only_the_wrapped_networks_rate(written):
    configs = written[2]
    row = bench.EFF_DROP_PATH_ROW
    assert _changed(configs, row, bench.EFF_LR_ROW_CHOSEN) == {
        'model.backbone.backbone.drop_path_rate'}
    assert configs[row].model.backbone.backbone == dict(type='timm.tf_efficientnet_lite0',
                                                        drop_path_rate=0.2)
    assert bench.base_row(ROWS[row]) == bench.EFF_LR_ROW_CHOSEN
    # one of the T=5 rows the second network's targets choose among
    assert bench.EFF_T5_ROWS[row] == 'at its input scale, lr 4x, drop path 0.2'


def test_the_second_networks_t5_pair_is_its_chosen_t5_row_over_two_shifted_segments(written):
    """EfficientNet-Lite0's shifted T=8 pair on T=5 hyperframes is the chosen-rate T=5 row's
    network over two segments (TSMHead, 2 test clips) on 10 picks: nothing else of the T=8 pair
    stays."""
    configs = written[2]
    pair, t5 = configs[bench.EFF_SHIFT5_ROW], configs[bench.EFF_LR_ROW_CHOSEN]
    assert pair.model.to_dict() == dict(
        t5.model.to_dict(), backbone=dict(t5.model.backbone.to_dict(), num_segments=2),
        cls_head=dict(t5.model.cls_head.to_dict(), type='TSMHead', num_segments=2,
                      is_shift=True))
    assert (pair.optim_wrapper, pair.param_scheduler) == (t5.optim_wrapper, t5.param_scheduler)
    for loader, clips in (('train_dataloader', None), ('val_dataloader', 1),
                          ('test_dataloader', 2)):
        mine, theirs = pair[loader].dataset.pipeline, t5[loader].dataset.pipeline
        views = {key: value for key, value in theirs[1].items() if key != 'num_clips'}
        assert mine[1] == dict(views, num_frames=10, **({} if clips is None else
                                                         dict(num_clips=clips)))
        assert mine[-2]['segments'] == 2
    assert bench.base_row(ROWS[bench.EFF_SHIFT5_ROW]) == bench.EFF_LR_ROW_CHOSEN


def test_the_second_networks_t8_takes_the_gain_and_rate_its_t5_chose(written, tmp_path):
    configs = written[2]
    row, chosen = bench.EFF_T8_CHOSEN_ROW, configs[bench.EFF_LR_ROW_CHOSEN]
    # (and the two stds the gain config computes it from, variables no run reads)
    assert _changed(configs, row, bench.EFF_T8_ROW) == {
        'model.backbone.diff_gain', 'optim_wrapper.optimizer.lr', 'imagenet_std', 'own_std'}
    assert configs[row].model.backbone.diff_gain == chosen.model.backbone.diff_gain
    assert configs[row].optim_wrapper.optimizer.lr == chosen.optim_wrapper.optimizer.lr
    assert configs[row].model.backbone.diff_gain != (
        configs[bench.EFF_T8_ROW].model.backbone.diff_gain)
    assert configs[row].model.backbone.num_frames == 8
    assert bench.base_row(ROWS[row]) == bench.EFF_T8_ROW
    # its config file trains what the folds trained: the T=8 row with the chosen T=5 row's gain
    # and rate as edits, the same runs by key
    assert (ROWS[row].config, ROWS[row].edits) == (bench.EFF_T8_CHOSEN, ())

    def gain(cfg):
        cfg.model.backbone.diff_gain = Config.fromfile(str(bench.EFF_GAIN)).model.backbone.diff_gain

    edit = ROWS[bench.EFF_T8_ROW]._replace(edits=(gain, lr_scale(bench.EFF_LR_CHOSEN)))
    edited = Config.fromfile(str(bench.BENCH.run_config(edit, 0, written[1], tmp_path))).to_dict()
    own = configs[row].to_dict()
    assert all(runner.run_identity(own, key) == runner.run_identity(edited, key)
               for key in runner.RUN_KEYS)
    # and that row at 128 pixels
    assert _changed(configs, bench.EFF_T8_128_ROW, row) == SIZE_CHANGED
    assert configs[bench.EFF_T8_128_ROW].input_size == 128
    assert bench.base_row(ROWS[bench.EFF_T8_128_ROW]) == row


def test_calibrated_norms_read_the_file_of_the_runs_own_training_list(written, monkeypatch):
    assert written[2]['calibrated norms'].model.backbone.pretrained == (
        'checkpoints/mobilenet_v2_utd_mhad_calibrated_cross_subject_train.pth')
    # a validation fold's lists come first, so its norms are the ones measured without the
    # held-out subject
    (_, _), fold = bench.validation_fold(7)
    cfg = Config.fromfile(str(bench.RECIPE))
    for edit in (fold, bench.calibrated_norms):
        edit(cfg)
    assert cfg.model.backbone.pretrained == (
        'checkpoints/mobilenet_v2_utd_mhad_calibrated_s7_train.pth')


def test_the_t8_variants_change_only_their_blending_test_clips_or_size(written):
    configs = written[2]
    clips = f'hyperframe T=8, {bench.T8_TEST_CLIPS} test clips'
    assert _changed(configs, clips, bench.T8_ROW) == {
        'test_dataloader.dataset.pipeline[1].num_clips'}
    assert configs[clips].test_dataloader.dataset.pipeline[1]['num_clips'] == 6
    assert _changed(configs, 'hyperframe T=8, input 160', bench.T8_ROW) == SIZE_CHANGED
    assert configs['hyperframe T=8, input 160'].model.backbone.num_frames == 8
    assert bench.base_row(ROWS[clips]) == bench.T8_ROW
    assert {bench.base_row(row) for row in bench.ABLATION_ROWS} == {
        bench.RECIPE_ROW, bench.T8_ROW, bench.SHIFT_ROW, bench.SHIFT3_ROW, bench.SHIFT_128_ROW,
        bench.TSM_ROW, bench.SCRATCH_ROW, bench.EFF_T5_ROW, bench.EFF_GAIN_ROW,
        bench.EFF_LR_ROW_CHOSEN, bench.EFF_T8_ROW, bench.EFF_T8_CHOSEN_ROW, bench.T8_128_ROW}
    blended = {'blending', 'model.data_preprocessor.blending'}
    assert _changed(configs, 'hyperframe T=8, mixup', bench.T8_ROW) == blended
    assert configs['hyperframe T=8, mixup'].model.data_preprocessor.blending == dict(
        type='MixupBlending', alpha=0.2, num_classes=27)
    assert _changed(configs, 'hyperframe T=8, mixup + cutmix', bench.T8_ROW) == blended
    assert [(augment['type'], augment['alpha'], augment['num_classes']) for augment in
            configs['hyperframe T=8, mixup + cutmix'].model.data_preprocessor.blending.augments
            ] == [('MixupBlending', 0.8, 27), ('CutmixBlending', 1.0, 27)]


def test_the_t8_rows_of_the_shifted_pairs_changes_change_only_crops_or_size(written,
                                                                          tmp_path):
    configs = written[2]
    # the config file's own variables besides the one training step it changes
    assert _changed(configs, bench.T8_TIGHT_CROP_ROW, bench.T8_ROW) == {
        'train_dataloader.dataset.pipeline[3].area_range[0]', 'area_range',
        'pipeline_parts[0][2][1].area_range[0]'}
    assert configs[bench.T8_TIGHT_CROP_ROW].train_dataloader.dataset.pipeline[3].area_range == (
        0.8, 1.0)
    sized = configs[bench.T8_128_ROW]
    assert sized.model.backbone.num_frames == 8
    assert sized.train_dataloader.dataset.pipeline[3].size == 128
    assert [sized[loader].dataset.pipeline[3].scale for loader in LOADERS[1:]] == [(128, 128)] * 2
    assert _changed(configs, bench.T8_128_ROW, bench.T8_ROW) >= SIZE_CHANGED
    # their config files (validated as the T=8 row with an edit, then given files of their own
    # as the chosen rows) train what those edits trained: the same runs, by key
    data, args, _ = written
    for name, base, change in (
            (bench.T8_128_ROW, bench.T8_ROW, input_size(128)),
            (bench.T8_TIGHT_CROP_ROW, bench.T8_ROW,
             train_augment(area_range=bench.SHIFT_TIGHT_CROP_AREA)),
            (bench.T8_128_LONG_ROW, bench.T8_128_ROW, epochs(bench.T8_128_LONG_EPOCHS))):
        edit = ROWS[base]._replace(edits=(change, ))
        edited = Config.fromfile(str(bench.BENCH.run_config(edit, 0, args, tmp_path))).to_dict()
        assert all(runner.run_identity(configs[name].to_dict(), key) ==
                   runner.run_identity(edited, key) for key in runner.RUN_KEYS), name


def test_the_rows_that_lift_t8_at_128_change_only_test_clips_size_or_schedule(written):
    """Each candidate within half of TSM's latency is read against its base: the 128 and crop
    rows against T=8 (they have files of their own, so they had been read against
    themselves: "+0.0"), the clips and schedule rows against T=8 at 128."""
    configs = written[2]
    assert bench.base_row(ROWS[bench.T8_128_ROW]) == bench.T8_ROW
    assert bench.base_row(ROWS[bench.T8_TIGHT_CROP_ROW]) == bench.T8_ROW
    clips = bench.T8_128_MORE_CLIPS_ROW
    assert _changed(configs, clips, bench.T8_128_ROW) == {
        'test_dataloader.dataset.pipeline[1].num_clips'}
    assert configs[clips].test_dataloader.dataset.pipeline[1]['num_clips'] == 4
    assert ROWS[clips].tested_from == ROWS[bench.T8_128_ROW]
    assert _changed(configs, bench.T8_144_ROW, bench.T8_ROW) == SIZE_CHANGED
    assert configs[bench.T8_144_ROW].train_dataloader.dataset.pipeline[3].size == 144
    long = configs[bench.T8_128_LONG_ROW]
    assert long.train_cfg.max_epochs == 45
    assert [(step['type'], step['begin'], step['end']) for step in long.param_scheduler] == [
        (step['type'], round(step['begin'] * 1.5), round(step['end'] * 1.5))
        for step in configs[bench.T8_128_ROW].param_scheduler]
    assert {base: bench.base_row(ROWS[row]) for base, row in (
        ('clips', clips), ('long', bench.T8_128_LONG_ROW), ('144', bench.T8_144_ROW))} == {
            'clips': bench.T8_128_ROW, 'long': bench.T8_128_ROW, '144': bench.T8_ROW}


def test_the_t8_shifted_row_is_the_shifted_row_with_t8_hyperframes(written):
    configs = written[2]
    sampled = {f'{loader}.dataset.pipeline[1].num_frames' for loader in LOADERS}
    assert _changed(configs, bench.SHIFT8_ROW, bench.SHIFT_ROW) == {
        'model.backbone.num_frames', 'num_frames', 'hyperframe_sampler.num_frames', *sampled}
    shifted = configs[bench.SHIFT8_ROW]
    assert shifted.model.backbone.num_frames == 8
    assert [shifted[loader].dataset.pipeline[1]['num_frames'] for loader in LOADERS] == [16] * 3
    assert bench.base_row(ROWS[bench.SHIFT8_ROW]) == bench.SHIFT_ROW


def test_the_three_hyperframe_row_is_the_shifted_row_with_a_third_hyperframe(written):
    configs = written[2]
    assert _changed(configs, bench.SHIFT3_ROW, bench.SHIFT_ROW) == {
        'segments', 'test_clips', 'model.backbone.num_segments', 'model.cls_head.num_segments',
        'hyperframe_sampler.num_frames', 'test_dataloader.dataset.pipeline[1].num_clips',
        'segment_format[0].segments', 'pipeline_parts[2][1].num_clips',
        *(f'{loader}.dataset.pipeline[{step}].{key}' for loader in LOADERS
          for step, key in ((1, 'num_frames'), (4, 'segments')))}
    shifted = configs[bench.SHIFT3_ROW]
    assert (shifted.model.backbone.num_segments, shifted.model.cls_head.num_segments) == (3, 3)
    assert [shifted[loader].dataset.pipeline[1]['num_frames'] for loader in LOADERS] == [15] * 3
    assert [shifted[loader].dataset.pipeline[4] for loader in LOADERS] == [
        dict(type='HyperframeStack', segments=3)] * 3
    assert shifted.test_dataloader.dataset.pipeline[1]['num_clips'] == 1
    assert _changed(configs, bench.SHIFT3_MORE_CLIPS_ROW, bench.SHIFT3_ROW) == {
        'test_dataloader.dataset.pipeline[1].num_clips'}
    assert configs[bench.SHIFT3_MORE_CLIPS_ROW].test_dataloader.dataset.pipeline[1][
        'num_clips'] == 2
    assert ROWS[bench.SHIFT3_MORE_CLIPS_ROW].tested_from.name == bench.SHIFT3_ROW
    assert bench.base_row(ROWS[bench.SHIFT3_ROW]) == bench.SHIFT_ROW


def test_the_shifted_rows_variants_change_only_their_labels_crops_grey_shift_or_size(
        written, tmp_path):
    configs = written[2]
    assert _changed(configs, bench.SHIFT_SMOOTH_ROW, bench.SHIFT_ROW) == {
        'model.cls_head.label_smooth_eps'}
    assert configs[bench.SHIFT_SMOOTH_ROW].model.cls_head.label_smooth_eps == 0.1
    sized = configs[bench.SHIFT_128_ROW]
    assert sized.train_dataloader.dataset.pipeline[3].size == 128
    assert [sized[loader].dataset.pipeline[3].scale for loader in LOADERS[1:]] == [(128, 128)] * 2
    # its config file (validated as the shifted row with the input-size edit, then given a file
    # of its own as the chosen row) trains what that edit trained: the same runs, by key
    data, args, _ = written
    edit = ROWS[bench.SHIFT_ROW]._replace(edits=(input_size(128), ))
    edited = Config.fromfile(str(bench.BENCH.run_config(edit, 0, args, tmp_path))).to_dict()
    own = sized.to_dict()
    assert _changed(configs, bench.SHIFT_128_ROW, bench.SHIFT_ROW) >= SIZE_CHANGED
    assert all(runner.run_identity(own, key) == runner.run_identity(edited, key)
               for key in runner.RUN_KEYS)
    assert _changed(configs, bench.SHIFT_CROP_ROW, bench.SHIFT_ROW) == {
        'train_dataloader.dataset.pipeline[3].area_range[0]'}
    assert configs[bench.SHIFT_CROP_ROW].train_dataloader.dataset.pipeline[3].area_range == (
        0.3, 1.0)
    assert configs[bench.SHIFT_ROW].train_dataloader.dataset.pipeline[3].area_range == (0.6, 1.0)
    assert _changed(configs, bench.SHIFT_DIV_ROW, bench.SHIFT_ROW) == {
        'model.backbone.shift_div'}
    assert configs[bench.SHIFT_DIV_ROW].model.backbone.shift_div == 4
    # the chosen crop row's config file (validated as the shifted row with the crop edit) trains
    # what that edit trained, by key, and changes only the training crops
    assert _changed(configs, bench.SHIFT_TIGHT_CROP_ROW, bench.SHIFT_ROW) == {
        'area_range', 'pipeline_parts[0][2][1].area_range[0]',
        'train_dataloader.dataset.pipeline[3].area_range[0]'}
    assert configs[bench.SHIFT_TIGHT_CROP_ROW].train_dataloader.dataset.pipeline[3].area_range \
        == (0.8, 1.0)
    edit = ROWS[bench.SHIFT_ROW]._replace(edits=(train_augment(area_range=(0.8, 1.0)), ))
    edited = Config.fromfile(str(bench.BENCH.run_config(edit, 0, args, tmp_path))).to_dict()
    own = configs[bench.SHIFT_TIGHT_CROP_ROW].to_dict()
    assert all(runner.run_identity(own, key) == runner.run_identity(edited, key)
               for key in runner.RUN_KEYS)
    # the two together: the 128 row's file with the crop edit, its views unchanged
    assert _changed(configs, bench.SHIFT_128_TIGHT_CROP_ROW, bench.SHIFT_128_ROW) == {
        'train_dataloader.dataset.pipeline[3].area_range[0]'}
    both = configs[bench.SHIFT_128_TIGHT_CROP_ROW].train_dataloader.dataset.pipeline[3]
    assert (both.size, both.area_range) == (128, (0.8, 1.0))
    assert bench.base_row(ROWS[bench.SHIFT_128_TIGHT_CROP_ROW]) == bench.SHIFT_128_ROW
    # the grey-level jitter is drawn in training only: the views it is scored on are the row's
    assert _changed(configs, bench.SHIFT_GREY_ROW, bench.SHIFT_ROW) == {
        'train_dataloader.dataset.pipeline[3].brightness',
        'train_dataloader.dataset.pipeline[3].contrast'}
    grey = configs[bench.SHIFT_GREY_ROW].train_dataloader.dataset.pipeline[3]
    assert grey.type == 'ConsistentClipAugment'
    assert {op: grey.get(op, 0.0) for op in ('brightness', 'contrast', 'saturation', 'hue')} == \
        dict(brightness=0.2, contrast=0.2, saturation=0.0, hue=0.0)
    assert {bench.base_row(ROWS[name]) for name in (
        bench.SHIFT_SMOOTH_ROW, bench.SHIFT_128_ROW, bench.SHIFT_CROP_ROW, bench.SHIFT_DIV_ROW,
        bench.SHIFT_TIGHT_CROP_ROW, bench.SHIFT_GREY_ROW)} == {bench.SHIFT_ROW}


def test_a_row_that_changes_only_training_takes_the_recorded_cost_of_its_test_model(
        written, monkeypatch):
    """The chosen crop row (a config of its own) and the grey-jitter edit are the shifted row's
    graph at test: a report takes that row's recorded latency rather than timing every row again
    (where noise could put one graph on both sides of a latency budget). Label smoothing edits
    the head's config, and the 128 row its test views: neither shares the shifted row's cost."""
    _, args, _ = written
    shifted, sized = ROWS[bench.SHIFT_ROW], ROWS[bench.SHIFT_128_ROW]
    costs = {shifted.name: dict(gflops=0.19, params_m=2.26, latency_ms=22.0),
             sized.name: dict(gflops=0.23, params_m=2.26, latency_ms=25.0)}
    missing = [ROWS[name] for name in (bench.SHIFT_TIGHT_CROP_ROW, bench.SHIFT_GREY_ROW,
                                       bench.SHIFT_SMOOTH_ROW)]
    assert bench.BENCH.shared_costs(missing, [shifted, sized], costs, args) == {
        bench.SHIFT_TIGHT_CROP_ROW: costs[shifted.name],
        bench.SHIFT_GREY_ROW: costs[shifted.name]}
    assert bench.BENCH.shared_costs(missing, [], costs, args) == {}
    # a report of a record without the crop row's cost takes the shifted row's and times nothing
    record = Path(args.record).with_name('shared_costs.json')
    record.write_text(json.dumps(dict(costs=costs)))
    report = bench.parse_args(['--report-only', '--data', args.data, '--record', str(record)])

    def timed(rows, _args):
        raise AssertionError(f'timed {[row.name for row in rows]}')
    monkeypatch.setattr(bench.BENCH, 'cost_of', timed)
    rows = [shifted, sized, ROWS[bench.SHIFT_TIGHT_CROP_ROW]]
    assert bench.BENCH.costs(rows, report) == dict(
        costs, **{bench.SHIFT_TIGHT_CROP_ROW: costs[shifted.name]})
    # one it cannot share has every row timed again, side by side
    with pytest.raises(AssertionError, match='timed'):
        bench.BENCH.costs(rows + [ROWS[bench.SHIFT_SMOOTH_ROW]], report)


def test_the_sgd_controls_take_the_imagenet_rows_optimiser(written):
    configs = written[2]
    recipe = configs[bench.RECIPE_ROW]
    sgd30, sgd60, fast = (configs[name] for name in bench.SCRATCH_SGD_ROWS)
    assert sgd30.optim_wrapper == recipe.optim_wrapper
    assert (sgd30.param_scheduler, sgd30.train_cfg) == (recipe.param_scheduler,
                                                        recipe.train_cfg)
    assert sgd60.optim_wrapper == recipe.optim_wrapper
    assert sgd60.train_cfg.max_epochs == 60
    assert [(step['begin'], step['end']) for step in sgd60.param_scheduler] == [(0, 6), (6, 60)]
    assert fast.optim_wrapper.optimizer.lr == 4 * recipe.optim_wrapper.optimizer.lr
    for control in (sgd30, sgd60, fast):  # random weights: the control's model, not ImageNet's
        assert control.model.backbone.pretrained is None


def test_the_schedule_and_size_edits_set_exact_values(written):
    _, _, configs = written
    recipe = configs[bench.RECIPE_ROW]
    assert recipe.optim_wrapper.optimizer.lr == pytest.approx(0.0025)
    assert configs['lr 0.5x'].optim_wrapper.optimizer.lr == pytest.approx(0.00125)
    linear, cosine = configs['lr 0.5x, 5 warm-up epochs'].param_scheduler
    assert (linear['end'], cosine['begin'], cosine['T_max'], cosine['end']) == (5, 5, 25, 30)
    (cosine, ) = configs['lr 1x, no warm-up'].param_scheduler
    assert (cosine['type'], cosine['begin'], cosine['T_max']) == ('CosineAnnealingLR', 0, 30)
    tsm, tsm160 = configs[bench.TSM_ROW], configs['TSM-MobileNetV2-5, input 160']
    for loader in LOADERS:
        sizes = [step.get('size', step.get('scale')) for step in tsm160[loader].dataset.pipeline
                 if step['type'] in ('ConsistentClipAugment', 'Resize')]
        assert sizes == ([160] if loader == 'train_dataloader' else [(160, 160)])
    assert _changed(configs, 'TSM-MobileNetV2-5, input 160', bench.TSM_ROW) == SIZE_CHANGED
    assert tsm.input_size == 112


def test_every_run_logs_each_iteration_and_validates_cheaply(written):
    data, _, configs = written
    for name, cfg in configs.items():
        assert (cfg.default_hooks.logger.interval, cfg.randomness) == (1, dict(seed=0)), name
        assert cfg.train_cfg.val_interval == 2, name
        sampler = lambda loader: cfg[loader].dataset.pipeline[1]  # noqa: E731
        # a shifted row's clip costs two passes (three: one clip), so it tests 2 clips (its
        # config says why)
        test_clips = {bench.SHIFT3_ROW: 1, bench.SHIFT3_MORE_CLIPS_ROW: 2,
                      bench.SHIFT_MORE_CLIPS_ROW: bench.SHIFT_MORE_CLIPS,
                      bench.SHIFT_ONE_CLIP_ROW: 1,
                      bench.EFF_T8_MORE_CLIPS_ROW: bench.EFF_T8_MORE_CLIPS,
                      bench.T8_128_MORE_CLIPS_ROW: bench.T8_128_MORE_CLIPS}.get(
                          name, 2 if 'two T=' in name
                          else bench.T8_TEST_CLIPS if 'test clips' in name else 3)
        assert (sampler('val_dataloader')['num_clips'],
                sampler('test_dataloader')['num_clips']) == (1, test_clips), name
        for loader in LOADERS:
            assert cfg[loader].dataset.data_prefix == dict(video=str(data.resolve())), name


def test_one_command_selects_one_run():
    assert [row.name for row in lib.selected(bench.ROWS, ['hyperframe T=5'])] == [
        bench.RECIPE_ROW]
    assert [row.name for row in lib.selected(bench.ROWS, ['from scratch'])] == [
        bench.SCRATCH_ROW, *bench.SCRATCH_SGD_ROWS]
    assert [row.name for row in lib.selected(bench.ROWS, [bench.SCRATCH_ROW])] == [
        bench.SCRATCH_ROW]
    assert [row.name for row in lib.selected(bench.ROWS, ['lr'])] == [
        'lr 0.5x', 'lr 0.5x, 5 warm-up epochs', 'lr 1x, no warm-up', 'lr 2x', 'lr 4x',
        f'{bench.EFF_GAIN_ROW}, lr 0.5x', f'{bench.EFF_GAIN_ROW}, lr 2x',
        f'{bench.EFF_GAIN_ROW}, lr 4x', f'{bench.EFF_GAIN_ROW}, lr 8x',
        bench.EFF_DROP_PATH_ROW, bench.EFF_TIGHT_CROP_ROW, bench.EFF_T8_CHOSEN_ROW,
        bench.EFF_T8_MORE_CLIPS_ROW, bench.EFF_T8_128_ROW,
        'from scratch, SGD 60e, lr 4x']
    assert lib.selected(bench.ROWS, None) == bench.ROWS


def test_a_smoke_run_trains_the_first_epochs_in_a_folder_of_its_own(tmp_path, monkeypatch):
    data = tmp_path / 'data'
    data.mkdir()
    (data / 'convert_meta.json').write_text('{}')
    trained = []
    monkeypatch.setattr(bench.BENCH, 'train', lambda jobs, args: trained.append((jobs, args)))
    bench.main(['--data', str(data), '--work-dir', str(tmp_path / 'work'), '--rows',
                'hyperframe T=5', '--seeds', '0', '--max-epochs', '1', '--record',
                str(tmp_path / 'record.json')])
    ((jobs, args), ) = trained
    ((row, seed), ) = jobs
    assert (row.name, seed, args.work_dir) == (bench.RECIPE_ROW, 0,
                                               str(tmp_path / 'work' / 'smoke-1e'))
    cfg = Config.fromfile(str(bench.BENCH.run_config(row, seed, args, tmp_path)))
    assert (cfg.train_cfg.max_epochs, cfg.default_hooks.checkpoint.interval) == (1, 1)
    assert not (tmp_path / 'record.json').exists()


def test_weight_files_are_the_local_files_a_config_starts_from():
    cfg = Config(dict(load_from='work/epoch_3.pth', model=dict(
        backbone=dict(pretrained='a.pth', streams=[dict(pretrained='torchvision://resnet18'),
                                                   dict(pretrained=True)]),
        neck=dict(type='timm.x', pretrained=True, pretrained_cfg_overlay=dict(file='b.pth')),
        cls_head=dict(init_cfg=[dict(type='Pretrained', checkpoint='c.pth'),
                                dict(type='Normal', checkpoint='not a file to load')]))))
    assert lib.weight_files(cfg) == ['a.pth', 'b.pth', 'c.pth', 'work/epoch_3.pth']
    assert lib.weight_files(Config(dict(model=dict(backbone=dict(pretrained=None))))) == []


def test_a_missing_weight_file_stops_the_runs_before_any_trains(tmp_path, monkeypatch):
    """A fold's calibrated file is made per training list: without it nothing trains, and the
    message names the run and the file (not a failure after the runs queued first). Relative
    paths are read from the repository, where the runs start, wherever the command is run."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv('HF_IMAGENET_MOBILENET_V2', str(tmp_path / 'imagenet.pth'))
    (tmp_path / 'imagenet.pth').write_bytes(b'')
    calibrated = tmp_path / 'calibrated'  # no file there
    monkeypatch.setattr(bench, 'CALIBRATED_FILE',
                        str(calibrated / 'mobilenet_v2_utd_mhad_calibrated_{train_list}.pth'))
    args = bench.parse_args(['--data', str(tmp_path / 'data'), '--work-dir', str(tmp_path / 'w'),
                             '--record', str(tmp_path / 'record.json')])
    (_, _), fold = bench.validation_fold(3)
    rows = [ROWS[name]._replace(edits=(fold, ) + ROWS[name].edits)
            for name in ('calibrated norms', bench.RECIPE_ROW)]
    expected = (f'calibrated norms seed 0: {calibrated}/'
                'mobilenet_v2_utd_mhad_calibrated_s3_train.pth')
    assert bench.BENCH.missing_weights([(row, 0) for row in rows], args) == [expected]
    with pytest.raises(SystemExit, match='weight files missing, nothing trained .*\n'
                                         + re.escape(expected) + '$'):
        bench.BENCH.train([(row, 0) for row in rows], args)
    assert not (tmp_path / 'w').exists()


def test_train_only_trains_and_writes_no_table(tmp_path, monkeypatch):
    """Several --train-only commands share the cores; none measures a latency or writes."""
    data = tmp_path / 'data'
    data.mkdir()
    (data / 'convert_meta.json').write_text('{}')
    trained = []
    monkeypatch.setattr(bench.BENCH, 'train', lambda jobs, args: trained.append(jobs))
    monkeypatch.setattr(bench, 'report', lambda *args: pytest.fail('train-only reported'))
    assert bench.main(['--data', str(data), '--work-dir', str(tmp_path / 'work'), '--rows',
                       'conv1 random', '--seeds', '1', '2', '--train-only', '--record',
                       str(tmp_path / 'record.json')]) == ''
    assert [(row.name, seed) for row, seed in trained[0]] == [(bench.RANDOM_ROW, 1),
                                                             (bench.RANDOM_ROW, 2)]
    assert not (tmp_path / 'record.json').exists()
    with pytest.raises(SystemExit):
        bench.parse_args(['--train-only', '--report-only'])


def _curve(*points):
    """A learning curve validated every 2 epochs with these top-1 values."""
    return {str(2 * (index + 1)): dict(train_top1=0.5, train_loss=1.0, test_top1=value)
            for index, value in enumerate(points)}


def _runs(*top1, curve=None):
    return [dict(seed=seed, top1=value, top5=0.95, mean_class=value - 0.01, train_top1=0.99,
                 train_min=10.0, curves=curve or _curve(0.3, 0.6, value))
            for seed, value in enumerate(top1)]


def test_learning_curves_are_read_against_the_controls_last_validation():
    results = {bench.SCRATCH_ROW: _runs(0.7, 0.7, curve=_curve(0.2, 0.5, 0.6)),
               bench.RECIPE_ROW: _runs(0.8, curve=_curve(0.4, 0.61, 0.7))}
    assert bench.scratch_target(results) == 0.6
    assert bench.epochs_to_reach(results[bench.RECIPE_ROW][0], 0.6) == 4
    assert bench.epochs_to_reach(results[bench.RECIPE_ROW][0], 0.9) is None
    late = dict(results[bench.RECIPE_ROW][0], curves=_curve(0.1, 0.2, 0.3))
    assert bench.reach_cell(results[bench.RECIPE_ROW] + [late], 0.6) == '4.0 (1 of 2 seeds)'
    assert bench.reach_cell([late], 0.6) == 'not reached'
    assert bench.reach_table([ROWS[bench.RECIPE_ROW]], results)[2] == (
        f'| {bench.RECIPE_ROW} | 6 | 0.700 | 4.0 |')


def _results():
    return {bench.TSM_ROW: _runs(0.80, 0.82, 0.84), bench.RECIPE_ROW: _runs(0.86, 0.87, 0.88),
            bench.SCRATCH_ROW: _runs(0.70, 0.70, 0.70, curve=_curve(0.3, 0.5, 0.65)),
            bench.RANDOM_ROW: _runs(0.80, 0.82, 0.84, curve=_curve(0.3, 0.5, 0.8)),
            'extra BN': _runs(0.80), 'lr 0.5x': _runs(0.875)}


def _costs(results):
    costs = {name: dict(gflops=0.1, params_m=2.3, latency_ms=30.0) for name in results}
    costs[bench.TSM_ROW] = dict(gflops=0.8, params_m=2.3, latency_ms=100.0)
    return costs


def test_targets_and_claims_from_given_numbers():
    results = _results()
    costs = _costs(results)
    validated = {bench.RECIPE_ROW: {5: 0.80, 7: 0.80}, 'lr 0.5x': {5: 0.76, 7: 0.80},
                 bench.TSM_ROW: {5: 0.9, 7: 0.9}}
    assert bench.targets(results, costs, validated) == [
        'Targets (means over the seeds):',
        '- hyperframe T=5 0.870 vs TSM-MobileNetV2-5 0.820 at 0.300x its latency (>= TSM at '
        '<= 1/3 = 0.333x): **met**',
        '- ImageNet vs from scratch (T=5): 0.870 vs 0.700, +17.0 points (>= +5): **met**',
        '- ImageNet vs from scratch on the same optimiser: no SGD schedule of the control '
        'validated yet (--validate-on)',
        '- conv1 replicate vs random: +5.0 points, the larger spread over seeds 2.0 (> 2x the '
        'spread): **met**',
        f'- {bench.EFF_T5_ROW} vs {bench.RECIPE_ROW}: not trained yet',
        f'- {bench.EFF_T5_ROW} vs {bench.EFF_TSN_ROW}: not trained yet',
        '- EfficientNet-Lite0\'s T: not validated yet (--validate-on)',
        '- the row chosen on the training subjects at <= 0.5x TSM\'s latency: hyperframe T=5 '
        '(validation 0.800 on subjects 5, 7, the best of the 2 rows validated on them within '
        'that latency), tested once: 0.870 ± 0.010 over 3 seeds at 0.300x (>= 0.87): **met**',
        '- the row chosen on the training subjects at <= 1/3x TSM\'s latency: hyperframe T=5 '
        '(validation 0.800 on subjects 5, 7, the best of the 2 rows validated on them within '
        'that latency), tested once: 0.870 ± 0.010 over 3 seeds at 0.300x (>= '
        'TSM-MobileNetV2-5 0.820): **met**']
    # each budget chooses among its own rows: a row validated best but over a third of TSM's
    # latency is the half-latency choice only, and the third's choice is read against TSM
    slow_best = dict(validated, **{'lr 0.5x': {5: 0.9, 7: 0.9}})
    budgets = dict(costs, **{'lr 0.5x': dict(costs['lr 0.5x'], latency_ms=40.0)})
    worse = dict(results, **{bench.RECIPE_ROW: _runs(0.81, 0.81, 0.81)})
    assert bench.targets(worse, budgets, slow_best)[-2:] == [
        '- the row chosen on the training subjects at <= 0.5x TSM\'s latency: lr 0.5x '
        '(validation 0.900 on subjects 5, 7, the best of the 2 rows validated on them within '
        'that latency), tested once: 0.875 over 1 seed at 0.400x (>= 0.87): **met**',
        '- the row chosen on the training subjects at <= 1/3x TSM\'s latency: hyperframe T=5 '
        '(validation 0.800 on subjects 5, 7, the best of the 1 rows validated on them within '
        'that latency), tested once: 0.810 ± 0.000 over 3 seeds at 0.300x (>= '
        'TSM-MobileNetV2-5 0.820): **missed**']
    # where rows went through all four subjects, a row that did not is not compared, however
    # high it scored on its own
    protocol = {name: {1: 0.7, 3: 0.7, **scores} for name, scores in validated.items()}
    protocol['extra BN'] = {5: 0.95, 7: 0.95}
    assert bench.targets(results, costs, protocol)[-2].startswith(
        '- the row chosen on the training subjects at <= 0.5x TSM\'s latency: hyperframe T=5 '
        '(validation 0.750 on subjects 1, 3, 5, 7, the best of the 2 rows validated on them '
        'within that latency; 1 not validated on all four, not compared)')
    # a row validated above the chosen one but never tested is named, not passed over silently
    # (one validated below it, or on other subjects, is not)
    waiting = dict(protocol, **{'input 160': {1: 0.9, 3: 0.9, 5: 0.9, 7: 0.9},
                                'norm_eval': {1: 0.6, 3: 0.6, 5: 0.6, 7: 0.6},
                                'partial BN': {5: 0.99, 7: 0.99}})
    assert bench.targets(results, costs, waiting)[-2].startswith(
        '- the row chosen on the training subjects at <= 0.5x TSM\'s latency: hyperframe T=5 '
        '(validation 0.750 on subjects 1, 3, 5, 7, the best of the 2 rows validated on them '
        'within that latency; 1 not validated on all four, not compared; validated higher but '
        'not tested, so not compared: input 160 0.900)')
    # chosen on validation, not on the test: lr 0.5x tests higher but validated lower
    assert all(line.endswith('no validated row is that fast (--validate-on)')
               for line in bench.targets(results, costs, {})[-2:])
    slower = dict(costs, **{bench.RECIPE_ROW: dict(costs[bench.RECIPE_ROW], latency_ms=33.4)})
    assert bench.targets(results, slower, validated)[1].endswith(
        'at 0.334x its latency (>= TSM at <= 1/3 = 0.333x): **missed**')
    alone = {name: results[name] for name in (bench.TSM_ROW, bench.RECIPE_ROW)}
    assert bench.targets(alone, costs, validated)[2:5] == [
        f'- ImageNet vs from scratch: {bench.SCRATCH_ROW!r} not trained yet',
        '- ImageNet vs from scratch on the same optimiser: no SGD schedule of the control '
        'validated yet (--validate-on)',
        f'- conv1 replicate vs random: {bench.RANDOM_ROW!r} needs 2 seeds or more']
    lines = bench.claims(results)
    assert lines[1] == ('- pretrained + replicate trains more stably than a random conv1: '
                        'hyperframe T=5 0.870 vs conv1 random 0.820 (+5.0 points): held')
    assert lines[2] == ('- a learning rate of 0.5x is better: lr 0.5x 0.875 vs hyperframe T=5 '
                        '0.870 (+0.5 points): within the spread')
    assert lines[3] == ('- 0.5x with 5 warm-up epochs is better: not trained yet (lr 0.5x, 5 '
                        'warm-up epochs vs hyperframe T=5)')
    assert lines[5] == ('- an extra BN after the widened conv helps: extra BN 0.800 vs '
                        'hyperframe T=5 0.870 (-7.0 points): the opposite held')
    # the control's last validation is 0.65: the recipe reaches it at epoch 6 (0.86-0.88),
    # random conv1 at 6 as well
    assert lines[6] == ('- replicate needs 10-15 % fewer epochs than random conv1: 6.0 vs 6.0 '
                        'epochs to the scratch model\'s final val top-1 (0 % fewer): within the '
                        'validation interval')
    late_random = dict(results, **{bench.RANDOM_ROW: _runs(0.8, 0.8, curve=_curve(
        0.1, 0.2, 0.3, 0.4, 0.7))})
    assert bench.claims(late_random)[6].endswith('6.0 vs 10.0 epochs to the scratch model\'s '
                                                 'final val top-1 (40 % fewer): held')
    late_recipe = dict(results, **{bench.RECIPE_ROW: _runs(0.86, curve=_curve(
        0.1, 0.2, 0.3, 0.4, 0.86))})
    assert bench.claims(late_recipe)[6].endswith('10.0 vs 6.0 epochs to the scratch model\'s '
                                                 'final val top-1 (-67 % fewer): did not hold')


def test_rows_are_chosen_on_the_subjects_they_share():
    validated = {'a': {1: 0.70, 3: 0.80, 5: 0.90, 7: 0.60}, 'b': {1: 0.74, 3: 0.80, 5: 0.80,
                                                                 7: 0.70},
                 'c': {5: 0.99, 7: 0.99}}
    # c is higher on subjects 5 and 7, but a and b went through the protocol (all four)
    assert bench.choose(['a', 'b', 'c'], validated) == (
        'b', {'a': pytest.approx(0.75), 'b': pytest.approx(0.76)}, (1, 3, 5, 7))
    # on subjects 5 and 7 alone a leads b; c, on them too, leads both
    assert bench.choose(['a', 'b', 'c'], {name: {subject: validated[name][subject]
                                                 for subject in (5, 7)} for name in validated}) \
        == ('c', {'a': pytest.approx(0.75), 'b': pytest.approx(0.75), 'c': pytest.approx(0.99)},
            (5, 7))
    # one more fold short of the protocol does not leave the others out: all are read on the
    # subjects they share, where d (best on its own three) is the worst
    partial = {'a': {5: 0.80, 7: 0.80}, 'b': {5: 0.76, 7: 0.80}, 'd': {1: 0.99, 5: 0.70, 7: 0.70}}
    assert bench.choose(['a', 'b', 'd'], partial) == (
        'a', {'a': pytest.approx(0.80), 'b': pytest.approx(0.78), 'd': pytest.approx(0.70)},
        (5, 7))
    # a tie goes to the first row named
    assert bench.choose(['b', 'a'], {'a': {5: 0.5}, 'b': {5: 0.5}})[0] == 'b'
    with pytest.raises(ValueError, match='no held-out subject common to a, b'):
        bench.choose(['a', 'b'], {'a': {5: 0.5}, 'b': {7: 0.5}})
    assert bench.subjects_text((5, )) == 'subject 5'


def test_the_same_optimiser_control_is_the_schedule_validated_best():
    sgd30, sgd60, fast = bench.SCRATCH_SGD_ROWS
    top1 = {bench.RECIPE_ROW: 0.80, sgd30: 0.70, sgd60: 0.78}
    # the schedule is the one validated best, whatever the test says
    validated = {sgd30: {5: 0.60, 7: 0.60}, sgd60: {5: 0.65, 7: 0.65}, fast: {5: 0.62, 7: 0.62}}
    assert bench.same_optimiser_target(top1, validated) == (
        f'- ImageNet vs from scratch on the same optimiser (T=5): 0.800 vs {sgd60} 0.780 (the '
        'schedule validated best of 3), +2.0 points (>= +5): **missed**')
    assert bench.same_optimiser_target(top1, {sgd30: {5: 0.7}}).endswith(
        '0.800 vs from scratch, SGD 30e 0.700 (the schedule validated best of 1), +10.0 points '
        '(>= +5): **met**')
    assert bench.same_optimiser_target(top1, {fast: {5: 0.9}}) == (
        f'- ImageNet vs from scratch on the same optimiser: {fast!r} (chosen on validation) not '
        'trained yet')
    assert {row.config for row in bench.ROWS if row.name in bench.SCRATCH_SGD_ROWS} == {
        bench.SCRATCH}


def test_the_second_networks_t_is_the_one_validated_best():
    validated = {bench.EFF_T5_ROW: {5: 0.70, 7: 0.70}, bench.EFF_T8_ROW: {5: 0.70, 7: 0.74}}
    results = {bench.EFF_T8_ROW: _runs(0.60, 0.62), bench.EFF_T5_ROW: _runs(0.9)}
    assert bench.second_network_t(results, validated) == (
        f'- EfficientNet-Lite0\'s T, chosen on the training subjects: {bench.EFF_T8_ROW} '
        '(validation T=5 0.700, T=8 (the recipe\'s gain and rate) 0.720 on subjects 5, 7); '
        'tested once: 0.610 ± 0.014 over 2 seed(s)')
    assert bench.second_network_t({}, {bench.EFF_T5_ROW: {5: 0.7}}).endswith(
        f'{bench.EFF_T5_ROW} (validation T=5 0.700 on subject 5); not trained yet')
    # T=5 as its targets read it: the gain and rate its folds chose
    lr4 = f'{bench.EFF_GAIN_ROW}, lr 4x'
    validated.update({bench.EFF_GAIN_ROW: {5: 0.72, 7: 0.72}, lr4: {5: 0.76, 7: 0.78}})
    assert bench.second_network_t({lr4: _runs(0.8)}, validated) == (
        f'- EfficientNet-Lite0\'s T, chosen on the training subjects: {lr4} (validation T=5 '
        '(at its input scale, lr 4x) 0.770, T=8 (the recipe\'s gain and rate) 0.720 on '
        'subjects 5, 7); tested once: 0.800 over 1 seed(s)')
    # T=8 at the gain and rate T=5 chose
    validated[bench.EFF_T8_CHOSEN_ROW] = {5: 0.80, 7: 0.80}
    assert bench.second_network_t({}, validated) == (
        f'- EfficientNet-Lite0\'s T, chosen on the training subjects: {bench.EFF_T8_CHOSEN_ROW} '
        '(validation T=5 (at its input scale, lr 4x) 0.770, T=8 (the recipe\'s gain and rate) '
        '0.720, T=8 (at its input scale, lr 4x) 0.800 on subjects 5, 7); not trained yet')


def test_the_second_networks_targets_read_its_own_rows():
    top1 = {bench.RECIPE_ROW: 0.80, bench.EFF_T5_ROW: 0.82, bench.EFF_TSN_ROW: 0.82}
    costs = {bench.RECIPE_ROW: dict(latency_ms=20.0), bench.EFF_T5_ROW: dict(latency_ms=30.0),
             bench.EFF_TSN_ROW: dict(latency_ms=90.0)}
    assert bench.second_network_targets(top1, costs) == [
        f'- {bench.EFF_T5_ROW} 0.820 vs {bench.RECIPE_ROW} 0.800 at 1.500x its latency (>= at '
        '<= 1.5 = 1.500x): **met**',
        f'- {bench.EFF_T5_ROW} 0.820 vs {bench.EFF_TSN_ROW} 0.820 at 0.333x its latency (>= at '
        '<= 1/3 = 0.333x): **met**']
    slower = dict(costs, **{bench.EFF_T5_ROW: dict(latency_ms=30.1)})
    worse = dict(top1, **{bench.EFF_TSN_ROW: 0.821})
    assert [line.endswith('**missed**') for line in bench.second_network_targets(top1, slower)] \
        == [True, True]
    assert [line.endswith('**missed**') for line in bench.second_network_targets(worse, costs)] \
        == [False, True]


def test_the_second_networks_t5_row_is_its_gain_and_lr_validated_best():
    validated = {bench.EFF_T5_ROW: {5: 0.66, 7: 0.58}, bench.EFF_GAIN_ROW: {5: 0.68, 7: 0.70}}
    row, chosen = bench.second_network_t5(validated)
    assert (row, chosen) == (bench.EFF_GAIN_ROW, (
        ' (chosen on the training subjects: validation the recipe\'s gain 0.620, '
        'at its input scale 0.690 on subjects 5, 7)'))
    top1 = {bench.RECIPE_ROW: 0.79, bench.EFF_GAIN_ROW: 0.80, bench.EFF_TSN_ROW: 0.6}
    costs = {name: dict(latency_ms=10.0) for name in top1}
    assert bench.second_network_targets(top1, costs, row, chosen)[0] == (
        f'- {bench.EFF_GAIN_ROW}{chosen} 0.800 vs {bench.RECIPE_ROW} 0.790 at 1.000x its '
        'latency (>= at <= 1.5 = 1.500x): **met**')
    # a learning rate validated above: chosen whether or not it was tested, and a row not
    # tested yet is a target not trained yet, not the next best row read in its place
    lr2 = f'{bench.EFF_GAIN_ROW}, lr 2x'
    assert lr2 in bench.EFF_LR_ROWS
    row, chosen = bench.second_network_t5(dict(validated, **{lr2: {5: 0.70, 7: 0.72}}))
    assert (row, chosen) == (lr2, (
        ' (chosen on the training subjects: validation the recipe\'s gain 0.620, '
        'at its input scale 0.690, at its input scale, lr 2x 0.710 on subjects 5, 7)'))
    assert bench.second_network_targets(top1, costs, row, chosen) == [
        f'- {lr2} vs {bench.RECIPE_ROW}: not trained yet',
        f'- {lr2} vs {bench.EFF_TSN_ROW}: not trained yet']
    # validated alone: the recipe's row
    assert bench.second_network_t5({bench.EFF_T5_ROW: {5: 0.66}}) == (bench.EFF_T5_ROW, '')
    # the recipe's gain validated better: it stays
    validated[bench.EFF_T5_ROW] = {5: 0.70, 7: 0.70}
    assert bench.second_network_t5(validated)[0] == bench.EFF_T5_ROW


@pytest.mark.slow
def test_the_record_alone_rewrites_the_tables(tmp_path, monkeypatch):
    """A fresh clone (no data, no run folders) writes the family README section, the project
    README's rows, the ablation section, the results page and the zoo results from the record,
    and writing twice changes nothing."""
    args = bench.parse_args(['--data', str(tmp_path / 'no_data'), '--work-dir',
                             str(tmp_path / 'work'), '--record', str(tmp_path / 'record.json')])
    (tmp_path / 'record.json').write_text(json.dumps(dict(data=dict(
        version=1, mapping=None, classes=27,
        lists={'cross_subject_train.txt': 431, 'cross_subject_test.txt': 430}))))
    # two seeds where the targets need a spread, one elsewhere: each run's key builds its config
    results = {name: runs[:2] if len(runs) > 1 else runs for name, runs in _results().items()}
    results[bench.SCRATCH_ROW] = results[bench.SCRATCH_ROW][:1]
    record = {}
    for name, runs in results.items():
        row = ROWS[name]
        record[name] = [dict(run, row=name, key=bench.BENCH.run_key(row, run['seed'], args))
                        for run in runs]
    data = json.loads((tmp_path / 'record.json').read_text())['data']
    (tmp_path / 'record.json').write_text(json.dumps(dict(results=record, costs=_costs(results),
                                                          data=data)))
    readme = tmp_path / 'README.md'
    readme.write_text(f'# family\n{bench.BEGIN}\n{bench.END}\n')
    bench_readme = tmp_path / 'FINDINGS.md'
    bench_readme.write_text(f'# benchmarks\n{bench.ABLATION_BEGIN}\n{bench.ABLATION_END}\nend\n')
    project = tmp_path / 'PROJECT.md'
    project.write_text(f'# project\n{bench.README_BEGIN}\n{bench.README_END}\nend\n')
    monkeypatch.setattr(bench, 'RESULTS', tmp_path / 'results' / 'utd_mhad_imagenet.md')
    monkeypatch.setattr(bench, 'FAMILY_README', readme)
    monkeypatch.setattr(bench, 'FINDINGS', bench_readme)
    monkeypatch.setattr(bench, 'PROJECT_README', project)
    monkeypatch.setattr(bench, 'ZOO_RESULTS', tmp_path / 'zoo')
    # an ablation validated best: the README shows it beside its headline rows, marked chosen
    validation = tmp_path / 'validation.json'
    validation.write_text(json.dumps(dict(results={
        f'{name} | s{subject}': [dict(seed=0, top1=top1)]
        for name, top1 in ((bench.RECIPE_ROW, 0.80), ('lr 0.5x', 0.81), ('lr 2x', 0.70),
                           ('lr 4x', 0.83))
        for subject in (5, 7)})))
    monkeypatch.setattr(bench, 'VALIDATION_RECORD', validation)
    argv = ['--report-only', '--data', args.data, '--work-dir', args.work_dir, '--record',
            args.record]
    markdown = bench.main(argv)
    written = {path: path.read_text() for path in (readme, bench_readme, project, bench.RESULTS,
                                                   tmp_path / 'record.json')}
    assert bench.main(argv) == markdown
    assert {path: path.read_text() for path in written} == written
    section = readme.read_text()
    assert '- ImageNet vs from scratch (T=5): 0.865 vs 0.700, +16.5 points (>= +5): **met**' \
        in section
    assert f'| [{bench.RECIPE_ROW}]({bench.RECIPE.name}) | **0.865** ± 0.007' in section
    assert 'Not trained yet: single frame; TSN-MobileNetV2-5 (mmaction2); hyperframe T=8; ' \
        'hyperframe T=8, mixup; hyperframe T=8, mixup + cutmix; hyperframe T=16; ' \
        'fast/slow T=5+5; fast/slow T=5+8; EfficientNet-Lite0 single frame; '\
        'TSN-EfficientNet-Lite0-5 (mmaction2); TSM-EfficientNet-Lite0-5; EfficientNet-Lite0 '\
        'hyperframe T=5; EfficientNet-Lite0 hyperframe T=8 (`python' in section
    # the project README: the trained headline rows, then the targets
    assert project.read_text().splitlines()[2:8] == [
        '| model | top-1 (mean ± sd) | seeds | GFLOPs / view | CPU latency vs TSM-MobileNetV2-5 | '
        'training time (min) |', '|---|---:|---:|---:|---:|---:|',
        f'| {bench.TSM_ROW} | 0.810 ± 0.014 | 2 | 0.80 | 1.00x | 10 |',
        f'| {bench.RECIPE_ROW} | 0.865 ± 0.007 | 2 | 0.10 | 0.30x | 10 |',
        f'| {bench.SCRATCH_ROW} | 0.700 | 1 | 0.10 | 0.30x | 10 |',
        '| lr 0.5x (chosen on the training subjects) | 0.875 | 1 | 0.10 | 0.30x | 10 |']
    assert '- the row chosen on the training subjects at <= 0.5x TSM\'s latency: lr 0.5x ' \
        '(validation 0.810 on subjects 5, 7, the best of the 2 rows' in project.read_text()
    assert '\n\nTargets (means over the seeds):\n- hyperframe T=5 0.865' in project.read_text()
    assert project.read_text().endswith(f'{bench.README_END}\nend\n')
    ablation = bench_readme.read_text()
    assert f'| {bench.RANDOM_ROW} | conv1 random, every other layer from ImageNet | **0.810** ' \
        '± 0.014 (0.800 / 0.820) | -5.5 | 0.800 | 6.0 | 10.0 | 0.30x |' in ablation
    assert ablation.endswith(f'{bench.ABLATION_END}\nend\n')
    # a row validated and not chosen is not listed as a run still to do; one validated above
    # the chosen row is, as the test that decides the choice
    notes = ablation.splitlines()[-5:-2]
    assert notes[0] == ('Validated above the chosen row and not tested yet (its test decides the '
                        'choice): lr 4x (`python benchmarks/bench_utd_mhad_imagenet.py --rows '
                        'NAME`).')
    assert notes[1] == ('Validated on the training subjects and not chosen, so not tested: '
                        'lr 2x (their folds: benchmarks/results/utd_mhad_imagenet_val.md).')
    assert notes[2].startswith('Not trained yet: conv1 center; lr 0.5x, 5 warm-up epochs; ')
    assert not {'lr 4x', 'lr 2x'} & set(notes[2].split('; '))
    assert 'tested once' in project.read_text() and 'validated higher but not tested, so not ' \
        'compared: lr 4x 0.830' in project.read_text()
    zoo = json.loads((tmp_path / 'zoo' / f'{bench.RECIPE.stem}.json').read_text())
    assert zoo == {'acc/top1': pytest.approx(0.865), 'acc/top5': pytest.approx(0.95),
                   'acc/mean1': pytest.approx(0.855), 'seeds': [0, 1]}


def test_stop_after_keeps_the_schedule_but_its_length(written):
    _, _, configs = written
    cfg = configs[bench.RECIPE_ROW].copy()
    stop_after(2)(cfg)
    assert (cfg.train_cfg.max_epochs, cfg.default_hooks.checkpoint.interval) == (2, 2)
    assert cfg.param_scheduler == configs[bench.RECIPE_ROW].param_scheduler


def test_the_row_list_imports_neither_torch_nor_the_package():
    """Declaring the rows (their edits included) is cheap: the package, torch and mmaction2 load
    when a run is configured, not when the benchmark or its --help is read."""
    code = ('import sys; import benchmarks.bench_utd_mhad_imagenet; '
            'print(sorted(name for name in ("torch", "mmaction", "hyperframes_mm") '
            'if name in sys.modules))')
    out = subprocess.run([sys.executable, '-c', code], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == '[]'


def test_weights_lists_the_files_the_selected_rows_start_from(tmp_path, monkeypatch):
    """What tools/gpu_validate_utd.sh carries to a lent GPU, and nothing more: the converted
    files the rows' configs name, a calibrated row's file that of its fold's training list."""
    for name in ('HF_IMAGENET_MOBILENET_V2', 'HF_IMAGENET_EFFICIENTNET_LITE0'):
        monkeypatch.delenv(name, raising=False)
    data = tmp_path / 'data'
    data.mkdir()
    (data / bench.BENCH.meta.file).write_text('{}')

    def weights(*argv):
        return bench.main(['--data', str(data), '--work-dir', str(tmp_path / 'work'),
                           '--record', str(tmp_path / 'record.json'), '--weights',
                           *argv]).splitlines()

    assert weights('--rows', bench.TSM_ROW) == ['checkpoints/mobilenet_v2_imagenet_mmaction.pth']
    assert weights('--validate-on', '5', '--rows', 'calibrated norms', bench.EFF_T8_CHOSEN_ROW) \
        == ['checkpoints/efficientnet_lite0_timm.pth',
            'checkpoints/mobilenet_v2_utd_mhad_calibrated_s5_train.pth']
    assert weights('--rows', 'calibrated norms') == [
        'checkpoints/mobilenet_v2_utd_mhad_calibrated_cross_subject_train.pth']
    # nothing trained, nothing recorded
    assert sorted(path.name for path in tmp_path.iterdir()) == ['data']


def test_a_validation_fold_recorded_elsewhere_keeps_its_table_beside_that_record(tmp_path,
                                                                                 monkeypatch):
    """Runs kept out of the repository's record (``--record`` elsewhere) rewrote the
    repository's validation page from that record alone."""
    data = tmp_path / 'data'
    data.mkdir()
    (data / 'convert_meta.json').write_text('{}')
    monkeypatch.setattr(bench, 'RESULTS', tmp_path / 'results' / 'utd_mhad_imagenet.md')
    monkeypatch.setattr(bench, 'VALIDATION_RESULTS', tmp_path / 'results' / 'val.md')
    monkeypatch.setattr(bench, 'VALIDATION_RECORD', tmp_path / 'results' / 'val.json')
    (tmp_path / 'results').mkdir()
    run = dict(seed=0, top1=0.75)
    for record in (tmp_path / 'mine.json', bench.VALIDATION_RECORD):
        record.write_text(json.dumps(dict(results={f'{bench.RECIPE_ROW} | s5': [run]})))
    argv = ['--validate-on', '5', '--report-only', '--data', str(data), '--work-dir',
            str(tmp_path / 'work'), '--rows', bench.RECIPE_ROW]
    text = bench.main([*argv, '--record', str(tmp_path / 'mine.json')])
    assert f'| {bench.RECIPE_ROW} |  |  | 0.750 (1) |  | 0.750 |' in text
    assert (tmp_path / 'mine.md').read_text() == text + '\n'
    assert not bench.VALIDATION_RESULTS.exists()
    # the repository's record (the default) keeps its page
    assert bench.main(argv) == text
    assert bench.VALIDATION_RESULTS.read_text() == text + '\n'
