// The settings of the embedded default, `npx sesa-train` with no arguments (= `--model demo`): SESA in the
// generated world's training worlds (docs/world.md). They are the world's, so they live with it; the CLI layers them over the
// settings table's defaults (src/settings/train.ts) when the model is demo.
import type { TrainConfig } from '../settings/train.js';

/**
 * The embedded default (`sesa-train` with no arguments, = `--model demo`; docs/world.md, "Training in the world"):
 * SESA self-play from the demo world's warm-start model in 8 training worlds (the demo world and warm-start worlds
 * 1–7, one a step; docs/world.md, "Training worlds"), with SSP's layout at small scale: 8 seeds × 1 proposal a
 * step, a third each of 1-, 2- and 3-hop seeds, a solver batch of one question per proposal topped up from the
 * reuse pool, G = 5 (docs/method.md, "The solver batch and the reuse pool"); the top 3 cards shown; the held-out
 * eval (skills on and off) at steps 0 and 8, the lexical embedder and the scripted judge, RAG check and
 * distiller. Sized to finish in about 8 minutes on 2 cores (estimated from a 2-step run on one thread on
 * 2026-12-05, docs/world.md). Why the values differ from a real model's:
 * - 8 seeds a step, not SSP's 256: the time budget. The update's fixed cost dominates a step, so 6 seeds saved
 *   little (docs/world.md).
 * - T = 0.7: the 1M model sampled at T = 1 wrote a rule-valid question in 1 of 16 proposals.
 * - Consolidation every 2 steps on any pending failure: a 16-step world run queues 10–34 frontier failures in
 *   all, and with the general schedule (20 pending, every 10 steps) the scripted distiller never ran.
 * - Groups with all-equal rewards, most solver groups here, are left out of the updates.
 * - 4 solver epochs, the solver at lr 1e-3, the proposer at 3e-4, for 8 steps: chosen for the earlier layout (the
 *   demo world alone, every seed asked for two hops, 4 seeds × 8 proposals, G = 4), where a run had only a few
 *   solver groups with 0 < p̂ < 1 and one AdamW step on each left the held-out accuracy within a question of
 *   the warm start; the regime for this layout is to be chosen on training-world held-out questions (issue 47,
 *   item 3).
 * - A render budget of 250 tokens: the top 3 cards fit, as the paper shows 3 (the warm start's transcripts had
 *   120, one card; with 3 shown the warm start answers 15.8% of the evaluation questions with its cards, 23.1%
 *   with one, 26.0% without: docs/world.md).
 * - The bank is primed with cards mined from the warm start's bootstrap runs in training worlds, without the
 *   hand-written seed cards (written for a real model's open-domain questions, they cost this model answers).
 * The eval (at step 0 and the end) is the evaluation worlds' held-out set, 342 questions in six worlds no
 * training touched (docs/world.md, "The evaluation worlds"); --eval-limit's general default (100) is more than a
 * world's 57.
 */
export const WORLD_DEFAULTS: Partial<TrainConfig> = {
  model: 'demo',
  corpus: 'world',
  worldSeed: 0,
  embedder: 'lexical',
  steps: 8,
  seedsPerStep: 8,
  proposalsPerSeed: 1,
  groupSize: 5,
  hopMix: '1,1,1',
  trainingWorlds: 8,
  temperature: 0.7,
  maxTurns: 4,
  maxNewTokens: 64,
  maxResponseTokens: 768,
  lr: 3e-4,
  solverLr: 1e-3,
  warmupSteps: 0,
  microBatchSize: 4,
  evalEvery: 8,
  evalData: 'eval-worlds',
  // The top 3 of the mined cards fit (the warm start's transcripts had WORLD_CARD_BUDGET = 120, one card;
  // src/world/demo-model.ts).
  renderTokenBudget: 250,
  // Primed with the cards mined from the warm start's own bootstrap runs (models/demo/priming-cards.jsonl), not
  // the hand-written seed cards: on training worlds' questions the seed cards cost the warm start 7.9 points
  // [3.5, 12.3], the mined cards +0.4 [−3.5, +4.4] (docs/world.md, "Mined priming").
  seedCards: false,
  out: 'runs/world',
  saveEvery: 4,
  consolidateEvery: 2,
  consolidateMinPending: 1,
  skipUniformGroups: true,
  solverEpochs: 4,
};
