// The settings of the embedded default, `npx sesa-train` with no arguments (= `--model demo`): SESA in the
// demo world (docs/world.md). They are the world's, so they live with it; the CLI layers them over the
// settings table's defaults (src/settings/train.ts) when the model is demo.
import type { TrainConfig } from '../settings/train.js';

/**
 * The embedded default (`sesa-train` with no arguments, = `--model demo`; docs/world.md): SESA self-play in the
 * demo world from its warm-start model, with the held-out eval (skills on and off) at steps 0 and 8, the lexical embedder and the scripted judge, RAG check and distiller. Sized to finish within
 * 15 minutes on 2 cores (5 min 58 s measured on 2026-12-05, docs/world.md). Why the values differ from a real model's:
 * - T = 0.7: the 1M model sampled at T = 1 wrote a rule-valid question in 1 of 16 proposals.
 * - Consolidation every 2 steps on any pending failure: a 16-step world run queues 10–34 frontier failures in
 *   all, and with the general schedule (20 pending, every 10 steps) the scripted distiller never ran.
 * - Groups with all-equal rewards, most of them here, are left out of the updates.
 * - 4 solver epochs: a run has only a few solver groups with 0 < p̂ < 1, and one AdamW step on each left the
 *   held-out accuracy within a question of the warm start.
 * - Two hops asked of every seed (--min-hops 2 --max-hops 2) and 8 proposals a seed: trained on one-hop
 *   questions alone, the solver stops searching a second time and loses the multi-hop questions it had; the
 *   proposer writes a valid two-hop question about one time in ten, so it takes 32 proposals a step to give the
 *   solver a few. With one hop asked (the earlier default) three seeds ended at SESA-Off 20.5 ± 2.0% and
 *   SESA-On 22.2 ± 1.0% against the warm start's 21.1%; with two hops asked of every seed the solver without its bank reached 27.2% (sd 2.9) at
 *   step 8 over six run seeds (docs/world.md, "Every seed asked for two hops").
 * - The solver at lr 1e-3, the proposer at 3e-4, for 8 steps: at 1e-3 the solver gains within its first
 *   updates and then drifts; with two hops asked, the held-out accuracy of run seeds 0–2 was 28.1% at step 4
 *   in all three, 27.5% at step 8 and 26.9% at step 12 (two of the three had lost their two-hop gain by then).
 * - The bank is primed with cards mined from the warm start's bootstrap runs in training worlds, without the
 *   hand-written seed cards (written for a real model's open-domain questions, they cost this model answers).
 * The in-world numbers above are those the settings were chosen on. On the evaluation worlds, with these
 * defaults, the solver without its bank gains +1.7 [−0.9, +4.2] over three run seeds and the bank costs 5.2
 * points (docs/world.md, "The speed work and the held-out result").
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
  // The card budget the warm start's transcripts were written with (WORLD_CARD_BUDGET, src/world/demo-model.ts).
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
