"""What the read side shares.

Opening a built config, argument checks, the cache policy, the uint8 layer.
"""
