// GRPO updates on N worker processes (docs/scale-out.md): the groups are split into contiguous shards (a
// group never spans workers), the pool takes one data-parallel step, and this process's adapter and optimizer
// state are then set to rank 0's, so the next rollouts and the checkpoints see the updated adapter. The
// rollouts themselves still run in this process.
import type { DataParallelPool } from '../parallel/coordinator.js';
import { shard } from '../parallel/coordinator.js';
import type { TrainingSequence } from '../rl/grpo-update.js';
import { tf } from '../tensor/backend.js';
import { type AdvantageSettings, advantagesOf, type PolicyUpdater, type Role, type RoleUpdateMetrics, type RolloutGroup, type TrainedRole } from './updater.js';

export class DataParallelPolicyUpdater implements PolicyUpdater {
  constructor(
    private readonly pool: DataParallelPool,
    private readonly roles: Record<Role, TrainedRole>,
    private readonly advantage: AdvantageSettings = {},
  ) {}

  /** Sends this process's adapters and optimizer states to every worker (at the start, fresh or resumed). */
  async syncWorkers(): Promise<void> {
    for (const role of ['proposer', 'solver'] as const) {
      const r = this.roles[role];
      const weights: Record<string, Float32Array> = {};
      for (const [k, v] of Object.entries(r.params)) weights[k] = (await v.data()) as Float32Array;
      await this.pool.load(role, weights, r.optimizer.exportState());
    }
  }

  async update(role: Role, groups: readonly RolloutGroup[]): Promise<RoleUpdateMetrics | undefined> {
    const started = performance.now();
    const advantages = await advantagesOf(groups, this.advantage);
    const perGroup: TrainingSequence[][] = groups.map((g, gi) =>
      g.rollouts
        .map((r, ri) => ({ r, ri }))
        .filter(({ r }) => r.responseIds.length > 0)
        .map(({ r, ri }) => ({ promptIds: r.promptIds, responseIds: r.responseIds, responseMask: r.responseMask, oldLogprobs: r.logprobs, advantage: (advantages[gi] as number[])[ri] as number, samplingTemperature: r.samplingTemperature })),
    );
    const sequences = perGroup.reduce((a, g) => a + g.length, 0);
    if (sequences === 0) return undefined;
    const shards = shard(perGroup, this.pool.size).map((gs) => gs.flat());
    const m = await this.pool.update(role, shards);
    // This process generates the next rollouts and writes the checkpoints: it takes rank 0's adapter and state.
    const r = this.roles[role];
    const weights = await this.pool.weights(role, 0);
    for (const [k, v] of Object.entries(r.params)) {
      const w = weights[k];
      if (!w) throw new Error(`data-parallel update of ${role}: rank 0 sent no '${k}'`);
      tf.tidy(() => v.assign(tf.tensor(w, v.shape)));
    }
    r.optimizer.importState(await this.pool.optimizerState(role));
    const processed = perGroup.flat().reduce((a, s) => a + s.promptIds.length + s.responseIds.length, 0);
    return { loss: m.loss, pgLoss: m.pgLoss, kl: m.kl, clipFrac: m.clipFrac, entropy: m.entropy, gradNorm: m.gradNorm, lr: m.lr, tokensPerSecond: processed / ((performance.now() - started) / 1000), sequences };
  }
}
