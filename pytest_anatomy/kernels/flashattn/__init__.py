"""FlashAttention forward rungs and flash-decoding in Triton; registry.py is the ladder."""
