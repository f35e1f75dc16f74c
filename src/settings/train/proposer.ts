// The proposer group: which questions are valid and what a proposal earns (docs/method.md, "Validating
// questions" and "Rewards").
import { bool, choice, int, num } from '../setting.js';

export const PROPOSER_SETTINGS = {
  frontier: bool(true, { help: 'frontier reward r_p = 4·p̂·(1 − p̂), −λ at p̂ ∈ {0, 1}; --no-frontier: r_p = 1 − p̂' }),
  lambda: num(0.5, { min: 0, help: 'λ, the frontier penalty at p̂ ∈ {0, 1}' }),
  invalidReward: num(-1, { help: 'r_invalid, the reward of an invalid question' }),
  questionMinChars: int(10, { help: 'a valid question has at least this many characters' }),
  questionMaxChars: int(1000, { help: '... and at most this many' }),
  questionMinWords: int(10, { help: '... and at least this many words' }),
  minDistinctQueries: int(2, { min: 0, help: 'a valid proposal made at least this many distinct searches' }),
  rejectRepeatedQueries: bool(true, { help: 'a proposal that repeats a search query is invalid (repeated-query), as in SSP' }),
  hopCheck: bool(false, {
    help: "a question for a seed of two or more hops is invalid (answerable-in-one-search) when the RAG reader answers it from the passages of one search for the question itself: the seed's hop count is what the proposer was asked for, this checks that the question needs more than one search. A departure from SSP, which has no such check (docs/method.md, \"Validating questions\")",
  }),
  firstSearchCheck: bool(false, {
    help: "a question for a seed of two or more hops is invalid (answerable-from-first-search) when the RAG reader answers it from the passages of the proposer's first search alone: a question that needs its hops needs more than what the search for its answer returned. A departure from SSP, which has no such check (docs/method.md, \"Validating questions\")",
  }),
  extractionFailure: choice(['reuse', 'dummy'], 'reuse', {
    help: "what fills the solver batch's slot of a proposal that gave no valid question (SSP's extraction_failure.strategy): reuse = a question drawn from the reuse pool of recently solved questions, or nothing while the pool is empty; dummy = nothing (SSP solves a dummy question whose rewards are all 0; docs/method.md, \"The solver batch and the reuse pool\")",
  }),
  reuseThreshold: num(1, {
    min: 0,
    max: 1,
    help: "a pooled question is reused only if its success rate p̂ when last solved is at most this (SSP's reuse_success_rate_threshold; 1 = any)",
  }),
  reuseByHops: bool(false, {
    help: "a slot of a proposal for a k-hop seed that gave no valid question takes a pooled question of k hops where the pool has one (else any eligible): keeps multi-hop questions in the solver batch when few multi-hop proposals are valid. A departure from SSP, which draws from the whole pool (docs/method.md, \"The solver batch and the reuse pool\")",
  }),
  reusePoolClearEvery: int(10, { help: "the reuse pool is emptied before every step whose number is a multiple of this (SSP's pool_clear_interval, keep_ratio 0)" }),
};
