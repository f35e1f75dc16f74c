// Who runs a role's rollouts: the interface the roles use, and the runner of this process. The step's sharded
// runner (src/selfplay/rollout-runner.ts, docs/scale-out.md) is the other implementation.
import type { Policy } from '../model/policy.js';
import { type Rollout, type RolloutConfig, type RolloutRequest, runRollouts, type SearchTools } from './rollout.js';

export interface RolloutRunner {
  /** The rollouts of `requests`, in request order. */
  run(requests: RolloutRequest[], config: RolloutConfig): Promise<Rollout[]>;
}

/** Rollouts in this process, with this policy and search tool (or one per corpus). */
export function localRunner(policy: Policy, searcher: SearchTools): RolloutRunner {
  return { run: (requests, config) => runRollouts(policy, searcher, requests, config) };
}
