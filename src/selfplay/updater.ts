// Turning judged rollout groups into GRPO updates of one role's adapter. The step sees only the interface;
// the GRPO implementation lives here and tests substitute a recording double.
import { type GroupAdvantageOptions, groupAdvantages } from '../../kernels/group-advantage.js';
import type { LoraAdapter } from '../model/lora.js';
import type { CausalLM } from '../model/qwen3.js';
import { type GrpoUpdateConfig, type GrpoUpdateMetrics, grpoUpdate, holdTransposesIfRoom, recomputesLayers, type TrainingSequence } from '../rl/grpo-update.js';
import { MemoryBudgetError, type MicroBatchPlan, planMicroBatches } from '../rl/memory-budget.js';
import { tokensOf } from '../rl/sequence-layout.js';
import type { AdamW } from '../rl/optimizer.js';
import { tf } from '../tensor/backend.js';
import type { Rollout } from '../agent/rollout.js';

export type Role = 'proposer' | 'solver';

/** One GRPO group: rollouts from the same prompt and their scalar rewards. */
export interface RolloutGroup {
  rollouts: Rollout[];
  rewards: number[];
}

/** What one role's update reports (a subset of the GRPO update's own metrics). */
export type RoleUpdateMetrics = Pick<GrpoUpdateMetrics, 'loss' | 'pgLoss' | 'kl' | 'clipFrac' | 'entropy' | 'gradNorm' | 'lr' | 'tokensPerSecond' | 'sequences'>;

export interface PolicyUpdater {
  /** One update of `role` from its groups; undefined when there was nothing to train on. */
  update(role: Role, groups: readonly RolloutGroup[]): Promise<RoleUpdateMetrics | undefined>;
}

/** What the advantage kernel is asked for: the mode and the std epsilon (docs/method.md, "GRPO"). */
export type AdvantageSettings = Pick<GroupAdvantageOptions, 'mode' | 'eps'>;

/**
 * Group-normalized advantages (docs/method.md, "GRPO") through the custom kernel, one group size at a time.
 * A group of one gets A = R.
 */
export async function advantagesOf(groups: readonly RolloutGroup[], settings: AdvantageSettings = {}): Promise<number[][]> {
  const out: number[][] = groups.map(() => []);
  const bySize = new Map<number, number[]>();
  groups.forEach((g, i) => bySize.set(g.rewards.length, [...(bySize.get(g.rewards.length) ?? []), i]));
  for (const [size, idx] of bySize) {
    const rewards = idx.flatMap((i) => (groups[i] as RolloutGroup).rewards);
    const t = tf.tidy(() => groupAdvantages(tf.tensor2d(rewards, [idx.length, size]), { mode: settings.mode ?? 'grpo', ...(settings.eps !== undefined ? { eps: settings.eps } : {}) }));
    const values = Array.from(await t.data());
    t.dispose();
    idx.forEach((gi, k) => {
      out[gi] = values.slice(k * size, (k + 1) * size);
    });
  }
  return out;
}

/** A rollout as a GRPO training sequence, with its reference log-probs where a previous epoch computed them. */
export function trainingSequence(r: Rollout, advantage: number, refLogprobs: number[] | undefined): TrainingSequence {
  return {
    promptIds: r.promptIds,
    responseIds: r.responseIds,
    responseMask: r.responseMask,
    oldLogprobs: r.logprobs,
    advantage,
    samplingTemperature: r.samplingTemperature,
    ...(refLogprobs ? { refLogprobs } : {}),
  };
}

export interface TrainedRole {
  adapter: LoraAdapter;
  optimizer: AdamW;
  params: Record<string, tf.Variable>;
}

/** A heap with a fixed limit (the wasm backend): each update's micro-batches are planned to fit it. */
export interface HeapLimit {
  limitBytes: number;
  /** Bytes in use now (tensors, the model's weights among them). */
  usedBytes: () => number;
  /** Told when an update runs in smaller micro-batches than configured. */
  onSplit?: (message: string) => void;
}

/** The plan, or undefined where even one sequence does not fit (then the caller recomputes). */
function keptPlan(plan: () => MicroBatchPlan): MicroBatchPlan | undefined {
  try {
    return plan();
  } catch (e) {
    if (e instanceof MemoryBudgetError) return undefined;
    throw e;
  }
}

export class GrpoPolicyUpdater implements PolicyUpdater {
  /**
   * Reference log-probs by rollout: a role updated for several epochs on the same groups (docs/method.md,
   * "GRPO") runs the reference forward in the first only. Entries go with their rollouts.
   */
  private readonly refLogprobs = new WeakMap<Rollout, number[]>();

  constructor(
    private readonly model: CausalLM,
    private readonly roles: Record<Role, TrainedRole>,
    private readonly config: GrpoUpdateConfig,
    private readonly advantage: AdvantageSettings = {},
    private readonly heap?: HeapLimit,
  ) {}

  async update(role: Role, groups: readonly RolloutGroup[]): Promise<RoleUpdateMetrics | undefined> {
    const advantages = await advantagesOf(groups, this.advantage);
    const seqs: TrainingSequence[] = [];
    const trained: Rollout[] = [];
    groups.forEach((g, gi) =>
      g.rollouts.forEach((r, ri) => {
        if (r.responseIds.length === 0) return;
        seqs.push(trainingSequence(r, (advantages[gi] as number[])[ri] as number, this.refLogprobs.get(r)));
        trained.push(r);
      }),
    );
    if (seqs.length === 0) return undefined;
    const { adapter, optimizer, params } = this.roles[role];
    let config = this.config;
    if (this.heap) {
      // The transposes the update would hold (grpo-update.ts) are made first, so that the plan sees them.
      holdTransposesIfRoom(this.model, this.config);
      const free = this.heap.limitBytes - this.heap.usedBytes();
      const lengths = seqs.map((s) => ({ tokens: tokensOf(s) }));
      const heapLimitBytes = this.heap.limitBytes;
      const plan = (recomputeLayers: boolean): MicroBatchPlan =>
        planMicroBatches(lengths, this.config.microBatchSize, this.model.config, free, { loraRank: adapter.config.r, recomputeLayers, heapLimitBytes, what: `the ${role} update` });
      // Layers are kept or recomputed as the update would choose (recomputesLayers, src/rl/grpo-update.ts);
      // where keeping them does not fit the heap, recomputed, unless keeping them was asked for.
      const longest = Math.max(...lengths.map((l) => l.tokens));
      const keep = !recomputesLayers(this.model, adapter.config.r, longest, this.config);
      const keptChoice = !keep ? undefined : this.config.recomputeLayers === false ? plan(false) : keptPlan(() => plan(false));
      const chosen = keptChoice ?? plan(true);
      config = { ...config, recomputeLayers: keptChoice === undefined };
      // Kept layers run in the passes the heap plan allows (the pass budget may cut them further): a choice of
      // speed, not a forced split.
      if (keptChoice) config = { ...config, microBatchSize: chosen.microBatchSize };
      else if (chosen.microBatchSize < this.config.microBatchSize) {
        this.heap.onSplit?.(
          `the ${role} update runs in micro-batches of ${chosen.microBatchSize} instead of ${this.config.microBatchSize}: ${chosen.largest.sequences} × ${chosen.largest.tokens} tokens need about ${(chosen.largest.bytes / 2 ** 30).toFixed(2)} GiB (estimate) of ${(free / 2 ** 30).toFixed(2)} GiB free in the wasm heap`,
        );
        config = { ...config, microBatchSize: chosen.microBatchSize };
      }
    }
    const m = await grpoUpdate(this.model, adapter, optimizer, params, seqs, config);
    m.refLogprobs?.forEach((ref, i) => this.refLogprobs.set(trained[i] as Rollout, ref));
    return { loss: m.loss, pgLoss: m.pgLoss, kl: m.kl, clipFrac: m.clipFrac, entropy: m.entropy, gradNorm: m.gradNorm, lr: m.lr, tokensPerSecond: m.tokensPerSecond, sequences: m.sequences };
  }
}
