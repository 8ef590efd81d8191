"""What the read side shares: the example models and the uint8-to-float layer."""
