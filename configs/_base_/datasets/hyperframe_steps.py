# Pipeline steps that every hyperframe family shares and that hold no setting of a family: the
# test's video reader, and the stacking and packing every pipeline ends with (one stream or two).
test_init = dict(type='SafeDecordInit')
# a one-stream sample: [clips x crops, 3T, H, W] as the model's input
hyperframe_format = [dict(type='HyperframeStack'), dict(type='PackActionInputs')]
# a two-stream sample: one hyperframe per stream, packed as imgs_fast and imgs_slow
stream_format = [
    dict(type='HyperframeStack'),
    dict(type='PackActionInputs', collect_keys=('imgs_fast', 'imgs_slow'))
]
