import { initBackend, tf } from '../src/tensor/backend.js';
import { CausalLM } from '../src/model/qwen3.js';
import { countTargets, maskedNll } from '../src/sft/nll.js';
import { COPY_DRILL_DEFAULTS, drillSequence } from '../src/world/copy-drill.js';
import { Rng } from '../src/util/rng.js';
await initBackend('wasm', { threads: 1 });
for (const dir of process.argv.slice(2)) {
  const model = await CausalLM.load(dir);
  for (const [lo, hi] of [[10, 74], [300, 1900]] as const) {
    const rng = new Rng(123);
    const batch = Array.from({ length: 32 }, () => drillSequence({ ...COPY_DRILL_DEFAULTS, firstId: lo, lastId: hi }, rng));
    const loss = tf.tidy(() => maskedNll(model, batch, countTargets(batch), { padTokenId: 0 }).dataSync()[0]);
    console.log(dir.split('/').slice(-3).join('/'), `ids ${lo}-${hi}`, loss!.toFixed(3));
  }
  model.dispose();
}
