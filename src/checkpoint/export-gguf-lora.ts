// A LoRA adapter (PEFT folder) → a GGUF LoRA adapter llama.cpp applies on top of our exported base GGUF
// (stack-measurements §6.2, from llama.cpp's src/llama-adapter.cpp and convert_lora_to_gguf.py):
//   general.type = "adapter", general.architecture = <arch>, adapter.type = "lora", adapter.lora.alpha (f32);
//   per module: `<gguf base>.weight.lora_a` with ne = [in, r] (PEFT A [r, in]) and `.lora_b` with ne = [r, out]
//   (PEFT B [out, r]); llama.cpp scales by alpha / r.
// For the `llama` GGUF arch the base q/k rows are permuted for NORM RoPE, so B's rows of q_proj and k_proj get
// the same permutation (A acts on the input side and is unchanged).
import type { ModelConfig } from '../model/config.js';
import type { ProjectionName } from '../model/qwen3.js';
import { permuteQkForNormRope } from './export-gguf.js';
import { type GgufTensorToWrite, gv, writeGguf } from '../formats/gguf.js';
import { readPeftConfig } from './peft.js';
import { PEFT_WEIGHTS_FILE } from './peft.js';
import { SafetensorsFile } from '../formats/safetensors.js';
import { join } from 'node:path';

const GGUF_MODULE: Record<ProjectionName, string> = {
  q_proj: 'attn_q',
  k_proj: 'attn_k',
  v_proj: 'attn_v',
  o_proj: 'attn_output',
  gate_proj: 'ffn_gate',
  up_proj: 'ffn_up',
  down_proj: 'ffn_down',
};

export interface ExportLoraResult {
  path: string;
  tensorCount: number;
  bytes: number;
}

export function exportGgufLora(adapterDir: string, modelConfig: ModelConfig, outPath: string): ExportLoraResult {
  const cfg = readPeftConfig(adapterDir);
  const file = new SafetensorsFile(join(adapterDir, PEFT_WEIGHTS_FILE));
  const tensors: GgufTensorToWrite[] = [];
  for (let l = 0; l < modelConfig.numLayers; l++) {
    for (const p of cfg.targets) {
      const group = p === 'gate_proj' || p === 'up_proj' || p === 'down_proj' ? 'mlp' : 'self_attn';
      const key = `base_model.model.model.layers.${l}.${group}.${p}`;
      const a = file.entry(`${key}.lora_A.weight`);
      const b = file.entry(`${key}.lora_B.weight`);
      const [r, inDim] = a.shape as [number, number];
      const [outDim] = b.shape as [number, number];
      const base = `blk.${l}.${GGUF_MODULE[p]}.weight`;
      const permute = modelConfig.architecture === 'llama' && (p === 'q_proj' || p === 'k_proj');
      tensors.push({ name: `${base}.lora_a`, type: 'F32', dims: [inDim, r], data: () => file.readFloat32(`${key}.lora_A.weight`) });
      tensors.push({
        name: `${base}.lora_b`,
        type: 'F32',
        dims: [r, outDim],
        data: () => {
          const w = file.readFloat32(`${key}.lora_B.weight`);
          return permute ? permuteQkForNormRope(w, outDim, r, modelConfig.headDim) : w;
        },
      });
    }
  }
  const metadata = [
    ['general.type', gv.string('adapter')],
    ['general.architecture', gv.string(modelConfig.architecture)],
    ['adapter.type', gv.string('lora')],
    ['adapter.lora.alpha', gv.f32(cfg.alpha)],
  ] as const;
  const bytes = writeGguf(outPath, metadata, tensors);
  return { path: outPath, tensorCount: tensors.length, bytes };
}
