// The skills group: the solver's skill bank (docs/method.md, "The skill bank").
import { DEFAULT_SKILL_BANK_CONFIG } from '../../skills/config.js';
import { bool, choice, fixedForRun, int, num, onOff, optionalNum, optionalStr, str } from '../setting.js';

const B = DEFAULT_SKILL_BANK_CONFIG;

export const SKILLS_SETTINGS = {
  skills: onOff(true, {
    help: 'the skill bank (off: no bank at all; --recipe ssp turns it off)',
    resume: fixedForRun('the run was trained with this skill path; start a new run for another'),
  }),
  priming: bool(true, { help: 'start the bank from the seed cards and the priming cards (memory priming); --no-priming: empty' }),
  seedCards: bool(true, {
    help: "with --priming: the project's hand-written seed cards (written for a real model's open-domain questions) among the priming cards; --no-seed-cards: the priming cards alone",
    resume: fixedForRun('the bank was primed when the run started'),
  }),
  primingCards: optionalStr({
    help: "a JSONL file of cards (as `skills export` writes) that also prime a new bank, after the seed cards; unset: the model folder's priming-cards.jsonl when it has one",
    resume: fixedForRun('the bank was primed when the run started'),
  }),
  distill: bool(true, { help: 'failure distillation into new cards; --no-distill: off' }),
  embedder: choice(['e5', 'lexical'], 'e5', {
    tiny: 'lexical',
    help: 'skill embedder for retrieval and dedup',
    resume: fixedForRun("the bank's card embeddings were made by this embedder"),
  }),
  e5Model: str('intfloat/e5-base-v2', { help: 'E5 model folder or name', resume: fixedForRun("the bank's card embeddings were made by this model") }),
  skillsTopK: int(B.topK, { help: 'k, skill cards retrieved per question' }),
  skillsMinScore: num(B.minScore, { min: -1, max: 1, help: "of the top k, only cards whose cosine to the question is at least this are given (−1: the top k whatever their score, as the paper; docs/method.md, \"The skill bank\")" }),
  queueCapacity: int(B.queueCapacity, { help: 'failure queue capacity (records)' }),
  consolidateEvery: int(B.consolidateEvery, { help: 'consolidate every N steps ...' }),
  consolidateMinPending: int(B.minPending, { help: '... when at least this many failure records are pending ...' }),
  consolidateMaxSelected: int(B.maxSelected, { help: '... distilling at most this many' }),
  dedupThreshold: optionalNum({ min: -1, max: 1, help: 'admit a new card only if its cosine to every card is ≤ this; unset: 0.93 with e5, 0.8 lexical' }),
  evictMinRetrieved: int(B.evictMinRetrieved, { min: 0, help: 'evict a non-seed card retrieved at least this often with helpful − hurt < 0' }),
  maxCards: int(B.maxCards, { help: 'bank cap; over it the lowest-scoring non-seed cards go' }),
  renderTokenBudget: int(B.renderTokenBudget, { help: 'tokens of rendered cards in the solver prompt' }),
  failureEvidenceChars: int(2000, { help: 'characters of retrieved evidence kept in a failure record' }),
  queueFailures: choice(['frontier', 'all'], 'frontier', {
    help: 'which wrong answers enter the failure queue: frontier = those of questions the group sometimes solves (0 < p̂ < 1, the paper); all = every well-formed wrong answer (bootstrap mining, scripts/mine-priming-cards.ts)',
  }),
  cardsInGroup: choice(['all', 'half'], 'all', {
    help: "which of a question's G solver rollouts get its retrieved cards: all (the paper), or half (the others are asked without cards, so the group's advantages compare answering with and without them; docs/method.md, \"Card use\")",
  }),
  cardUtility: choice(['outcome', 'counterfactual'], 'outcome', {
    help: "how a card's helpful/hurt counts are kept: outcome = per rollout that had it, helpful when correct, hurt when wrong (the paper); counterfactual (ours, needs --cards-in-group half) = per split group, helpful when the rollouts with the cards earned more than those without, hurt when less (docs/method.md, \"Card use\")",
  }),
  distillEvidenceChars: int(B.distillEvidenceChars, { help: 'characters of evidence put into a distillation prompt' }),
  distillConcurrency: int(B.distillConcurrency, { help: 'distiller calls in flight at once' }),
  distillMaxTokens: int(B.distillMaxTokens, { help: "the distiller's reply budget (tokens)" }),
};
