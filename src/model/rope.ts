// Rotary position embeddings (rotate-half / NEOX layout, as in Hugging Face Qwen3, Qwen2 and Llama).
// Angles are computed in float64 on the JS side from the integer positions, then uploaded as f32 cos/sin.
import type { ModelConfig } from './config.js';

/** Inverse frequencies θ_i = base^(−2i/d), with Llama 3's frequency-dependent scaling when configured. */
export function inverseFrequencies(cfg: ModelConfig): Float64Array {
  const half = cfg.headDim / 2;
  const inv = new Float64Array(half);
  for (let i = 0; i < half; i++) inv[i] = 1 / cfg.ropeTheta ** ((2 * i) / cfg.headDim);
  const s = cfg.ropeScaling;
  if (s?.type === 'llama3') {
    // Llama 3.1: long wavelengths are divided by `factor`, short ones kept, the band between interpolated.
    const lowWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
    const highWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
    for (let i = 0; i < half; i++) {
      const f = inv[i] as number;
      const wavelen = (2 * Math.PI) / f;
      if (wavelen < highWavelen) continue;
      if (wavelen > lowWavelen) {
        inv[i] = f / s.factor;
        continue;
      }
      const smooth = (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
      inv[i] = (1 - smooth) * (f / s.factor) + smooth * f;
    }
  }
  return inv;
}

/** cos and sin tables of shape [positions.length, headDim/2] (row-major), for the given positions. */
export function ropeTables(invFreq: Float64Array, positions: ArrayLike<number>): { cos: Float32Array; sin: Float32Array } {
  const half = invFreq.length;
  const cos = new Float32Array(positions.length * half);
  const sin = new Float32Array(positions.length * half);
  for (let p = 0; p < positions.length; p++) {
    const pos = positions[p] as number;
    for (let i = 0; i < half; i++) {
      const angle = pos * (invFreq[i] as number);
      cos[p * half + i] = Math.cos(angle);
      sin[p * half + i] = Math.sin(angle);
    }
  }
  return { cos, sin };
}
