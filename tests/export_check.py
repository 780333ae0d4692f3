"""What other people's code makes of an exported folder, run in a fresh process by test_export.py.

This script never imports butcherflow: transformers loads the folders (`trust_remote_code`,
which imports the model from the folder's `modeling_butcherflow.py`), and lm-eval's `HFLM`
scores a local text file with the language model (`loglikelihood_rolling`, the harness's
perplexity request). It writes what it found as JSON.

Usage: `python export_check.py SPEC.json RESULT.json`; SPEC holds `lm` (the causal LM's folder)
with `prompts` (texts), `text` (the local text file, one document per line) and `new_tokens`,
and/or `mt` (the translation folder) with `sources` (sentences to translate).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    GenerationMixin,
    PreTrainedModel,
)


def causal(folder: str, prompts: list[str], new_tokens: int) -> dict[str, Any]:
    model = AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)  # no trust_remote_code: a plain tokenizer
    out: dict[str, Any] = {
        "classes": [isinstance(model, PreTrainedModel), isinstance(model, GenerationMixin)],
        "class": type(model).__name__,
        "prompt_ids": [],
        "cached": [],
        "uncached": [],
        "logits": [],
        "step_logits": [],
    }
    with torch.no_grad():
        for prompt in prompts:
            ids = tokenizer(prompt, return_tensors="pt")["input_ids"]
            out["prompt_ids"].append(ids[0].tolist())
            for key, cache in (("cached", True), ("uncached", False)):
                made = model.generate(ids, max_new_tokens=new_tokens, use_cache=cache)
                out[key].append(made[0, ids.shape[1] :].tolist())
            full = model(ids).logits
            out["logits"].append(full[0].tolist())
            # the prompt one token at a time through the cache: the logits of the full forward
            cache = _new_cache(model)
            steps = [
                model(ids[:, t : t + 1], cache=cache).logits[0, -1].tolist()
                for t in range(ids.shape[1])
            ]
            out["step_logits"].append(steps)
    return out


def _new_cache(model: Any) -> Any:
    """The cache the model's own generate makes (its `prepare_inputs_for_generation`)."""
    return model.prepare_inputs_for_generation(torch.zeros(1, 1, dtype=torch.long))["cache"]


def harness(folder: str, text: str) -> dict[str, Any]:
    """lm-eval's perplexity request over each line of `text` (eos ending each line, as a
    butcherflow language model is trained and evaluated), in bits per token."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    lm = HFLM(
        pretrained=folder,
        trust_remote_code=True,
        backend="causal",
        batch_size=8,
        device="cpu",
        dtype="float32",
        add_bos_token=False,  # lm-eval's prefix token is bos already
    )
    lines = [line.strip() for line in Path(text).read_text(encoding="utf-8").splitlines()]
    documents = [line + lm.tokenizer.eos_token for line in lines if line]
    requests = [Instance("loglikelihood_rolling", {}, (doc,), i) for i, doc in enumerate(documents)]
    logprob = sum(lm.loglikelihood_rolling(requests, disable_tqdm=True))
    tokens = sum(len(lm.tok_encode(doc)) for doc in documents)
    return {"nll_bits": -logprob / tokens / math.log(2), "tokens": tokens}


def seq2seq(folder: str, sources: list[str]) -> dict[str, Any]:
    model = AutoModelForSeq2SeqLM.from_pretrained(folder, trust_remote_code=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    batch = tokenizer(sources, return_tensors="pt", padding=True)
    with torch.no_grad():
        made = model.generate(**batch)
    return {
        "classes": [isinstance(model, PreTrainedModel), isinstance(model, GenerationMixin)],
        "ids": made.tolist(),
        "translations": tokenizer.batch_decode(made, skip_special_tokens=True),
    }


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    result: dict[str, Any] = {}
    if "lm" in spec:
        result["lm"] = causal(spec["lm"], spec["prompts"], spec["new_tokens"])
        result["harness"] = harness(spec["lm"], spec["text"])
    if "mt" in spec:
        result["mt"] = seq2seq(spec["mt"], spec["sources"])
    Path(sys.argv[2]).write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main()
