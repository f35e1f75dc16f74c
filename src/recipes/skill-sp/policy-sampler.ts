// A model role as a TextSampler (docs/recipes.md): one turn of generation per chat prompt, returned both as
// text and as the token-level rollout GRPO trains on (every generated token in the loss).
import type { ChatMessage } from '../../llm/types.js';
import type { Policy } from '../../model/policy.js';
import type { Rollout } from '../../agent/rollout.js';
import type { SampledText, TextSampler } from './iteration.js';

export class PolicySampler implements TextSampler {
  constructor(
    private readonly policy: Policy,
    /** Prompts generated together; bounds the KV cache of one batch. */
    private readonly batchSize = 16,
  ) {}

  async sample(prompts: ChatMessage[][], opts: { maxNewTokens: number; temperature: number; seed: number }): Promise<SampledText[]> {
    const out: SampledText[] = [];
    for (let start = 0; start < prompts.length; start += this.batchSize) {
      const ids = prompts.slice(start, start + this.batchSize).map((m) => this.policy.renderChat(m));
      const gens = await this.policy.generate(ids, { maxNewTokens: opts.maxNewTokens, temperature: opts.temperature, seed: opts.seed * 1009 + start, stopStrings: [] });
      gens.forEach((g, i) => {
        const text = this.policy.decode(g.ids);
        const rollout: Rollout = {
          id: `${this.policy.name}/${start + i}`,
          promptIds: ids[i] as number[],
          responseIds: g.ids,
          responseMask: g.ids.map(() => 1),
          logprobs: g.logprobs,
          // The update scores tokens under the temperature they were sampled at (1 for greedy).
          samplingTemperature: opts.temperature > 0 ? opts.temperature : 1,
          queries: [],
          retrieved: [],
          outcome: g.finishReason === 'eos' || g.finishReason === 'stop' ? 'eos' : 'budget',
          turns: 1,
          invalidActions: 0,
          text,
        };
        out.push({ text, rollout });
      });
    }
    return out;
  }
}
