// Damaged checkpoints and adapters (issue 48, findings 1, 3 and 8): `eval --run` never evaluates another
// checkpoint than the one it names (a damaged newest one is refused, saying why and which older one is whole;
// a --step the run does not have is refused listing those it has), and an adapter damaged behind an intact
// header is refused on load (eval --adapter, generate --adapter): by the SHA-256 its header records, by the
// checkpoint manifest it sits in, and by a non-finite weight.
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync, closeSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planEval } from '../src/cli/eval-plan.js';
import { loadPeftAdapter, PEFT_WEIGHTS_FILE, savePeftAdapter } from '../src/checkpoint/peft.js';
import { DATA_SHA256_KEY, SafetensorsFile } from '../src/formats/safetensors.js';
import { parseModelConfig, type ModelConfig } from '../src/model/config.js';
import { LoraAdapter } from '../src/model/lora.js';
import { RunFolder } from '../src/selfplay/run-folder.js';
import { TRAIN_DEFAULTS } from '../src/settings/train.js';
import { initBackend } from '../src/tensor/backend.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';

let root: string;
let config: ModelConfig;

/** Overwrites `n` bytes at `offset` from the end of `file` (behind the header: the data section). */
function damage(file: string, n = 64): void {
  const size = readFileSync(file).length;
  const fd = openSync(file, 'r+');
  try {
    writeSync(fd, Buffer.alloc(n, 0xff), 0, n, size - n - 8);
  } finally {
    closeSync(fd);
  }
}

beforeAll(async () => {
  await initBackend('cpu');
  root = mkdtempSync(join(tmpdir(), 'sesa-damaged-'));
  config = parseModelConfig({ architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', vocab_size: 64, hidden_size: 16, intermediate_size: 24, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1, head_dim: 8, max_position_embeddings: 64, rms_norm_eps: 1e-6, rope_theta: 10000, tie_word_embeddings: true }, 'config.json');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function writeAdapter(dir: string): Promise<void> {
  const a = LoraAdapter.create('solver', config, { r: 2, alpha: 4, dropout: 0, targets: ['q_proj'] }, { seed: 1, randomB: true });
  await savePeftAdapter(a, dir, { baseModel: 'm' });
  a.dispose();
}

describe('eval --run picks the checkpoint it names, or refuses', () => {
  let run: string;
  beforeAll(async () => {
    run = join(root, 'run');
    const folder = RunFolder.create(run, { ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS, out: run });
    for (const step of [1, 2, 3]) await folder.writeCheckpoint(step, { step, seed: 0, savedAt: 'now' }, (d) => writeAdapter(join(d, 'solver')));
    folder.release();
    damage(join(run, 'checkpoints', 'step-3', 'solver', PEFT_WEIGHTS_FILE));
  });

  it('a damaged newest checkpoint is refused, naming why and the newest whole one', () => {
    expect(() => planEval({ run, sampleSeed: 0 })).toThrow(
      new RegExp(`--run ${run}: checkpoint step 3, the newest, is damaged or incomplete \\(.*solver/adapter_model\\.safetensors: checksum differs from the manifest.*\\); the newest whole checkpoint before it is step 2: evaluate it with --step 2`),
    );
  });

  it('--step N evaluates exactly N; a step the run does not have lists those it has', () => {
    expect(planEval({ run, step: 2, sampleSeed: 0 }).run).toEqual({ dir: run, step: 2 });
    expect(() => planEval({ run, step: 7, sampleSeed: 0 })).toThrow(`--run ${run} --step 7: the run has no checkpoint step 7; its checkpoints are steps 1, 2, 3`);
    expect(() => planEval({ run, step: 3, sampleSeed: 0 })).toThrow(/--step 3: checkpoint step 3 is damaged or incomplete/);
  });

  it('the damaged adapter is refused on load too (its own checksum, and the manifest of the checkpoint it sits in)', () => {
    expect(() => loadPeftAdapter(join(run, 'checkpoints', 'step-3', 'solver'), 'solver', config)).toThrow(/checksum differs from the checkpoint's manifest/);
  });
});

describe('loading a damaged adapter', () => {
  it('bytes damaged behind an intact header: refused by the SHA-256 the header records', async () => {
    const dir = join(root, 'loose');
    await writeAdapter(dir);
    const file = new SafetensorsFile(join(dir, PEFT_WEIGHTS_FILE));
    expect(file.metadata[DATA_SHA256_KEY]).toMatch(/^[0-9a-f]{64}$/);
    expect(() => loadPeftAdapter(dir, 'solver', config)).not.toThrow();
    damage(join(dir, PEFT_WEIGHTS_FILE), 8);
    expect(() => loadPeftAdapter(dir, 'solver', config)).toThrow(`${join(dir, PEFT_WEIGHTS_FILE)}: the data's SHA-256 differs from the one its header records`);
  });

  it('an adapter without a recorded checksum (written elsewhere) is still refused when a weight is NaN', async () => {
    const dir = join(root, 'no-checksum');
    await writeAdapter(dir);
    // The same tensors with the header's checksum taken out, as PEFT itself writes them.
    const path = join(dir, PEFT_WEIGHTS_FILE);
    const bytes = readFileSync(path);
    const headerLen = Number(bytes.readBigUInt64LE(0));
    const header = JSON.parse(bytes.subarray(8, 8 + headerLen).toString('utf8')) as Record<string, unknown>;
    delete (header.__metadata__ as Record<string, string>)[DATA_SHA256_KEY];
    const json = Buffer.from(JSON.stringify(header).padEnd(headerLen, ' '));
    const data = Buffer.from(bytes.subarray(8 + headerLen));
    data.writeFloatLE(Number.NaN, data.length - 4);
    writeFileSync(path, Buffer.concat([bytes.subarray(0, 8), json, data]));
    expect(new SafetensorsFile(path).recordsDataChecksum).toBe(false);
    expect(() => loadPeftAdapter(dir, 'solver', config)).toThrow(/holds NaN at index \d+: the adapter is damaged \(or its run diverged\) and cannot be used/);
    // A copy of a whole checkpoint's adapter elsewhere still loads.
    cpSync(join(root, 'run', 'checkpoints', 'step-2', 'solver'), join(root, 'copy'), { recursive: true });
    expect(() => loadPeftAdapter(join(root, 'copy'), 'solver', config)).not.toThrow();
  });
});
