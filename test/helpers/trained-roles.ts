// Both roles' LoRA adapters (q and v projections, rank 4, B random so the policy starts off the base) with
// their AdamW optimizers, for tests that drive the GRPO updater on a tiny model.
import { LoraAdapter } from '../../src/model/lora.js';
import type { CausalLM } from '../../src/model/qwen3.js';
import { AdamW } from '../../src/rl/optimizer.js';
import type { TrainedRole } from '../../src/selfplay/updater.js';

export function trainedRoles(model: CausalLM, lr: number): Record<'proposer' | 'solver', TrainedRole> {
  const make = (name: 'proposer' | 'solver'): TrainedRole => {
    const adapter = LoraAdapter.create(name, model.config, { r: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj'] }, { seed: 3, randomB: true, randomBStd: 0.1 });
    const params = Object.fromEntries(adapter.variables());
    return { adapter, params, optimizer: new AdamW(params, { lr, warmupSteps: 0, weightDecay: 0, maxGradNorm: 1, schedule: 'constant' }) };
  };
  return { proposer: make('proposer'), solver: make('solver') };
}
