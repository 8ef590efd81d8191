"""The example Keras models of `photo_datasets.train` and `photo_datasets.doctor`.

Keras only (no TensorFlow import), so they also run on any Keras 3 backend,
e.g. to measure what a GPU consumes (`benchmarks/gpu_demand.py`).
"""

from __future__ import annotations

import keras

from photo_datasets.reading.layers import rescaling_layer

MODELS = ("small", "mobilenet_v3_small")


def build_model(kind: str, num_classes: int, image_size: int, *, flip: bool = False) -> keras.Model:
  """uint8 (B, S, S, 3) in, class probabilities out, under the global dtype
  policy; the softmax is float32 so mixed precision keeps a stable output and loss.
  With `flip`, the model mirrors half its training images left to right itself,
  on the accelerator (fed by `pipeline.training_dataset(..., flip=False)`)."""
  inputs = keras.Input((image_size, image_size, 3), dtype="uint8", name="image")
  mirrored = keras.layers.RandomFlip("horizontal", name="flip")(inputs) if flip else inputs
  if kind == "small":  # A few strided convolutions: seconds per epoch on the samples, on 2 CPU cores.
    x = rescaling_layer((0.0, 1.0))(mirrored)
    for filters in (16, 32, 64):
      x = keras.layers.Conv2D(filters, 3, strides=2, padding="same", use_bias=False)(x)
      x = keras.layers.BatchNormalization()(x)
      x = keras.layers.ReLU()(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
  elif kind == "mobilenet_v3_small":
    x = rescaling_layer((-1.0, 1.0))(mirrored)  # What MobileNetV3 expects without its own preprocessing.
    backbone = keras.applications.MobileNetV3Small(
        input_shape=(image_size, image_size, 3), include_top=False, weights=None, pooling="avg",
        include_preprocessing=False)
    x = keras.layers.Dropout(0.2)(backbone(x))
  else:
    raise ValueError(f"model kind must be one of {', '.join(MODELS)}, got {kind!r}.")
  x = keras.layers.Dense(num_classes, name="logits")(x)
  outputs = keras.layers.Activation("softmax", dtype="float32", name="probabilities")(x)
  return keras.Model(inputs, outputs, name=f"{kind}_classifier")
