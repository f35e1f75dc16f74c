// The proposer group: which questions are valid and what a proposal earns (docs/method.md, "Validating
// questions" and "Rewards").
import { bool, int, num } from '../setting.js';

export const PROPOSER_SETTINGS = {
  frontier: bool(true, { help: 'frontier reward r_p = 4·p̂·(1 − p̂), −λ at p̂ ∈ {0, 1}; --no-frontier: r_p = 1 − p̂' }),
  lambda: num(0.5, { min: 0, help: 'λ, the frontier penalty at p̂ ∈ {0, 1}' }),
  invalidReward: num(-1, { help: 'r_invalid, the reward of an invalid question' }),
  questionMinChars: int(10, { help: 'a valid question has at least this many characters' }),
  questionMaxChars: int(1000, { help: '... and at most this many' }),
  questionMinWords: int(10, { help: '... and at least this many words' }),
  minDistinctQueries: int(2, { min: 0, help: 'a valid proposal made at least this many distinct searches' }),
  rejectRepeatedQueries: bool(true, { help: 'a proposal that repeats a search query is invalid (repeated-query), as in SSP' }),
};
