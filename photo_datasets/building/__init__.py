"""What `tfds build` runs: the builder base class, the scan, generation, the phases' two executors
(this machine's workers, Beam's), disk, shards."""
