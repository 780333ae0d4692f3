"""One layer: the integrator a module computes, read with probes on its fields (`read.py`),
the one-line refusals of a module that is none (`refusals.py`), and the layer rewired to
another integrator on the same sub-modules (`rewire.py`, its fields chosen in `choice.py`)."""
