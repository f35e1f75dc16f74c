#!/usr/bin/env python3
"""Hugging Face PEFT loads the LoRA adapter sesa-train exported, on the same tiny random Qwen3, and gives our
log-probs (docs/scale-out.md, "The device check").

The fixture folder (bench/gpu-check.ts writes it: `npx tsx bench/gpu-check.ts --write-fixture DIR`, and
`scripts/gpu-check.sh pack` packs it) holds model/ (a Hugging Face Qwen3 folder), adapter/ (our PEFT export) and
logprobs.json (the sequences and our log-probs of every token after the first, with the adapter on).

  python3 scripts/peft-check.py --fixture DIR [--json FILE]   # needs torch, transformers, peft
  python3 scripts/peft-check.py --fixture DIR --layout-only   # the files alone, standard library only

Prints one line per check; exit 0 when the log-probs are within 1e-4 of ours (or the layout is right with
--layout-only), 1 when not, 2 when torch, transformers or peft cannot be imported.
"""
import argparse
import json
import os
import struct
import sys
import time

GOAL = 1e-4
PROJECTION_GROUP = {
    "q_proj": "self_attn", "k_proj": "self_attn", "v_proj": "self_attn", "o_proj": "self_attn",
    "gate_proj": "mlp", "up_proj": "mlp", "down_proj": "mlp",
}


def read_json(path):
    with open(path, "r", encoding="utf-8") as f:
        return json.load(f)


def safetensors_header(path):
    """The tensor table of a .safetensors file: {name: {"dtype", "shape", "data_offsets"}} (no torch needed)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n).decode("utf-8"))
    header.pop("__metadata__", None)
    return header


def projection_shape(config, name):
    """[out, in] of a projection in the Hugging Face layout."""
    d = config["hidden_size"]
    hd = config.get("head_dim") or d // config["num_attention_heads"]
    q = config["num_attention_heads"] * hd
    kv = config["num_key_value_heads"] * hd
    ff = config["intermediate_size"]
    return {"q_proj": [q, d], "k_proj": [kv, d], "v_proj": [kv, d], "o_proj": [d, q],
            "gate_proj": [ff, d], "up_proj": [ff, d], "down_proj": [d, ff]}[name]


def check_layout(fixture):
    """Problems with the fixture's files, as sentences naming the file and field; [] when the layout is PEFT's."""
    problems = []
    model_dir = os.path.join(fixture, "model")
    adapter_dir = os.path.join(fixture, "adapter")
    config = read_json(os.path.join(model_dir, "config.json"))
    adapter_config_path = os.path.join(adapter_dir, "adapter_config.json")
    ac = read_json(adapter_config_path)
    for field, want in (("peft_type", "LORA"), ("task_type", "CAUSAL_LM")):
        if ac.get(field) != want:
            problems.append(f"{adapter_config_path}: field '{field}' is {ac.get(field)!r}, PEFT wants {want!r}")
    r = ac.get("r")
    if not isinstance(r, int) or r < 1:
        problems.append(f"{adapter_config_path}: field 'r' must be a positive integer, got {r!r}")
        return problems
    if not isinstance(ac.get("lora_alpha"), (int, float)):
        problems.append(f"{adapter_config_path}: field 'lora_alpha' must be a number")
    targets = ac.get("target_modules") or []
    unknown = [t for t in targets if t not in PROJECTION_GROUP]
    if unknown or not targets:
        problems.append(f"{adapter_config_path}: field 'target_modules' must name projections of {sorted(PROJECTION_GROUP)}, got {targets!r}")
        return problems
    weights_path = os.path.join(adapter_dir, "adapter_model.safetensors")
    header = safetensors_header(weights_path)
    expected = {}
    for layer in range(config["num_hidden_layers"]):
        for t in targets:
            out_dim, in_dim = projection_shape(config, t)
            module = f"base_model.model.model.layers.{layer}.{PROJECTION_GROUP[t]}.{t}"
            expected[f"{module}.lora_A.weight"] = [r, in_dim]
            expected[f"{module}.lora_B.weight"] = [out_dim, r]
    for name, shape in expected.items():
        got = header.get(name)
        if got is None:
            problems.append(f"{weights_path}: tensor '{name}' is missing")
        elif got["shape"] != shape or got["dtype"] not in ("F32", "BF16", "F16"):
            problems.append(f"{weights_path}: tensor '{name}' is {got['dtype']} {got['shape']}, PEFT wants a float {shape}")
    for name in sorted(set(header) - set(expected)):
        problems.append(f"{weights_path}: tensor '{name}' is not one PEFT reads for this config")
    ours = read_json(os.path.join(fixture, "logprobs.json"))
    for i, (ids, lps) in enumerate(zip(ours.get("sequences", []), ours.get("logprobs", []))):
        if len(lps) != len(ids) - 1:
            problems.append(f"{os.path.join(fixture, 'logprobs.json')}: sequence {i} has {len(ids)} ids but {len(lps)} log-probs (want {len(ids) - 1})")
        if any((not isinstance(t, int)) or t < 0 or t >= config["vocab_size"] for t in ids):
            problems.append(f"{os.path.join(fixture, 'logprobs.json')}: sequence {i} has ids outside [0, {config['vocab_size']})")
    return problems


def max_abs_diff(a, b):
    """Largest |a - b| over two lists of equally long lists; a length mismatch is an error, NaN counts as inf."""
    if len(a) != len(b):
        raise ValueError(f"{len(a)} sequences against {len(b)}")
    worst = 0.0
    for i, (ra, rb) in enumerate(zip(a, b)):
        if len(ra) != len(rb):
            raise ValueError(f"sequence {i}: {len(ra)} values against {len(rb)}")
        for x, y in zip(ra, rb):
            d = abs(x - y)
            if d != d:
                return float("inf")
            worst = max(worst, d)
    return worst


def hf_logprobs(fixture, device):
    """Log-probs of the fixture's sequences under transformers' Qwen3 with PEFT's adapter, and without it."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(os.path.join(fixture, "model"), attn_implementation="eager")
    base = base.to(dtype=torch.float32, device=device)
    model = PeftModel.from_pretrained(base, os.path.join(fixture, "adapter")).to(device)
    model.eval()
    sequences = read_json(os.path.join(fixture, "logprobs.json"))["sequences"]

    def score(m):
        out = []
        with torch.no_grad():
            for ids in sequences:
                x = torch.tensor([ids], dtype=torch.long, device=device)
                lp = torch.log_softmax(m(input_ids=x).logits[0].double(), dim=-1)
                out.append([lp[t, ids[t + 1]].item() for t in range(len(ids) - 1)])
        return out

    with_adapter = score(model)
    with model.disable_adapter():
        without = score(model)
    versions = {"torch": torch.__version__}
    for name in ("transformers", "peft"):
        versions[name] = sys.modules[name].__version__
    return with_adapter, without, versions


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--fixture", required=True, help="the fixture folder (model/, adapter/, logprobs.json)")
    p.add_argument("--json", help="write the result as JSON here")
    p.add_argument("--layout-only", action="store_true", help="check the files only (no torch)")
    p.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    args = p.parse_args(argv)
    result = {"goal": GOAL}
    started = time.time()

    problems = check_layout(args.fixture)
    result["layout_problems"] = problems
    print(f"peft layout: {'ok' if not problems else 'WRONG'}" + "".join(f"\n  {x}" for x in problems))
    status = 0 if not problems else 1
    if not args.layout_only:
        try:
            import torch  # noqa: F401  (checked here so that a missing package is exit 2 with its name)
            import peft  # noqa: F401
            import transformers  # noqa: F401
        except ImportError as e:
            print(f"peft check: cannot run: {e} (install torch, transformers and peft, or use --layout-only)")
            result["error"] = str(e)
            status = 2
        else:
            import torch
            device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
            ours = read_json(os.path.join(args.fixture, "logprobs.json"))
            theirs, base, versions = hf_logprobs(args.fixture, device)
            d = max_abs_diff(theirs, ours["logprobs"])
            effect = max_abs_diff(theirs, base)
            ok = d <= GOAL
            result.update({"max_abs_diff": d, "adapter_effect": effect, "device": device, "versions": versions, "ours_backend": ours.get("backend"), "pass": ok})
            print(f"peft ({', '.join(f'{k} {v}' for k, v in versions.items())}, {device}): max |Δ logp| HF PEFT − ours ({ours.get('backend')}) "
                  f"{d:.2e} {'PASS' if ok else 'MISS'} (goal ≤ {GOAL}); the adapter moves HF's log-probs by up to {effect:.2e}")
            if not ok or effect <= 10 * GOAL:
                status = 1
                if effect <= 10 * GOAL:
                    print("peft check: the adapter barely changes the log-probs, so the comparison cannot tell a loaded adapter from an ignored one")
    result["seconds"] = time.time() - started
    if args.json:
        tmp = f"{args.json}.tmp-{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
        os.replace(tmp, args.json)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
