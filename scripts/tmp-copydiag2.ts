import { readFileSync } from 'node:fs';
import { initBackend, tf } from '../src/tensor/backend.js';
import { CausalLM } from '../src/model/qwen3.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { parseTranscriptLine, renderTranscript } from '../src/sft/transcript.js';
await initBackend('wasm', { threads: 1 });
const tok = await loadTokenizer('/work/runs/demo-model3/init');
const lines = readFileSync(process.env.DATA ?? '/work/runs/demo-model3/transcripts.jsonl', 'utf8').trim().split('\n').filter((l) => !process.env.KIND || l.includes(process.env.KIND));
const sOpen = tok.encode('<search>')[0]!, sClose = tok.encode('</search>')[0]!;
for (const dir of process.argv.slice(2)) {
  const model = await CausalLM.load(dir);
  let qn = 0, qs = 0, other = 0, on = 0, f = 0, fn = 0;
  for (let k = 0; k < 30; k++) {
    const t = renderTranscript(parseTranscriptLine(lines[k * 7]!, 'x', k), tok);
    if (!process.env.KIND && !lines[k * 7]!.includes('"role":"tool"')) continue;
    const ids = t.ids.slice(0, 700);
    const lp = tf.tidy(() => {
      const h = model.forward([ids]);
      const logits = model.logits(tf.reshape(h, [-1, model.config.hiddenSize]) as tf.Tensor2D);
      return tf.logSoftmax(logits).arraySync() as number[][];
    });
    // first <search> ... </search> span after the prompt (mask 1)
    let inQ = false;
    for (let i = 1; i < ids.length; i++) {
      const nll = -lp[i - 1]![ids[i]!]!;
      if (t.mask[i] === 1 && ids[i - 1] === sOpen) inQ = true;
      if (ids[i] === sClose) { if (inQ) break; }
      if (inQ) { if (ids[i - 1] === sOpen) { f += nll; fn++; } else { qs += nll; qn++; } } else if (t.mask[i] === 1) { other += nll; on++; }
    }
  }
  console.log(dir.split('/').slice(-2).join('/'), 'first query token', (f / fn).toFixed(3), 'rest of query', (qs / qn).toFixed(3), `(${qn} tokens)`, 'other assistant NLL', (other / on).toFixed(3));
  model.dispose();
}
