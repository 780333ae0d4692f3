"""`butcherflow bench export`: how long do writing a run as a Hugging Face folder and loading it
back take?

A small language model (lm-rk4 at the `small` preset's sizes, one decoder side of 2 layers,
trained one update on `--data`, not timed) is exported and reloaded as a user does it, each step
in a fresh Python process: `butcherflow export RUN_DIR OUT_DIR --force`, then
`AutoModelForCausalLM.from_pretrained(OUT_DIR, trust_remote_code=True)` with its tokenizer and a
greedy `generate` of 20 tokens (target: the two together under 10 s). Beside them, in the same
run, what the time is made of: a fresh process that only imports torch, one that imports the
transformers classes the reload needs, and `export_run` in this process once those imports are
done (loading the save dir, writing the folder, and reloading it to check the logits and the
tokenizer). Each time is the median of the repeats, the steps interleaved.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ..experiments import PRESETS
from ..export import export_run, require_transformers
from ..train import TrainConfig, train
from . import write_section
from .order import machine
from .train.hardware import MIB

TARGET = 10.0  # seconds: export + reload (issue 36)
NEW_TOKENS = 20
IMPORT_TORCH = "import torch"
IMPORT_TRANSFORMERS = "import torch\nfrom transformers import AutoModelForCausalLM, AutoTokenizer"
RELOAD = f"""import sys
from transformers import AutoModelForCausalLM, AutoTokenizer
model = AutoModelForCausalLM.from_pretrained(sys.argv[1], trust_remote_code=True)
tokenizer = AutoTokenizer.from_pretrained(sys.argv[1], trust_remote_code=True)
prompt = tokenizer("In the beginning", return_tensors="pt")
model.generate(**prompt, max_new_tokens={NEW_TOKENS}, min_new_tokens={NEW_TOKENS})
"""


def _small_run(folder: Path, data: str, preset: str) -> Path:
    """lm-rk4 at a preset's sizes, one update (the vocabulary is cached for reruns)."""
    fields = {**PRESETS[preset].train_fields(), "encoder_layers": None, "label_smoothing": 0.0}
    save_dir = folder / "run"
    config = TrainConfig(
        "lm-rk4", data, str(save_dir), task="language_model", max_update=1, **fields
    )
    train(config)
    return save_dir


def _python(*args: str) -> Callable[[], None]:
    """A fresh `python ARGS` (quiet; a failure raises with its stderr)."""

    def run() -> None:
        done = subprocess.run(
            [sys.executable, *args],
            capture_output=True,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
            stdin=subprocess.DEVNULL,
            timeout=600,
        )
        if done.returncode:
            raise RuntimeError(f"python {' '.join(args[:3])} failed: {done.stderr[-2000:]}")

    return run


def run_export(
    output: str | Path, repeats: int, command: str, data: str = "bible:en", preset: str = "small"
) -> dict[str, float]:
    """Time the steps (module docstring), print them, and write the `export` section.

    **Arguments:**

    - `output`: the markdown file (its other sections are kept).
    - `repeats`: timings are the median of this many repeats.
    - `command`: the command line the section names.
    - `data`: the corpus the model trains its one update on.
    - `preset`: the experiments' size preset of the model (`small`; the tests' `tiny`).

    **Returns:** step name -> median seconds.
    """
    require_transformers()
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
        folder = Path(tmp)
        run_dir = _small_run(folder, data, preset)
        out = folder / "hf"
        export_run(run_dir, out)  # transformers imported here once, before the in-process step
        cli = ("-m", "butcherflow.cli", "export", str(run_dir), str(out), "--force")
        steps: dict[str, Callable[[], object]] = {
            "python -c 'import torch' (fresh process)": _python("-c", IMPORT_TORCH),
            "import torch and transformers' Auto classes (fresh process)": _python(
                "-c", IMPORT_TRANSFORMERS
            ),
            "butcherflow export RUN_DIR OUT_DIR --force (fresh process)": _python(*cli),
            "export_run in a warm process (load, write, reload and check)": lambda: export_run(
                run_dir, out, force=True
            ),
            f"from_pretrained + tokenizer + generate {NEW_TOKENS} tokens (fresh process)": (
                _python("-c", RELOAD, str(out))
            ),
        }
        load = os.getloadavg()[0]
        times: dict[str, list[float]] = {name: [] for name in steps}
        for _ in range(repeats):
            for name, step in steps.items():
                start = time.perf_counter()
                step()
                times[name].append(time.perf_counter() - start)
        weights = _size(out)
    medians = {name: statistics.median(t) for name, t in times.items()}
    _write(output, command, medians, load, repeats, weights, data, preset)
    return medians


def _size(folder: Path) -> str:
    return f"{(folder / 'model.safetensors').stat().st_size / MIB:.1f} MiB of weights"


def _write(
    output: str | Path,
    command: str,
    medians: dict[str, float],
    load: float,
    repeats: int,
    weights: str,
    data: str,
    preset: str,
) -> None:
    names = list(medians)
    export, reload = medians[names[2]], medians[names[4]]
    total = export + reload
    verdict = "PASS" if total < TARGET else "FAIL"
    lines = [
        "## Export and reload (`butcherflow bench export`)",
        "",
        f"Command: `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}). "
        f"Machine: {machine()}, CPU, load average {load:.1f} at the start (a shared machine's "
        "load stretches every row alike: compare the rows with the first, a bare `import "
        f"torch`). The model: lm-rk4 at the {preset} preset's sizes (one side), {weights}, "
        f"trained one update on `{data}`. Each time is the median of {repeats} interleaved "
        "repeats.",
        "",
        "| step | seconds |",
        "|---|--:|",
        *(f"| {name} | {seconds:.2f} |" for name, seconds in medians.items()),
        f"| **export + reload** (the two fresh processes) | **{total:.2f}** {verdict} "
        f"(target < {TARGET:g}) |",
        "",
        f"Of the {total:.2f} s, {2 * medians[names[1]]:.2f} s is the two processes importing "
        f"torch and transformers (the second row, twice) and {medians[names[3]]:.2f} s the "
        f"export's own work (the fourth row); the other "
        f"{total - 2 * medians[names[1]] - medians[names[3]]:.2f} s, which these rows do not "
        "separate, is both processes importing butcherflow (the reload imports the model "
        "classes from it), the reload's own work and first-call costs.",
    ]
    body = "\n".join(lines)
    print(body)
    write_section(output, "export", body)
