"""Records that are the same bytes in every process that writes them.

protobuf's upb backend (protobuf 5 and later) serialises a message's map
fields in an order that differs from one process to the next, and a
`tf.train.Example`'s features are such a map: TFDS's `ExampleSerializer`
gives another byte string for the same example in each process.
`DeterministicExampleSerializer` asks protobuf for its deterministic
serialisation (map entries by key), which every reader parses as before.

Every writer of the package's records makes its serializer from it: the
workers' own (`writing`), and TFDS's writers (the `Writer` of a build with
`disable_shuffling` or without the workers' writer, the `BeamWriter`), which
look their serializer up by name in TFDS's `example_serializer` module when
a split is written (`use_in_tfds`, called by the builders before they write).
A Beam worker unpickles TFDS's serializer as an instance of this class, so it
imports this module too.
"""

from __future__ import annotations

from typing import Any

import tensorflow_datasets as tfds

from photo_datasets import tfds_private

_TFDS_SERIALIZER = tfds.core.ExampleSerializer


class DeterministicExampleSerializer(_TFDS_SERIALIZER):  # type: ignore[misc,valid-type]
  """TFDS's `ExampleSerializer`, serialising deterministically."""

  def serialize_example(self, example: Any) -> bytes:
    record: bytes = self.get_tf_example(example).SerializeToString(deterministic=True)
    return record


def use_in_tfds() -> None:
  """Makes TFDS's writers serialise deterministically in this process (and in
  the Beam workers that run what it builds)."""
  tfds_private.serialize_examples_with(DeterministicExampleSerializer)
