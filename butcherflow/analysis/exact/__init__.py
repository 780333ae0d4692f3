"""Exact arithmetic every family shares: trees, weights, number fields, real roots."""
