"""What `tfds build` runs: the builder base class, the scan, generation, Beam, workers, disk, shards."""
