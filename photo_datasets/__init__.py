"""Machinery shared by the package's TFDS builders (`flowers_dataset`, `korean_food`)."""
