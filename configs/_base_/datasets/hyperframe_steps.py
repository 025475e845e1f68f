# Pipeline steps that every hyperframe family shares and that hold no setting of a family: the
# test's video reader, and the stacking and packing every pipeline ends with.
test_init = dict(type='SafeDecordInit')
# a one-stream sample: [clips x crops, 3T, H, W] as the model's input
hyperframe_format = [dict(type='HyperframeStack'), dict(type='PackActionInputs')]
# a two-stream sample stacked into one hyperframe per clip and crop, the fast stream's frames
# then the slow stream's (early fusion: Recognizer2D with a backbone of the streams' total T)
fused_format = [dict(type='HyperframeStack', fuse_streams=True), dict(type='PackActionInputs')]
# mmaction2's TSN/TSM input, for the baselines tested on a family's views: [views x T, 3, H, W]
# (Recognizer2D folds the T frames of a view into its batch)
segment_format = [dict(type='FormatShape', input_format='NCHW'), dict(type='PackActionInputs')]
