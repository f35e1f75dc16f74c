// Costs in the embedded world (docs/world.md), on the wasm backend:
// - SFT throughput (all tokens through forward and backward per second) of the world's model spec
//   (DEMO_MODEL_SPEC, random init, world tokenizer) on expert transcripts of a training world;
// - one SESA step in the demo world, split by phase, from the shipped warm start (models/demo) when it exists,
//   else from the random-init model of the same spec (then every proposal is invalid: the note says which).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SFT_DEFAULTS } from '../src/sft/config.js';
import { runSft } from '../src/sft/trainer.js';
import { TRAIN_DEFAULTS } from '../src/settings/train.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
import { train } from '../src/selfplay/trainer.js';
import { repoRoot } from '../src/util/shared-data.js';
import { DEMO_MODEL_SPEC, initDemoModel, trainWorldTokenizer } from '../src/world/demo-model.js';
import { DEFAULT_EXPERT_RATES } from '../src/world/experts.js';
import { buildTranscripts, DEFAULT_TRANSCRIPT_OPTIONS, writeTranscripts } from '../src/world/transcripts.js';
import { trainingWorldSeeds } from '../src/world/world.js';
import type { BenchContext, BenchRow, BenchSuite } from './types.js';

export const suite: BenchSuite = {
  name: 'world',
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const rows: BenchRow[] = [];
    const root = mkdtempSync(join(tmpdir(), 'bench-world-'));
    try {
      const set = await buildTranscripts({ ...DEFAULT_TRANSCRIPT_OPTIONS, worldSeeds: trainingWorldSeeds(1), solverPerWorld: 48, proposerPerWorld: 16, rates: DEFAULT_EXPERT_RATES });
      const data = join(root, 'transcripts.jsonl');
      writeTranscripts(data, set.transcripts);
      const bpe = trainWorldTokenizer(set.transcripts, DEMO_MODEL_SPEC.vocabSize);
      const init = initDemoModel(join(root, 'init'), DEMO_MODEL_SPEC, bpe, 0).dir;
      const steps = ctx.quick ? 2 : 6;
      let tokens = 0;
      let seconds = 0;
      await runSft(
        { ...SFT_DEFAULTS, model: init, data, out: join(root, 'sft'), mode: 'full', maxSteps: steps, batchSize: 8, microBatchSize: 4, lr: 1e-3, saveEvery: 1000, backend: 'wasm' },
        {
          log: () => undefined,
          onStep: (r) => {
            // The first step pays for warm-up (kernels, caches): leave it out.
            if (r.step === 1) return;
            tokens += r.tokens;
            seconds += r.seconds;
          },
        },
      );
      rows.push({ case: `sft --full world spec (${(DEMO_MODEL_SPEC.hidden)}d ${DEMO_MODEL_SPEC.layers}L V${DEMO_MODEL_SPEC.vocabSize}), batch 8`, engine: 'sesa/wasm', metric: 'trained', value: tokens / Math.max(1e-9, seconds), unit: 'tok/s', notes: `${steps - 1} steps after the first` });

      const shipped = join(repoRoot(), 'models', 'demo');
      const model = existsSync(join(shipped, 'model.safetensors')) ? 'demo' : init;
      const summary = await train(
        { ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS, model, steps: 1, evalEvery: 0, evalData: undefined, seedsPerStep: ctx.quick ? 2 : 4, out: join(root, 'run'), backend: 'wasm' },
        { log: () => undefined },
      );
      const m = summary.metrics[0];
      if (m) {
        for (const [phase, s] of Object.entries(m.seconds)) {
          rows.push({ case: `SESA step in the demo world, ${m.proposals} proposals, ${m.validQuestions} valid`, engine: 'sesa/wasm', metric: phase, value: s, unit: 's', notes: model === 'demo' ? 'shipped warm start' : 'random-init model: every proposal invalid' });
        }
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
    return rows;
  },
};
