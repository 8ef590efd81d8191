"""How many 224x224 uint8 images per second `model.fit` consumes on this
machine's accelerator, for the example models of `photo_datasets.commands.train`.

  KERAS_BACKEND=jax python benchmarks/gpu_demand.py [--steps 60] [--json out.json]

Compare it with what the input pipeline delivers (`benchmarks/loader.py`):
where the model consumes more, training is input-bound. Needs Keras 3 and a
backend (JAX, PyTorch or TensorFlow), not TensorFlow itself: the batches are
random uint8 arrays in host memory, fed as tf.data would feed them. Also times
train steps on one batch already on the device (no host transfer at all).
"""

from __future__ import annotations

import argparse
import json
import time

import keras
import numpy as np

from photo_datasets.commands.models import MODELS, build_model


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--steps", type=int, default=60)
  parser.add_argument("--batch_sizes", type=int, nargs="+", default=[64, 256])
  parser.add_argument("--json")
  args = parser.parse_args()
  print(f"keras {keras.__version__}, backend {keras.backend.backend()}", flush=True)
  rng = np.random.default_rng(0)
  results = []
  for kind in MODELS:
    for batch in args.batch_sizes:
      keras.mixed_precision.set_global_policy("mixed_float16")
      model = build_model(kind, num_classes=150, image_size=224)
      model.compile(keras.optimizers.Adam(1e-3), "sparse_categorical_crossentropy",
                    metrics=["accuracy"])
      images = rng.integers(0, 256, (batch * args.steps, 224, 224, 3), dtype=np.uint8)
      labels = rng.integers(0, 150, batch * args.steps)
      model.fit(images[:batch * 5], labels[:batch * 5], batch_size=batch, epochs=1,
                verbose=0)  # compile
      start = time.perf_counter()
      model.fit(images, labels, batch_size=batch, epochs=1, verbose=0, shuffle=False)
      from_host = batch * args.steps / (time.perf_counter() - start)
      on_device = (keras.ops.convert_to_tensor(images[:batch]),
                   keras.ops.convert_to_tensor(labels[:batch]))
      model.train_on_batch(*on_device)
      start = time.perf_counter()
      for _ in range(args.steps):
        model.train_on_batch(*on_device)
      steps_only = batch * args.steps / (time.perf_counter() - start)
      row = {"model": kind, "batch": batch, "fit_from_host_images_per_s": round(from_host),
             "train_steps_on_device_images_per_s": round(steps_only)}
      print(row, flush=True)
      results.append(row)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(results, f, indent=1)


if __name__ == "__main__":
  main()
