"""Runge-Kutta tableaux: order, stage order, stability, algebraic stability."""
