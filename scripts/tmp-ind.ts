import { rmSync, copyFileSync } from 'node:fs';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import { writeInductionInit } from '../src/world/induction-init.js';
import { initBackend, tf } from '../src/tensor/backend.js';
import { CausalLM } from '../src/model/qwen3.js';
import { countTargets, maskedNll } from '../src/sft/nll.js';
import { COPY_DRILL_DEFAULTS, drillSequence } from '../src/world/copy-drill.js';
import { Rng } from '../src/util/rng.js';
const dir = '/work/runs/ind-init';
rmSync(dir, { recursive: true, force: true });
makeTinyCheckpoint({ out: dir, arch: 'qwen3', layers: 4, hidden: 128, heads: 4, kvHeads: 2, intermediate: 384, vocab: 2048, tie: true, seed: 0, maxPositions: 2048, ropeTheta: Number(process.env.THETA ?? 1e6) });
for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(`/work/runs/demo-model3/init/${f}`, `${dir}/${f}`);
writeInductionInit(dir, 0);
await initBackend('wasm', { threads: 1 });
const model = await CausalLM.load(dir);
for (const [lo, hi, g0, g1] of [[10, 74, 4, 16], [300, 1900, 4, 16], [300, 1900, 40, 200], [300, 1900, 300, 600]] as const) {
  const rng = new Rng(123);
  const batch = Array.from({ length: 16 }, () => drillSequence({ ...COPY_DRILL_DEFAULTS, firstId: lo, lastId: hi, minGap: g0, maxGap: g1 }, rng));
  const loss = tf.tidy(() => maskedNll(model, batch, countTargets(batch), { padTokenId: 0 }).dataSync()[0]);
  console.log(`ids ${lo}-${hi} gap ${g0}-${g1}`, loss!.toFixed(3), 'chance', Math.log(hi - lo).toFixed(2));
}
