"""`import flowers_dataset` registers the `flowers_dataset` TFDS builder."""

from flowers_dataset.flowers_dataset_dataset_builder import Builder

__all__ = ["Builder"]
