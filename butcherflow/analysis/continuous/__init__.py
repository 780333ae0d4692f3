"""Continuous dynamics: the order is the solver's."""
