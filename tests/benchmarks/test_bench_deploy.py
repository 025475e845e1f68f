"""benchmarks/bench_deploy.py: the int8-aware option is read from validation, the int8 target
is a mean over seeds of each int8-aware model against its float model before fine-tuning, and
the fine-tuning runs the family's int8-aware config."""
import pytest
from mmengine.config import Config, DictAction

from benchmarks import bench_deploy as bench


def parity(top1_float, top1_int8, agreement=1.0):
    return dict(clips=108, top1_float=top1_float, top1_int8=top1_int8, agreement=agreement)


def fold(post, *options):
    """A validated subject: post-training's scores, then each option's, one pair per
    fine-tuning seed."""
    return dict(checkpoint='x.pth', scores={
        bench.POST_TRAINING: {'-': parity(*post)},
        **{option: {str(seed): parity(*pair) for seed, pair in enumerate(pairs)}
           for option, pairs in zip(bench.INT8_AWARE_OPTIONS, options)}})


def test_the_choice_is_the_best_int8_top1_over_subjects_and_fine_tuning_seeds():
    first, second, third = bench.INT8_AWARE_OPTIONS
    # int8 top-1 in binary fractions, so that the means tie exactly; each option fine-tuned
    # with two seeds
    record = dict(s5=fold((0.75, 0.5), [(0.75, 0.75), (0.75, 0.5)], [(0.75, 0.25)] * 2,
                          [(0.75, 0.5)] * 2),
                  s7=fold((0.75, 0.75), [(0.75, 0.75), (0.75, 0.5)], [(0.75, 0.25)] * 2,
                          [(0.75, 0.875)] * 2))
    # means over subjects and seeds: post-training 0.625, first 0.625, second 0.25, third
    # 0.6875: the best is the third, and post-training ties the first
    assert bench.chosen_option(record) == third
    page = bench.validation_page(record)
    assert f'**{third}**; the config trains with {first}: change it.' in page
    assert f'| {first} | 0, 1 | 0.750 / 0.625 / 1.000 | 0.750 / 0.625 / 1.000 | 0.625 |' in page
    assert '| none (post-training quantisation) | - | 0.750 / 0.500 / 1.000 | ' \
        '0.750 / 0.750 / 1.000 | 0.625 |' in page
    # a tie goes to the earlier row: post-training before any fine-tuning
    record['s7']['scores'][third] = {'0': parity(0.75, 0.75)}
    assert bench.chosen_option(record) == bench.POST_TRAINING
    assert 'does not pay: `bench_deploy.py` reads the first target from post-training' in \
        bench.validation_page(record)
    record['s5']['scores'][first]['1'] = parity(0.75, 0.75)
    assert bench.chosen_option(record) == first
    assert f'**{first}**; the config trains with it.' in bench.validation_page(record)


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
    assert post[2][1:] == ['8.00 / 32.00 ms = 0.250x', 'met']
    assert post[1][1:] == ['8.00 / 24.00 ms = 0.333x', 'met']
    # each fine-tuned model against the float model of its seed before fine-tuning (0.826,
    # 0.821, 0.816), not against its own float top-1: 0.5, -0.2 and 1.0 points
    aware = dict(parity={0: parity(0.830, 0.821), 1: parity(0.820, 0.823),
                         2: parity(0.810, 0.806)})
    option = next(iter(bench.INT8_AWARE_OPTIONS))
    goal = bench.targets(rows, aware, latency, streams, option)[0]
    assert goal[1:] == ['+0.4 points int8-aware, chosen on validation (+0.8 post-training; '
                        'mean of 3 seeds)', 'met']
    # validation chose post-training: the target reads it, the int8-aware model beside it
    worse = dict(parity={**aware['parity'], 2: parity(0.810, 0.756)})  # 6.0: a mean of 2.1
    goal = bench.targets(rows, worse, latency, streams, bench.POST_TRAINING)[0]
    assert goal[1:] == ['+0.8 points post-training, chosen on validation (+2.1 int8-aware; '
                        'mean of 3 seeds)', 'met']
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


@pytest.fixture
def logger_level():
    """The script's main quiets mmengine's current logger; later tests read its INFO lines."""
    from mmengine.logging import MMLogger
    logger = MMLogger.get_current_instance()
    level = logger.level
    yield
    logger.setLevel(level)


def test_report_only_writes_the_page_from_the_record_alone(tmp_path, monkeypatch, logger_level):
    import json
    t5, tsm = 'hyperframe T=5', bench.TSM
    ms = dict(zip(bench.RUNTIMES, (24.0, 10.0, 8.0, 7.0)))
    record = dict(
        machine='Machine: a test.', repeats=5, threads=[1],
        latency_ms={'1': {t5: ms, tsm: dict(ms, **{'onnxruntime int8 QDQ': 32.0})}},
        decode_ms_per_frame={'320x240': 0.5, '640x480': 1.0},
        pipeline_ms={f'{name} {size}': 1.0 for name in (t5, tsm)
                     for size in ('320x240', '640x480')},
        rows={t5: dict(checkpoints={'0': 'a.pth'}, parity={'0': parity(0.826, 0.812)},
                       float_operators={'QDQ': {'Add': ['/a']}}, input='into the stem conv'),
              tsm: dict(checkpoints={}, parity={}, float_operators={'QDQ': {}},
                        input='not folded')},
        int8_aware=None, command='python benchmarks/bench_deploy.py --checkpoint-dir runs')
    (tmp_path / 'deploy.json').write_text(json.dumps(record))
    # no validation record: the first target reads post-training quantisation
    monkeypatch.setattr(bench, 'VAL_RESULTS', tmp_path / 'none.md')
    out = tmp_path / 'deploy.md'
    assert bench.main(['--report-only', '--out', str(out)]) == 0
    text = out.read_text()
    # a stream of the T=5 row: 30 frames x 0.5 ms decoding, 5 x 1 ms pipeline, 5 x 8 ms model
    assert '| >= 10 camera streams per core at 5 decisions/s, 320x240 (T=5) | 16.7 | met |' \
        in text
    assert '| int8 T=5 within 1 point of float top-1 | +1.4 points (mean of 1 seed) | missed |' \
        in text
    assert f'| {tsm} | 0 |{" not trained here |" * 4} not folded | none |' in text
    assert '| +1.4 | into the stem conv | Add |' in text
    assert f'| {tsm} | 0 | not trained here |' in text and text.startswith(
        '# Int8 deployment on a CPU\n\nMachine: a test.\n')
    # the command that measured the record, with the checkpoints it read
    assert '\nReproduce: `python benchmarks/bench_deploy.py --checkpoint-dir runs`' in text
    written = json.loads((tmp_path / 'deploy.json').read_text())
    assert written['chosen_on_validation'] == bench.POST_TRAINING
    assert written['targets'][2] == ['int8 T=5 <= 1/4 of int8 TSM-MobileNetV2-5 latency, '
                                     '1 thread', '8.00 / 32.00 ms = 0.250x', 'met']
    # the page again from the record it wrote: the same bytes
    assert bench.main(['--report-only', '--out', str(out)]) == 0
    assert out.read_text() == text
    (tmp_path / 'deploy.json').unlink()
    assert bench.main(['--report-only', '--out', str(out)]) == 1
