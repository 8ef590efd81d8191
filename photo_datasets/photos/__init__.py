"""Per-photo work, no TensorFlow: decoding and checking, hashes, quality scores, splits."""
