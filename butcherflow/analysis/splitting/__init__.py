"""Splittings: order with exact sub-flows (free algebra) and with sub-steps (additive trees)."""
