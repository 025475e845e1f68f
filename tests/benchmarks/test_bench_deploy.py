"""benchmarks/bench_deploy.py: the int8-aware option is read from validation, the int8 target
is a mean over seeds of each int8-aware model against its float model before fine-tuning, and
the fine-tuning runs the family's int8-aware config."""
from mmengine.config import Config, DictAction

from benchmarks import bench_deploy as bench


def parity(top1_float, top1_int8, agreement=1.0):
    return dict(clips=108, top1_float=top1_float, top1_int8=top1_int8, agreement=agreement)


def fold(post, *options):
    return dict(checkpoint='x.pth', scores={
        bench.POST_TRAINING: parity(*post),
        **{option: parity(*scores) for option, scores in zip(bench.INT8_AWARE_OPTIONS, options)}})


def test_the_option_with_the_best_mean_int8_top1_is_chosen_and_a_tie_goes_to_the_first():
    first, _, third = bench.INT8_AWARE_OPTIONS
    # int8 top-1 in binary fractions, so that the means tie exactly
    record = dict(s5=fold((0.75, 0.5), (0.75, 0.625), (0.75, 0.75), (0.75, 0.5)),
                  s7=fold((0.75, 0.5), (0.75, 0.625), (0.75, 0.375), (0.75, 0.75)))
    # means: 0.625, 0.5625, 0.625: the first and the third tie
    assert bench.chosen_option(record) == first
    record['s7']['scores'][third] = parity(0.75, 0.875)
    assert bench.chosen_option(record) == third
    page = bench.validation_page(record)
    assert f'**{third}**; the config trains with {first}: change it.' in page
    assert '| none (post-training quantisation) | 0.750 / 0.500 / 1.000 | 0.750 / 0.500 / ' \
        '1.000 | 0.500 |' in page


def test_the_int8_target_is_a_mean_over_seeds_of_each_int8_model_against_its_float_one():
    t5, tsm = 'hyperframe T=5', bench.TSM
    # seed by seed, post-training int8 loses 1.4, 0.0 and 1.1 points: a mean of 0.83
    rows = {t5: dict(parity={0: parity(0.826, 0.812), 1: parity(0.821, 0.821),
                             2: parity(0.816, 0.805)})}
    latency = {1: {t5: {'onnxruntime int8 QDQ': 8.0, 'PyTorch float': 24.0},
                   tsm: {'onnxruntime int8 QDQ': 32.0}}}
    streams = {(t5, bench.SOURCES[0]): 12.0}
    post = bench.targets(rows, None, latency, streams)
    assert post[0] == ['int8 T=5 within 1 point of float top-1',
                       '+0.8 points (mean of 3 seeds)', 'met']
    assert post[2][1:] == ['0.25x', 'met'] and post[1][1:] == ['0.33x', 'met']
    # each fine-tuned model against the float model of its seed before fine-tuning (0.826,
    # 0.821, 0.816), not against its own float top-1: 0.5, -0.2 and 1.0 points
    aware = dict(parity={0: parity(0.830, 0.821), 1: parity(0.820, 0.823),
                         2: parity(0.810, 0.806)})
    goal = bench.targets(rows, aware, latency, streams)[0]
    assert goal[1:] == ['+0.4 points int8-aware (+0.8 post-training; mean of 3 seeds)', 'met']
    assert bench.top1_cells(aware['parity'], rows[t5]['parity']) == [
        '3', '0.820 ± 0.010', '0.817 ± 0.009', '1.000 ± 0.000', '+0.5 / -0.2 / +1.0']
    assert bench.top1_cells(rows[t5]['parity'])[-1] == '+1.4 / +0.0 / +1.1'
    # one seed: no spread to show; none: the row is not trained here
    one = bench.targets({t5: dict(parity={0: parity(0.826, 0.812)})}, None, latency, streams)
    assert one[0][1:] == ['+1.4 points (mean of 1 seed)', 'missed']
    assert bench.top1_cells({0: parity(0.826, 0.812)}) == [
        '1', '0.826', '0.812', '1.000', '+1.4']
    assert bench.top1_cells({})[0] == '0'


def test_a_work_dir_gives_each_finished_seed_its_checkpoint_read_in_its_own_folder(tmp_path):
    import json
    row = tmp_path / 'hyperframe_t_5'
    for seed, finished in ((0, True), (2, True), (1, False), (10, True)):
        folder = row / f'seed{seed}'
        folder.mkdir(parents=True)
        (folder / 'epoch_30.pth').write_bytes(b'x')
        if finished:  # the path it was trained at, elsewhere: the folder has moved since
            (folder / 'result.json').write_text(json.dumps(
                dict(checkpoint=f'/elsewhere/seed{seed}/epoch_30.pth')))
    (row / 'seed2' / 'epoch_30.pth').unlink()  # finished, but its checkpoint is gone
    assert bench.run_folder_checkpoints(row) == {0: row / 'seed0' / 'epoch_30.pth',
                                                 10: row / 'seed10' / 'epoch_30.pth'}
    assert list(bench.run_folder_checkpoints(row)) == [0, 10]
    assert bench.run_folder_checkpoints(tmp_path / 'not_trained') == {}


def test_fine_tuning_starts_from_the_checkpoint_with_the_options_asked(tmp_path, monkeypatch):
    from benchmarks.lib import runner
    calls = []

    def train(config, work_dir, log, options, env):
        """tools/train.py's traces: the config it ran, dumped, and the last checkpoint."""
        calls.append((config, options, env.get('HF_UTD_VAL_SUBJECT')))
        cfg = Config.fromfile(str(config))
        cfg.merge_from_dict({key: DictAction._parse_iterable(value)
                             for key, value in (option.split('=', 1) for option in options)})
        cfg.dump(str(work_dir / config.name))
        (work_dir / 'epoch_10.pth').write_bytes(b'x')

    monkeypatch.setattr(runner, 'train', train)
    work = tmp_path / 'run'
    work.mkdir()
    option = list(bench.INT8_AWARE_OPTIONS)[2]  # lr / 10, 10 epochs
    assert bench.fine_tune_int8_aware(tmp_path / 'float.pth', option, work, 7) == \
        work / 'epoch_10.pth'
    config, options, subject = calls[0]
    cfg = Config.fromfile(str(config))
    assert cfg.custom_hooks[-1] == dict(type='Int8AwareHook') and subject == '7'
    assert options[0] == f'load_from={tmp_path / "float.pth"}'
    assert f'optim_wrapper.optimizer.lr={cfg.optim_wrapper.optimizer.lr!r}' in options
    assert {'train_cfg.max_epochs=10', 'param_scheduler.0.T_max=10'} <= set(options)
    # the same options again: the finished run is reused, not trained again
    bench.fine_tune_int8_aware(tmp_path / 'float.pth', option, work, 7)
    assert len(calls) == 1
    bench.fine_tune_int8_aware(tmp_path / 'other.pth', option, work, 7)
    assert len(calls) == 2
