// GRPO updates on N worker processes (docs/scale-out.md): the groups are split into contiguous shards (a
// group never spans workers), the pool takes one data-parallel step, and this process's adapter and optimizer
// state are then set to rank 0's, so the next rollouts and the checkpoints see the updated adapter. The
// rollouts themselves still run in this process. As in the in-process updater, a role updated for several
// epochs on the same groups carries the workers' reference log-probs of the first into the later ones.
import type { DataParallelPool } from '../parallel/coordinator.js';
import { shard } from '../parallel/coordinator.js';
import type { TrainingSequence } from '../rl/grpo-update.js';
import type { Rollout } from '../agent/rollout.js';
import { tf } from '../tensor/backend.js';
import { type AdvantageSettings, advantagesOf, type PolicyUpdater, type Role, type RoleUpdateMetrics, type RolloutGroup, type TrainedRole, trainingSequence } from './updater.js';

export class DataParallelPolicyUpdater implements PolicyUpdater {
  /** Reference log-probs by rollout, as the workers computed them (docs/method.md, "GRPO"). */
  private readonly refLogprobs = new WeakMap<Rollout, number[]>();

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
    const trained: Rollout[] = [];
    const perGroup: TrainingSequence[][] = groups.map((g, gi) =>
      g.rollouts
        .map((r, ri) => ({ r, ri }))
        .filter(({ r }) => r.responseIds.length > 0)
        .map(({ r, ri }) => {
          trained.push(r);
          return trainingSequence(r, (advantages[gi] as number[])[ri] as number, this.refLogprobs.get(r));
        }),
    );
    const sequences = trained.length;
    if (sequences === 0) return undefined;
    // Shards are contiguous runs of whole groups: their concatenation is `trained`'s order.
    const shards = shard(perGroup, this.pool.size).map((gs) => gs.flat());
    const m = await this.pool.update(role, shards);
    if (m.refLogprobs && m.refLogprobs.length !== trained.length) throw new Error(`data-parallel update of ${role}: the workers sent ${m.refLogprobs.length} reference log-prob rows for ${trained.length} sequences`);
    m.refLogprobs?.forEach((ref, i) => this.refLogprobs.set(trained[i] as Rollout, ref));
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
