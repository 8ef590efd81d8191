"""What the read side shares: opening a built config, argument checks, the cache policy, the uint8 layer."""
