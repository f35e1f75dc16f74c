// Who runs a role's rollouts (docs/scale-out.md, "The step over N workers"): this process, or the step's
// workers. The roles build the requests (prompts rendered here, with the skills retrieved here, from the bank
// version of the step start); a sharded runner sends worker r the requests of the seeds r, r + N, … and puts
// the rollouts back in request order. A rollout samples from (the call's seed, its stream, the turn) alone,
// so the rollouts are the same whichever process runs them.
import type { RolloutRunner } from '../agent/runner.js';
import type { Rollout, RolloutConfig, RolloutRequest } from '../agent/rollout.js';
import type { SearchCounts } from './role-health.js';
import type { Role } from './updater.js';

/** What a step worker is asked to do (./step-worker.ts). */
export interface RolloutTask {
  kind: 'rollouts';
  role: Role;
  requests: RolloutRequest[];
  config: RolloutConfig;
}

export interface RolloutTaskResult {
  rollouts: Rollout[];
  /** The worker's searches for these rollouts, so the trainer counts them with its own. */
  searches: SearchCounts;
}

/** The part of the data-parallel pool a sharded runner uses (src/parallel/coordinator.ts). */
export interface TaskPool {
  readonly size: number;
  tasks(task: (rank: number) => unknown): Promise<unknown[]>;
}

/**
 * The requests of shard k (the step's seed index) go to worker k mod N; every request carries its stream
 * (its index in the whole call unless it names one), so no sample depends on which worker ran it.
 */
export class ShardedRolloutRunner implements RolloutRunner {
  constructor(
    private readonly pool: TaskPool,
    private readonly role: Role,
    private readonly onSearches?: (counts: SearchCounts) => void,
  ) {}

  async run(requests: RolloutRequest[], config: RolloutConfig): Promise<Rollout[]> {
    const n = this.pool.size;
    const byRank: Array<Array<{ index: number; request: RolloutRequest }>> = Array.from({ length: n }, () => []);
    requests.forEach((request, index) => {
      const shard = request.shard;
      if (shard === undefined || !Number.isInteger(shard) || shard < 0) throw new Error(`${this.role} rollout ${request.id}: a sharded runner needs each request's shard (the step's seed index), got ${shard}`);
      (byRank[shard % n] as Array<{ index: number; request: RolloutRequest }>).push({ index, request: { ...request, stream: request.stream ?? index } });
    });
    const results = await this.pool.tasks((rank) => ({ kind: 'rollouts', role: this.role, requests: (byRank[rank] ?? []).map((x) => x.request), config }) satisfies RolloutTask);
    const out: Rollout[] = new Array(requests.length);
    results.forEach((raw, rank) => {
      const result = raw as RolloutTaskResult;
      const mine = byRank[rank] ?? [];
      if (!result || !Array.isArray(result.rollouts) || result.rollouts.length !== mine.length) {
        throw new Error(`${this.role} rollouts: worker ${rank} returned ${Array.isArray(result?.rollouts) ? result.rollouts.length : 'no'} rollouts for ${mine.length} requests`);
      }
      result.rollouts.forEach((rollout, k) => {
        out[(mine[k] as { index: number }).index] = rollout;
      });
      this.onSearches?.(result.searches);
    });
    return out;
  }
}
