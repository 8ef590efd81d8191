"""`import korean_food` registers the `korean_food` TFDS builder."""

from korean_food.classes import FoodClass, food_classes
from korean_food.korean_food_dataset_builder import Builder

__all__ = ["Builder", "FoodClass", "food_classes"]
