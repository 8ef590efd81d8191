"""The example Keras models of the commands `train` and `doctor`.

Keras only (no TensorFlow import), so they also run on any Keras 3 backend,
e.g. to measure what a GPU consumes (`benchmarks/gpu_demand.py`).
"""

from __future__ import annotations

import keras

from photo_datasets.reading.layers import rescaling_layer

MODELS = ("small", "mobilenet_v3_small")


def build_model(kind: str, num_classes: int, image_size: int, *,
                flip: bool = False) -> keras.Model:
  """Builds an image classifier: uint8 images in, class probabilities out.

  The model follows the global dtype policy; its softmax is float32, so mixed
  precision keeps a stable output and loss. Weights start random (`weights=None`:
  nothing is downloaded).

  Args:
    kind: one of `MODELS`: "small", a few strided convolutions, or
      "mobilenet_v3_small", Keras's MobileNetV3Small without its top.
    num_classes: the number of classes, the size of the output.
    image_size: the side S of the square inputs, uint8 of shape (B, S, S, 3).
    flip: whether the model itself mirrors half its training images left to
      right, on the accelerator (fed by `pipeline.training_dataset(..., flip=False)`).

  Returns:
    An uncompiled `keras.Model` named `<kind>_classifier`, whose output is
    (B, num_classes) float32 probabilities.

  Raises:
    ValueError: if `kind` is not one of `MODELS`.
  """
  inputs = keras.Input((image_size, image_size, 3), dtype="uint8", name="image")
  mirrored = keras.layers.RandomFlip("horizontal", name="flip")(inputs) if flip else inputs
  # A few strided convolutions: cheap enough on a CPU for the demo's epoch on a bundled sample
  # (docs/reading.md, the doctor's "model small" row).
  if kind == "small":
    x = rescaling_layer((0.0, 1.0))(mirrored)
    for filters in (16, 32, 64):
      x = keras.layers.Conv2D(filters, 3, strides=2, padding="same", use_bias=False)(x)
      x = keras.layers.BatchNormalization()(x)
      x = keras.layers.ReLU()(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
  elif kind == "mobilenet_v3_small":
    # [-1, 1]: what MobileNetV3 expects without its own preprocessing.
    x = rescaling_layer((-1.0, 1.0))(mirrored)
    backbone = keras.applications.MobileNetV3Small(
        input_shape=(image_size, image_size, 3), include_top=False, weights=None, pooling="avg",
        include_preprocessing=False)
    x = keras.layers.Dropout(0.2)(backbone(x))
  else:
    raise ValueError(f"model kind must be one of {', '.join(MODELS)}, got {kind!r}.")
  x = keras.layers.Dense(num_classes, name="logits")(x)
  outputs = keras.layers.Activation("softmax", dtype="float32", name="probabilities")(x)
  return keras.Model(inputs, outputs, name=f"{kind}_classifier")
