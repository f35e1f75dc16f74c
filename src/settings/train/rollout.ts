// The rollout group: how each multi-turn search rollout is sampled (docs/method.md, "Rollouts").
import { bool, int, num, optionalNum } from '../setting.js';

export const ROLLOUT_SETTINGS = {
  maxTurns: int(10, { tiny: 3, help: 'turns per rollout (one generation, then a search or the final tag)' }),
  maxNewTokens: int(512, { tiny: 40, help: 'new tokens per turn' }),
  maxResponseTokens: int(4096, { tiny: 256, help: 'tokens per rollout, tool output included' }),
  temperature: num(1.0, { min: 0, help: 'T, the rollout sampling temperature (> 0); the update scores tokens under the same T' }),
  solverTemperature: optionalNum({
    help: "the solver's rollout temperature in place of --temperature (the proposer keeps --temperature; the held-out eval is greedy)",
    check: (v) => (v === undefined || v > 0 ? undefined : `must be > 0 (the G rollouts of a group at T = 0 would be identical), got ${v}`),
  }),
  enableThinking: bool(false, { help: "Qwen3 thinking in the chat template (the template's enable_thinking)" }),
};
