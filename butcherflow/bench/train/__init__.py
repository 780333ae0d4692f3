"""The training benchmarks (`butcherflow bench train`): how fast a recipe trains beside a
reference at its sizes.

- `throughput.py`: recipes beside `torch.nn.Transformer` (a decoder-only recipe beside the
  residual LM), on the training loop's own step; `section.py` writes their table.
- `lm.py` (`--task language_model`): decoder-only recipes beside nanoGPT's GPT on packed windows.
- `timing.py`: the batches, the turns and the FLOP count every row shares; `profile.py`: where
  one step's time goes; `hardware.py`: device peaks for MFU and the memory a run used.
"""
