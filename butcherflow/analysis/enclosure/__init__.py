"""Arb-ball enclosures shared by every family: elementary weights, Schur-Cohn steps."""
