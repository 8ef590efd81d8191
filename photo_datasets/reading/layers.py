"""The uint8-to-float layer that goes first in a model fed by the pipeline.

Keras only (no TensorFlow import), so it runs on any Keras 3 backend.
"""

from __future__ import annotations

import keras


def rescaling_layer(value_range: tuple[float, float] = (0.0, 1.0)) -> keras.layers.Layer:
  """A Keras layer mapping uint8 pixels 0..255 linearly to `value_range`.

  Put it first in the model, so the conversion to float runs on the
  accelerator: the pipeline's batches stay uint8 until they get there.

  Args:
    value_range: `(low, high)`, the floats that pixel values 0 and 255 become:
      `(0, 1)` for most models, `(-1, 1)` for MobileNet or EfficientNetV2
      built with `include_preprocessing=False`.

  Returns:
    A `keras.layers.Rescaling` layer; it takes any numeric input and gives
    floats of the model's dtype policy.

  Raises:
    ValueError: `high` is not above `low`.
  """
  low, high = value_range
  if not high > low:
    raise ValueError(f"value_range must be (low, high) with high > low, got {value_range!r}.")
  return keras.layers.Rescaling(scale=(high - low) / 255.0, offset=low)
