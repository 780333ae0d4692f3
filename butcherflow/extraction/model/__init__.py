"""A whole model read: its blocks, each block's fields and call, the depth method across
the stack (`read.py`), and a new model rewired from the reading, saved and loaded back
(`rewire.py`, `pretrained.py`; the layer-level rewiring is `..layer.rewire`)."""
