"""The audit page's entries read by `bf.extract` from the installed libraries (the `audit`
extra): each library's layer built with random weights, extracted, proved and verified when the
page is built, with what differs from the paper it cites (read in the pinned source)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from ...errors import ExtractionError
from ...extraction import Extracted
from ...extraction.render import round_trip_line
from ...extraction.result import declaration_text
from ...zoo import LIBRARY_TARGETS, LibraryTarget
from ..text import cell, fence, table
from .page import verdict

X_FILE = "x_transformers/x_transformers.py"
HC_FILE = "hyper_connections/hyper_connections.py"
MHC_FILE = "hyper_connections/manifold_constrained_hyper_connections.py"

# Where each library's block differs from its paper, read in the pinned source (file:lines).
HF = "transformers/models"
FINDINGS: dict[str, tuple[str, ...]] = {
    "hf-llama": (
        f"Pre-norm (`{HF}/llama/modeling_llama.py` L296–L314): a Lie–Trotter step over the "
        "attention and the MLP with Euler sub-steps, order 1 (the layer of the Transformer "
        "papers).",
    ),
    "hf-gptj": (
        f"Attention and MLP read the same LayerNorm output and are summed "
        f"(`{HF}/gptj/modeling_gptj.py` L227–L239): one Euler step of the summed field "
        "F = F_attn + F_mlp, order 1 for that field.",
    ),
    "hf-gemma2": (
        "The sandwich norms (a norm after each branch too) belong inside the fields; named "
        "without the post-norms, `bf.extract` refuses and names `post_attention_layernorm`.",
    ),
    "hf-bert": (
        f"Post-norm (`{HF}/bert/modeling_bert.py` L293, "
        "`LayerNorm(hidden_states + input_tensor)`): the LayerNorm is "
        "applied to the residual sum, so the MLP's input is no linear combination of the state "
        "and the attention's output: not an integrator of its fields (refused, naming "
        "`attention.output.LayerNorm`).",
    ),
    "hf-deepseek-v4": (
        f"`DeepseekV4HyperConnection` (`{HF}/deepseek_v4/modeling_deepseek_v4.py` L952–L996): "
        "the 'pre' weights σ(·) + ε give U with U 1 = Σ pre ≠ 1 (a stage reads a rescaled "
        "state: order 0 at every token), the 'post' weights 2σ(·) ∈ (0, 2) give B, and "
        "V = combᵀ after a finite Sinkhorn that ends normalising comb's columns (V's rows, "
        "with + ε): V ≥ 0 and ‖V‖∞ ≤ 1 at every token, so V and its products across layers "
        "are power-bounded whatever the iterations, while V 1 = 1 and double stochasticity "
        "hold only to ε and the Sinkhorn residual. The weights are computed in float32 "
        "(`.float()`, L967–L970) and applied to the streams in their own dtype.",
    ),
    "x-default": (
        "A pre-norm stack is one Euler step per branch, in turn: a Lie–Trotter splitting of its "
        f"branches, order 1 ({X_FILE} L3660–L3717). The stack's final LayerNorm (`final_norm`, "
        "L3155–L3157, on by default) is the read-out after the integrator; extracted with it, "
        "the output is no linear combination and `bf.extract` names `final_norm`.",
    ),
    "x-decoder": (
        "The causal stack with cross-attention composes its three branches as the encoder "
        "does: one Euler step each, the cross-attention's context an argument of its field.",
    ),
    "x-macaron": (
        "The paper's layer (Eq. 14–16) is Strang–Marchuk: half steps of one feed-forward G "
        "around attention, order 2. x-transformers builds two feed-forwards with their own "
        f"weights and norms and scales each by ½ (`Scale(0.5, ...)`, {X_FILE} L3009, L3237): "
        "with the two feed-forwards as fields each is advanced by h/2 once, an inconsistent "
        "splitting (order 0); read as P = ½FFN₁, Q = ½FFN₂ it is a Lie–Trotter step (order 1, "
        "the hand-cited entry above). Order 2 needs FFN₁ = FFN₂.",
    ),
    "x-sandwich": (
        "Sandwich-LN (CogView) puts a norm on each branch's output, inside the branch "
        f"({X_FILE} L3302, L3715): the composition is the pre-norm one. With `macaron=True` "
        "the post-branch norm cancels the ½ (LN(½u) = LN(u) up to its ε).",
    ),
    "x-streams": (
        "Hyper-connections (Zhu et al., Alg. 2) mix the streams with a learned matrix; mHC "
        "(arXiv:2512.24880) constrains it to be doubly stochastic with Sinkhorn and puts a "
        f"sigmoid on the read weights and 2·sigmoid on the write weights. {X_FILE} L1436 "
        "rearranges the mixing logits with `'... (s1 s2) -> ... s1 s2', s2=streams` although "
        "their last axis holds only the r output streams: s1 = 1, and Sinkhorn (L1364–L1374) "
        "normalises a 1×r matrix, whose softmax over an axis of length 1 is 1. Every entry of "
        "the mixing matrix is exactly 1, whatever the learned weights and the iterations: "
        "V = 11ᵀ sums all streams into every stream at every branch. V 1 = 4·1 (not "
        "preconsistent) and V has the eigenvalue 4 (not zero-stable): a depth-1 stack "
        "multiplies its input by 4³ = 64 (2 branches and the summed read-out).",
    ),
    "x-streams-no-sinkhorn": (
        "With `hyper_conn_sinkhorn_iters=0` the extracted V is the same all-ones matrix: the "
        "iterations change nothing (see the entry above).",
    ),
    "x-value-residual": (
        "Value residuals (ResFormer) hand the first attention's values to every later "
        f"attention (`value_residual`, {X_FILE} L3690–L3703): a later attention is a function "
        "of its stage value and of the first attention's stage value, not a field of its own "
        "stage alone. The coefficients read as the pre-norm composition and the round trip "
        "passes because it replays the recorded values; `rewire` refuses, naming "
        "`value_residual`, since a new integrator would feed the attention stale values.",
    ),
    "x-integrate-layers": (
        f"LIMe (`DynamicLIMe`, {X_FILE} L1549–L1591, L3665): a branch reads a per-token softmax "
        "mixture of the states before every earlier layer, while the residual adds its output "
        "to the current state. The feed-forward's stage holds the attention's output with a "
        "weight w ∈ (0, 1), the output with weight 1: an additive Runge-Kutta method of the two "
        "fields, A = [[0, 0], [w, 0]], b = [1, 1], w per token. Over trees coloured by field it "
        "has order 1 at every token, and would have order 1 still at w = 1/2 (the condition "
        "[τ_attn]_attn = 1/2 needs the attention's own output in its weight): mixing earlier "
        "states buys no order. With depth ≥ 2 the later attentions read three different "
        "mixtures (queries, keys, values): one field at three states, which no declaration "
        "holds.",
    ),
    "hc-static": (
        f"`width_connection`/`depth_connection` ({HC_FILE} L263–L372) are a general linear "
        "method with one stage: U = α[:, 0]ᵀ, V = α[:, 1:]ᵀ, B = β, recovered exactly. Nothing "
        "keeps β = 1, the consistency condition when every stream starts at y: a learned β ≠ 1 "
        "makes the step inconsistent (order 0) although V is doubly stochastic.",
    ),
    "hc-init": (
        f"As initialised ({HC_FILE} L224–L232): U reads stream `layer_index % r`, V = I, B = 1: "
        "an Euler step on every stream, order 1, zero-stable. Issue #8 of the package: before "
        "the fix (commit 215116f), `width_connection` returned the residuals unmixed, so V = I "
        "whatever α; the pinned release applies the mixing (the static entry's V is not I).",
    ),
    "hc-dynamic": (
        "Dynamic weights add scale·tanh(norm(h) W) to α and β per token (L288–L306): V 1 = 1 "
        "and U 1 = 1 hold at no token in general, so the per-token method is not preconsistent; "
        "every per-token coefficient stays within the scale of its static value.",
    ),
    "hc-mhc": (
        f"mHC computes in float32 whatever its input (`normed.float()`, `residuals.float()`, "
        f"{MHC_FILE} L359, L410): its output is a combination of the state and the branch "
        "only to float32 round-off (relative residual ~6e-8), so `bf.extract` reads the "
        "coefficients to 1e-6 and declares them numeric with `precision = 1e-6` (a condition "
        "those digits cannot decide is undetermined, never met). Its 20 Sinkhorn iterations "
        "(L57–L59) leave V doubly stochastic at every token within that precision (worst "
        "row or column sum off by ~2e-7), so V 1 = 1 and ‖V‖ ≤ 1 hold to 1e-6 and V is "
        "power-bounded; U 1 ≠ 1 (sigmoid read weights), so the block is not preconsistent "
        "(order 0 at every token). As initialised, the read weights are "
        "σ(1) ≈ 0.73 on one stream and σ(0) = ½ on the others (U 1 ≈ 2.23: the branch reads "
        "2.23·y), and the write weights 2σ(1) ≈ 1.46.",
    ),
    "hc-fractional": (
        "Frac-connections (arXiv:2503.14125) give each fraction of the feature axis its own "
        f"weights. The static α is laid out as [views·m | I] ({HC_FILE} L224–L232) but read "
        "fraction-major (`split_fracs`, L297): as initialised with one stream and two "
        "fractions, the branch reads fraction 0 twice and never fraction 1; with four streams, "
        "fraction 0 moves one stream along (stream 0's is duplicated, stream 3's dropped). "
        "The static β (ones, L242, laid out per stream and fraction at L311) is broadcast over "
        "the branch's output fractions (`depth_connection`, L357): each output fraction gets "
        "the sum of all of them. As initialised the layer computes "
        "[y[0] + K[0] + K[1]; y[1] + K[0] + K[1]] with K = F([y[0]; y[0]]), not y + F(y): "
        "read as fraction matrices the step is inconsistent (order 0), which the refusal "
        "states. "
        "What it computes: with the feature axis cut into m fractions, fraction j of the "
        "branch input is its own combination of the fractions of the streams, and fraction j "
        "of each output stream a combination of the stream fractions plus β_j times fraction "
        "j of the branch output. `bf.extract` finds exactly that (a per-fraction fit of the "
        "feature axis) and refuses: a butcherflow declaration combines whole states with one "
        "coefficient each, and a branch reading m different combinations at once is no stage "
        "of a general linear method over fraction streams either.",
    ),
}


def _installed(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def _run(target: LibraryTarget) -> tuple[Extracted | None, str, str, float | None]:
    """(the extraction, the title, "", the round trip), or (None, the title, the refusal, None)
    when `bf.extract` refuses."""
    made = target.factory()
    try:
        found = made.extract()
    except ExtractionError as refusal:
        return None, made.title, str(refusal), None
    return found, made.title, "", found.verify()


def entry(target: LibraryTarget, pinned: str) -> tuple[list[str], list[str]]:
    """(the summary table row, the entry's section) of one library target."""
    found, title, refusal, difference = _run(target)
    if found is None:
        row = [target.key, f"`{target.audited}`", "refused", "—"]
        verdict_text = "refused"
    else:
        verdict_text = verdict(found.report)
        varies = " (per token)" if found.varies.token else ""
        row = [target.key, f"`{target.audited}`", found.method.family + varies, verdict_text]
    lines = [f"### {target.package} {pinned}: `{target.audited}` ({target.key})", ""]
    lines += [f"Built: `{title}`. Paper: {target.paper}.", ""]
    if refusal:
        escaped = cell(refusal).replace("[", "\\[").replace("]", "\\]")  # no link syntax
        lines += [f"- `bf.extract` refuses: {escaped}"]
    lines += [f"- {finding}" for finding in FINDINGS.get(target.key, ())]
    if found is not None and difference is not None:
        fields = ", ".join(f"`{n}` = `{' → '.join(p)}`" for n, p in found.fields.items())
        lines += [
            f"- fields: {fields}",
            f"- `bf.check`: {verdict_text}; {round_trip_line(difference, found.precision)}",
            "",
            *fence(declaration_text(found.method), "toml").splitlines(),
        ]
    return row, [*lines, ""]


def library_section() -> str:
    """The page's section of extracted entries: one per `LIBRARY_TARGETS` entry whose package
    is installed, a line naming the extra for those that are not."""
    rows, sections, missing = [], [], set()
    for target in LIBRARY_TARGETS:
        pinned = _installed(target.package)
        if pinned is None:
            missing.add(target.package)
            continue
        row, lines = entry(target, pinned)
        rows.append(row)
        sections += lines
    head = [
        "## Read by `bf.extract` from the libraries",
        "",
        "Each entry is a module of an installed library (the `audit` extra pins the versions) "
        "built from a small configuration with random weights, read by `bf.extract`, proved "
        "by `bf.check` and compiled back onto the module's own sub-modules (the round trip) "
        "when this page is built. `butcherflow extract "
        "butcherflow.zoo:FACTORY` reruns one.",
        "",
    ]
    if missing:
        head += [
            f"Not installed here: {', '.join(sorted(missing))} (`pip install -e '.[audit]'`).",
            "",
        ]
    if rows:
        head += [table(["entry", "module", "declaration", "bf.check"], rows), ""]
    return "\n".join(head + sections).rstrip() + "\n"
