// The settings of the embedded default, `npx sesa-train` with no arguments (= `--model demo`): SESA in the
// generated world's training worlds (docs/world.md). They are the world's, so they live with it; the CLI layers them over the
// settings table's defaults (src/settings/train.ts) when the model is demo.
import type { TrainConfig } from '../settings/train.js';

/**
 * The embedded default (`sesa-train` with no arguments, = `--model demo`; docs/world.md, "Training in the world"):
 * SESA self-play from the demo world's warm-start model in 8 training worlds (the demo world and warm-start worlds
 * 1–7), with SSP's layout at small scale: 32 seeds × 1 proposal a step drawn over every training world, each
 * proposed, checked and solved in its own (docs/method.md, "Training corpora"), a solver batch of 8 questions
 * topped up from the reuse pool, G = 5 (docs/method.md, "The solver batch and the reuse pool"); the top 3 cards
 * shown; the held-out eval (skills on and off) at steps 0 and 8, the lexical embedder and the scripted judge, RAG
 * check and distiller. Sized to finish within 8 minutes on 2 cores (docs/world.md, "`npx sesa-train` in a fresh
 * clone"). Why the values differ from a real model's:
 * - 32 seeds a step, not SSP's 256: the time budget; 8 gave the solver about one valid two-hop question a step.
 * - One- and two-hop seeds 1 : 3, no three-hop, not the papers' thirds: the warm-start proposer turns a tenth
 *   of its two-hop seeds and a twentieth of its three-hop seeds into valid questions, half of its one-hop seeds;
 *   with thirds the solver trained on one-hop questions and lost its multi-hop answers. 32 seeds at 1 : 3 give
 *   about as many valid two-hop questions as the generator-written supply that lifted the same solver by 5–7
 *   points (docs/world.md, "What in the ideal supply carries its gain").
 * - Every training world in every step and one solver epoch, not one world a step and four epochs: four epochs
 *   at lr 1e-3 on one world's questions, then the next world's, moved the solver back and forth. With the
 *   generator's supply, mixing the worlds and one epoch kept most of its gain; with the proposer's own, SSP at
 *   this layout rose +1.7 [−3.5, +6.7] on the training worlds' held-out questions in 20 steps (run seeds 0–4;
 *   the earlier layout −1.4), SESA-Off −3.5 [−8.3, +0.7] (seeds 0–2; earlier −2.1). Chosen on the training
 *   worlds only (docs/world.md, "The layout of 2026-12-06").
 * - T = 0.7: the 1M model sampled at T = 1 wrote a rule-valid question in 1 of 16 proposals.
 * - Consolidation every 2 steps on any pending failure: a 16-step world run queues 10–34 frontier failures in
 *   all, and with the general schedule (20 pending, every 10 steps) the scripted distiller never ran.
 * - Groups with all-equal rewards, most solver groups here, are left out of the updates.
 * - The solver at lr 1e-3, the proposer at 3e-4: chosen for an earlier layout (the demo world alone, 4 seeds ×
 *   8 proposals, G = 4), where one AdamW step on a few groups left the held-out accuracy within a question of the
 *   warm start.
 * - A render budget of 250 tokens: the top 3 cards fit, as the paper shows 3 (the warm start's transcripts had
 *   120, one card; with 3 shown the warm start answers 15.8% of the evaluation questions with its cards, 23.1%
 *   with one, 26.0% without: docs/world.md).
 * - No format penalty (r_invalid = 0, as SSP) and the cards in half of each solver group (the other rollouts
 *   answer without them): with the paper's r_invalid = −1 and cards in every rollout, SESA's solver ended 5.9
 *   points under SSP's on the training worlds at this layout; with both changes it ended at 22.6% against
 *   SESA's 19.4% and SSP's 25.3% (run seeds 0–2); r_invalid = 0 alone gave 19.8%, the half-group cards alone
 *   +1.6 (seeds 0–1). On the evaluation worlds SESA-Off went from 5.0 points under SSP to 1.8 under
 *   (docs/world.md, "SESA's layout").
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
  seedsPerStep: 32,
  proposalsPerSeed: 1,
  solverBatch: 8,
  groupSize: 5,
  hopMix: '1,3,0',
  trainingWorlds: 8,
  stepCorpora: 'all',
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
  // The lexical embedder's general 0.8 merges the distiller's cards of different question shapes, which differ
  // in a word or two of one template: on training worlds 1–6, 1,280 of 17,846 pairs of decomposition cards with
  // different links score above 0.8, the median 0.62, the 99.9th percentile 0.93 (docs/world.md, "The
  // card-literate warm start"); at 0.95 a bank keeps a card per shape.
  dedupThreshold: 0.95,
  out: 'runs/world',
  saveEvery: 4,
  consolidateEvery: 2,
  consolidateMinPending: 1,
  skipUniformGroups: true,
  solverEpochs: 1,
  // SESA's two departures of 2026-12-06 (docs/world.md, "SESA's layout"; the SSP recipe fixes the first and has no
  // cards): no format penalty, and the cards in half of each solver group.
  invalidReward: 0,
  cardsInGroup: 'half',
};
