"""The input pipeline: input ops by category and the tf.data pipelines with their bottleneck.

- `input_pipeline`: input ops (tf.data stages, DataLoader calls, infeed and host-to-device
  copies) by category, for the input pipeline analyzer and the overview;
- `tf_data`: tf.data pipelines rebuilt from iterator events, each call's self time and the
  bottleneck stage.
"""
