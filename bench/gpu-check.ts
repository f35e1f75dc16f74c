// The device check (docs/scale-out.md, "The device check"): one run that says what the WebGPU backend does on
// the machine it runs on, in under 8 minutes on a GPU:
//   1. the adapter Dawn finds (name, limits, f16), or Dawn's reason for none;
//   2. matMul TFLOP/s at a few square sizes (f32, tfjs' WebGPU kernels);
//   3. on a tiny random Qwen3 with a LoRA adapter (the PEFT fixture that travels with the check), max |Δ| between
//      webgpu and wasm of the log-probs, of the LoRA gradients of a GRPO loss and of the adapter after one GRPO
//      update (goal ≤ 1e-4), and of wasm here against the log-probs written when the fixture was packed;
//   4. on a random Qwen3-0.6B-shaped model (28 layers, d 1024, vocab 151,936; made in the run), a GRPO update's
//      tokens/s and batch-8 decode tokens/s.
// The PEFT side of the fixture (HF transformers + peft reading the same checkpoint and adapter) is
// scripts/peft-check.py, run by scripts/gpu-check.sh after this.
//
// `npx tsx bench/gpu-check.ts --peft-dir DIR [--json FILE] [--quick]` runs it from the sources;
// scripts/gpu-check.sh runs the bundle of it that travels to the device. `--write-fixture DIR` writes the PEFT
// fixture (on wasm) instead. Exit code: 0 when every stage ran, 1 when one failed, 2 when there is no adapter.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { makeTinyCheckpoint, tinyConfigJson } from '../src/checkpoint/make-tiny.js';
import { loadPeftAdapter, savePeftAdapter } from '../src/checkpoint/peft.js';
import { writeSafetensors, type TensorToWrite } from '../src/formats/safetensors.js';
import { expectedTensors, parseModelConfig } from '../src/model/config.js';
import { generate } from '../src/model/generate.js';
import { LoraAdapter } from '../src/model/lora.js';
import { CausalLM, PROJECTIONS } from '../src/model/qwen3.js';
import { scoreBatch } from '../src/model/score.js';
import { disposeGrads } from '../src/rl/accumulate.js';
import { grpoGradients, grpoUpdate, type TrainingSequence } from '../src/rl/grpo-update.js';
import { AdamW } from '../src/rl/optimizer.js';
import { describeBackend, initBackend, tf } from '../src/tensor/backend.js';
import { describeAdapter, probeWebgpu, type WebgpuAdapterReport } from '../src/tensor/webgpu.js';
import { writeFileAtomic, writeJsonAtomic } from '../src/util/atomic.js';
import { Rng } from '../src/util/rng.js';

/** The goal for every webgpu-against-wasm and PEFT-against-ours difference (issue 39). */
export const PARITY_GOAL = 1e-4;

/** The fixture's files (written by `writePeftFixture`, read here and by scripts/peft-check.py). */
export const FIXTURE = { model: 'model', adapter: 'adapter', logprobs: 'logprobs.json' } as const;

/** The tiny random Qwen3 of the fixture: two layers, GQA, q/k norms, tied embeddings (as Qwen3-0.6B). */
const FIXTURE_MODEL = { arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, headDim: 32, intermediate: 128, vocab: 320, tie: true, seed: 39 } as const;
const FIXTURE_LORA = { r: 4, alpha: 8, dropout: 0, targets: [...PROJECTIONS] };
const FIXTURE_SEQUENCES = [24, 17, 9];
/** Tokens of each fixture sequence that are prompt in the GRPO check; the rest is response. */
const FIXTURE_PROMPT = 4;

export interface FixtureLogprobs {
  /** Token ids of each sequence. */
  sequences: number[][];
  /** logprobs[s][i] = log p(sequences[s][i+1] | sequences[s][..i]) under the base model with the adapter. */
  logprobs: number[][];
  backend: string;
  written: string;
}

/** Writes the PEFT fixture into `dir`: the tiny checkpoint, a LoRA adapter with non-zero B, and our log-probs. */
export async function writePeftFixture(dir: string): Promise<FixtureLogprobs> {
  mkdirSync(dir, { recursive: true });
  const modelDir = join(dir, FIXTURE.model);
  makeTinyCheckpoint({ out: modelDir, ...FIXTURE_MODEL });
  const model = await CausalLM.load(modelDir);
  const adapter = LoraAdapter.create('fixture', model.config, FIXTURE_LORA, { seed: 7, randomB: true, randomBStd: 0.2 });
  try {
    mkdirSync(join(dir, FIXTURE.adapter), { recursive: true });
    await savePeftAdapter(adapter, join(dir, FIXTURE.adapter), { baseModel: `../${FIXTURE.model}` });
    const rng = new Rng(5);
    const sequences = FIXTURE_SEQUENCES.map((n) => Array.from({ length: n }, () => rng.int(FIXTURE_MODEL.vocab)));
    const scored = await scoreBatch(model, sequences, { adapter });
    const out: FixtureLogprobs = { sequences, logprobs: scored.map((s) => s.logprobs), backend: tf.getBackend(), written: new Date().toISOString() };
    writeJsonAtomic(join(dir, FIXTURE.logprobs), out);
    return out;
  } finally {
    adapter.dispose();
    model.dispose();
  }
}

export function readFixtureLogprobs(dir: string): FixtureLogprobs {
  const file = join(dir, FIXTURE.logprobs);
  const raw = JSON.parse(readFileSync(file, 'utf8')) as Partial<FixtureLogprobs>;
  if (!Array.isArray(raw.sequences) || !Array.isArray(raw.logprobs) || raw.sequences.length !== raw.logprobs.length) {
    throw new Error(`${file}: fields 'sequences' and 'logprobs' must be lists of the same length`);
  }
  return raw as FixtureLogprobs;
}

/** Largest |a − b| over two equally shaped nested lists or arrays; throws on a shape mismatch. */
export function maxAbsDiff(a: ArrayLike<number>[] | ArrayLike<number>, b: ArrayLike<number>[] | ArrayLike<number>): number {
  const flat = (x: ArrayLike<number>[] | ArrayLike<number>): number[] => (x.length > 0 && typeof x[0] !== 'number' ? (x as ArrayLike<number>[]).flatMap((r) => Array.from(r)) : Array.from(x as ArrayLike<number>));
  const fa = flat(a);
  const fb = flat(b);
  if (fa.length !== fb.length) throw new Error(`maxAbsDiff: ${fa.length} values against ${fb.length}`);
  let m = 0;
  for (let i = 0; i < fa.length; i++) {
    const d = Math.abs((fa[i] as number) - (fb[i] as number));
    if (!(d <= m)) m = Number.isNaN(d) ? Number.POSITIVE_INFINITY : d;
  }
  return m;
}

interface TinyRun {
  logprobs: number[][];
  grads: Record<string, Float32Array>;
  updated: Record<string, Float32Array>;
}

/** Log-probs, LoRA gradients of a GRPO loss, and the adapter after one GRPO update, on the active backend. */
async function tinyRun(dir: string, fixture: FixtureLogprobs): Promise<TinyRun> {
  const model = await CausalLM.load(join(dir, FIXTURE.model));
  const adapter = loadPeftAdapter(join(dir, FIXTURE.adapter), 'fixture', model.config);
  try {
    const scored = await scoreBatch(model, fixture.sequences, { adapter });
    const logprobs = scored.map((s) => s.logprobs);
    const seqs: TrainingSequence[] = fixture.sequences.map((ids, i) => ({
      promptIds: ids.slice(0, FIXTURE_PROMPT),
      responseIds: ids.slice(FIXTURE_PROMPT),
      responseMask: ids.slice(FIXTURE_PROMPT).map((_, j) => (j % 5 === 3 ? 0 : 1)),
      // Off-policy on purpose (old log-probs shifted), so the ratio clip and the KL term both act.
      oldLogprobs: ((logprobs[i] as number[]).slice(FIXTURE_PROMPT - 1) as number[]).map((v, j) => v + (j % 3 === 0 ? 0.3 : -0.1)),
      advantage: [1, -0.7, 0.4][i % 3] as number,
      samplingTemperature: 1,
    }));
    const params = Object.fromEntries(adapter.variables());
    const cfg = { microBatchSize: 2, klCoef: 0.01 };
    const g = await grpoGradients(model, adapter, params, seqs, cfg);
    const grads: Record<string, Float32Array> = {};
    for (const [k, t] of Object.entries(g.grads)) grads[k] = Float32Array.from(await t.data());
    disposeGrads(g.grads);
    const optimizer = new AdamW(params, { lr: 1e-2, weightDecay: 0.01, maxGradNorm: 1 });
    await grpoUpdate(model, adapter, optimizer, params, seqs, cfg);
    const updated: Record<string, Float32Array> = {};
    for (const [k, v] of Object.entries(params)) updated[k] = Float32Array.from(await v.data());
    optimizer.dispose();
    return { logprobs, grads, updated };
  } finally {
    adapter.dispose();
    model.dispose();
  }
}

function maxAbsOverMaps(a: Record<string, Float32Array>, b: Record<string, Float32Array>): number {
  const keys = Object.keys(a).sort();
  if (keys.join() !== Object.keys(b).sort().join()) throw new Error('the two runs have different tensors');
  return Math.max(...keys.map((k) => maxAbsDiff(a[k] as Float32Array, b[k] as Float32Array)));
}

function maxAbs(m: Record<string, Float32Array>): number {
  return Math.max(...Object.values(m).map((a) => a.reduce((x, v) => Math.max(x, Math.abs(v)), 0)));
}

/** Seconds of a call that ends with a read-back (the GPU's queue drained), median of `n` after one warm-up. */
async function timeSynced(fn: () => tf.Tensor, n: number): Promise<number> {
  const once = async (): Promise<number> => {
    const t0 = performance.now();
    const out = fn();
    const probe = tf.tidy(() => tf.slice(out.reshape([-1]), [0], [1]));
    await probe.data();
    tf.dispose([out, probe]);
    return (performance.now() - t0) / 1000;
  };
  await once();
  const times: number[] = [];
  for (let i = 0; i < n; i++) times.push(await once());
  times.sort((x, y) => x - y);
  return times[Math.floor(times.length / 2)] as number;
}

/** matMul rate of an n×n×n f32 product: `reps` products per timed call, so launch and read-back cost little. */
async function matMulTflops(n: number, reps: number): Promise<number> {
  const rng = new Rng(n);
  const a = tf.tensor2d(Float32Array.from({ length: n * n }, () => rng.next() - 0.5), [n, n]);
  const b = tf.tensor2d(Float32Array.from({ length: n * n }, () => rng.next() - 0.5), [n, n]);
  try {
    const s = await timeSynced(() => tf.tidy(() => {
      let acc = tf.matMul(a, b);
      for (let i = 1; i < reps; i++) acc = tf.matMul(a, b);
      return acc;
    }), 3);
    return (2 * n ** 3 * reps) / s / 1e12;
  } finally {
    tf.dispose([a, b]);
  }
}

/** Qwen3-0.6B's shape (its config.json), with the weights random: made in the run, nothing to download. */
export const QWEN3_0_6B_SHAPE = { arch: 'qwen3', layers: 28, hidden: 1024, heads: 16, kvHeads: 8, headDim: 128, intermediate: 3072, vocab: 151_936, tie: true } as const;
/** The same family at a size a CPU test finishes (`--quick`). */
const QUICK_SHAPE = { arch: 'qwen3', layers: 2, hidden: 128, heads: 4, kvHeads: 2, headDim: 32, intermediate: 256, vocab: 2048, tie: true } as const;

/**
 * Writes a random checkpoint of `shape` (config.json and bf16 safetensors) fast: uniform weights of std 0.02
 * from one xorshift stream, norms at 1. make-tiny's per-tensor streams take minutes at this size.
 */
export function writeRandomCheckpoint(dir: string, shape: typeof QWEN3_0_6B_SHAPE | typeof QUICK_SHAPE): number {
  mkdirSync(dir, { recursive: true });
  const configJson = tinyConfigJson({ out: dir, ...shape, dtype: 'bf16', maxPositions: 40_960 });
  const config = parseModelConfig(configJson, join(dir, 'config.json'));
  let state = 0x9e3779b9;
  const half = 0.02 * Math.sqrt(3);
  const tensors = new Map<string, TensorToWrite>();
  let parameters = 0;
  for (const [name, dims] of expectedTensors(config)) {
    const n = dims.reduce((a, b) => a * b, 1);
    parameters += n;
    const data = new Float32Array(n);
    if (name.endsWith('norm.weight')) data.fill(1);
    else {
      for (let i = 0; i < n; i++) {
        state ^= state << 13;
        state ^= state >>> 17;
        state ^= state << 5;
        data[i] = ((state >>> 0) / 4294967296 - 0.5) * 2 * half;
      }
    }
    tensors.set(name, { dtype: 'BF16', shape: dims, data });
  }
  writeSafetensors(join(dir, 'model.safetensors'), tensors, { format: 'pt' });
  writeFileAtomic(join(dir, 'config.json'), `${JSON.stringify(configJson, null, 2)}\n`);
  return parameters;
}

/** GRPO update tokens/s and batch-8 decode tokens/s on a random model of `shape`. */
async function largeModelRates(shape: typeof QWEN3_0_6B_SHAPE | typeof QUICK_SHAPE, quick: boolean, log: (l: string) => void, secondsLeft: () => number): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), 'sesa-gpu-check-'));
  try {
    let t0 = performance.now();
    const parameters = writeRandomCheckpoint(dir, shape);
    const writeS = (performance.now() - t0) / 1000;
    t0 = performance.now();
    const model = await CausalLM.load(dir);
    const loadS = (performance.now() - t0) / 1000;
    log(`  random ${(parameters / 1e6).toFixed(0)}M-parameter Qwen3 (${shape.layers} layers, d ${shape.hidden}, vocab ${shape.vocab}): written in ${writeS.toFixed(1)} s, loaded in ${loadS.toFixed(1)} s`);
    const adapter = LoraAdapter.create('bench', model.config, { r: 16, alpha: 32, dropout: 0, targets: [...PROJECTIONS] }, { seed: 1 });
    try {
      const rng = new Rng(9);
      const V = shape.vocab;
      const [B, P, R] = quick ? [2, 8, 8] : [4, 64, 64];
      const seqs: TrainingSequence[] = Array.from({ length: B }, (_, i) => ({
        promptIds: Array.from({ length: P }, () => rng.int(V)),
        responseIds: Array.from({ length: R }, () => rng.int(V)),
        responseMask: Array.from({ length: R }, () => 1),
        oldLogprobs: Array.from({ length: R }, () => -Math.log(V)),
        advantage: i % 2 === 0 ? 1 : -1,
        samplingTemperature: 1,
      }));
      const params = Object.fromEntries(adapter.variables());
      const optimizer = new AdamW(params, { lr: 1e-5, weightDecay: 0.01, maxGradNorm: 1 });
      const cfg = { microBatchSize: B, klCoef: 0.01 };
      t0 = performance.now();
      await grpoUpdate(model, adapter, optimizer, params, seqs, cfg);
      const firstUpdateS = (performance.now() - t0) / 1000;
      const m = await grpoUpdate(model, adapter, optimizer, params, seqs, cfg);
      log(`  GRPO update (${B} × ${P + R} tokens, LoRA r16 on all projections, KL on): ${m.tokensPerSecond.toFixed(1)} tok/s (${m.seconds.toFixed(2)} s; the first update, with shader compilation, took ${firstUpdateS.toFixed(1)} s)`);
      const rates: Record<string, number> = { parameters, writeSeconds: writeS, loadSeconds: loadS, grpoTokensPerSecond: m.tokensPerSecond, grpoSeconds: m.seconds, firstGrpoSeconds: firstUpdateS };
      optimizer.dispose();
      if (secondsLeft() < 20) {
        log(`  decode: skipped, ${Math.max(0, secondsLeft()).toFixed(0)} s of the budget left`);
        return rates;
      }
      const prompts = Array.from({ length: 8 }, () => Array.from({ length: quick ? 4 : 16 }, () => rng.int(V)));
      const decodeTokens = quick ? 8 : 32;
      await generate(model, prompts, { maxNewTokens: 4, temperature: 1, seed: 1, stopTokenIds: [], adapter });
      // One decode step = the time between two sampled tokens of the batch (forward, logits read back, sampling).
      const stepEnds: number[] = [];
      await generate(model, prompts, { maxNewTokens: decodeTokens, temperature: 1, seed: 2, stopTokenIds: [], adapter, onStep: () => stepEnds.push(performance.now()) });
      const steps = stepEnds.slice(1).map((t, i) => (t - (stepEnds[i] as number)) / 1000).sort((x, y) => x - y);
      const stepS = steps[Math.floor(steps.length / 2)] as number;
      const decode = 8 / stepS;
      log(`  decode, batch 8 (prompts of ${prompts[0]?.length} tokens, ${decodeTokens} new): ${decode.toFixed(1)} tok/s (median step ${(stepS * 1000).toFixed(1)} ms over ${steps.length} steps)`);
      return { ...rates, decodeTokensPerSecond: decode, decodeStepSeconds: stepS };
    } finally {
      adapter.dispose();
      model.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface GpuCheckOptions {
  /** The PEFT fixture (scripts/gpu-check.sh packs it). */
  peftDir: string;
  /** Small sizes everywhere: the stages' code paths on a CPU renderer, in a test. */
  quick?: boolean;
  /** Stop starting new stages after this many seconds (the lease's run must end within 8 minutes). */
  budgetSeconds?: number;
  log?: (line: string) => void;
  /** Called with the report after every stage (the command line writes it, so a killed run leaves what it had). */
  onUpdate?: (report: GpuCheckReport) => void;
}

export interface GpuCheckReport {
  date: string;
  node: string;
  /** The adapter, or undefined with `noAdapter` saying why. */
  adapter?: WebgpuAdapterReport;
  noAdapter?: string;
  matmul: Array<{ n: number; tflops: number }>;
  tiny?: { logprobs: number; grads: number; gradScale: number; updated: number; wasmAgainstFixture: number; goal: number; pass: boolean };
  large?: Record<string, number>;
  /** Stages that threw, with their error; stages skipped for time. */
  failures: string[];
  skipped: string[];
  seconds: number;
}

/** Runs the stages in order (see the file header); a stage that throws is reported and the others still run. */
export async function runGpuCheck(opts: GpuCheckOptions): Promise<GpuCheckReport> {
  const log = opts.log ?? ((l: string) => process.stdout.write(`${l}\n`));
  const started = performance.now();
  const budget = opts.budgetSeconds ?? 420;
  const elapsed = (): number => (performance.now() - started) / 1000;
  const report: GpuCheckReport = { date: new Date().toISOString(), node: process.version, matmul: [], failures: [], skipped: [], seconds: 0 };
  const stage = async (name: string, needSeconds: number, body: () => Promise<void>): Promise<void> => {
    if (elapsed() + needSeconds > budget) {
      report.skipped.push(`${name} (${elapsed().toFixed(0)} s of the ${budget} s budget used)`);
      log(`${name}: skipped, ${elapsed().toFixed(0)} s of the ${budget} s budget used`);
      return;
    }
    try {
      await body();
    } catch (err) {
      const msg = err instanceof Error ? err.message.split('\n')[0] : String(err);
      report.failures.push(`${name}: ${msg}`);
      log(`${name}: FAILED: ${msg}`);
    }
    report.seconds = elapsed();
    opts.onUpdate?.(report);
  };

  log(`gpu-check ${report.date}, Node ${process.version}, ${process.platform}-${process.arch}`);
  const probe = probeWebgpu();
  if (!probe.ok) {
    report.noAdapter = probe.reason;
    log(`adapter: none: ${probe.reason}`);
  } else {
    report.adapter = probe.adapter;
    const a = probe.adapter;
    const l = a.limits;
    log(`adapter: ${describeAdapter(a)}; shader-f16 ${a.f16 ? 'yes' : 'no'}; maxBufferSize ${(l.maxBufferSize / 2 ** 20).toFixed(0)} MiB, maxStorageBufferBindingSize ${(l.maxStorageBufferBindingSize / 2 ** 20).toFixed(0)} MiB, ${l.maxStorageBuffersPerShaderStage} storage buffers per stage, workgroup ${l.maxComputeInvocationsPerWorkgroup} invocations / ${l.maxComputeWorkgroupStorageSize} B shared`);
  }

  const fixture = readFixtureLogprobs(opts.peftDir);
  let wasm: TinyRun | undefined;
  await stage('tiny wasm', 30, async () => {
    await initBackend('wasm', { threads: 1 });
    wasm = await tinyRun(opts.peftDir, fixture);
    log(`tiny Qwen3 on wasm: max |Δ logp| against the packed fixture ${maxAbsDiff(wasm.logprobs, fixture.logprobs).toExponential(2)}`);
  });
  if (probe.ok) {
    await stage('webgpu backend', 60, async () => {
      const info = await initBackend('webgpu');
      log(`backend: ${describeBackend(info)}`);
    });
    if (tf.getBackend() === 'webgpu') {
      await stage('matmul', 60, async () => {
        for (const n of opts.quick ? [64, 128] : [1024, 2048, 4096]) {
          const tflops = await matMulTflops(n, opts.quick ? 2 : 8);
          report.matmul.push({ n, tflops });
          log(`matmul ${n}×${n}×${n} f32: ${tflops.toFixed(tflops < 1 ? 4 : 2)} TFLOP/s`);
        }
      });
      await stage('tiny webgpu', 60, async () => {
        if (!wasm) throw new Error('the wasm reference did not run');
        const gpu = await tinyRun(opts.peftDir, fixture);
        const d = {
          logprobs: maxAbsDiff(gpu.logprobs, wasm.logprobs),
          grads: maxAbsOverMaps(gpu.grads, wasm.grads),
          gradScale: maxAbs(wasm.grads),
          updated: maxAbsOverMaps(gpu.updated, wasm.updated),
          wasmAgainstFixture: maxAbsDiff(wasm.logprobs, fixture.logprobs),
        };
        const pass = d.logprobs <= PARITY_GOAL && d.grads <= PARITY_GOAL && d.updated <= PARITY_GOAL;
        report.tiny = { ...d, goal: PARITY_GOAL, pass };
        const verdict = (v: number): string => `${v.toExponential(2)} ${v <= PARITY_GOAL ? 'PASS' : 'MISS'}`;
        log(`tiny Qwen3 webgpu − wasm (goal ≤ ${PARITY_GOAL}): max |Δ logp| ${verdict(d.logprobs)}; max |Δ LoRA grad| ${verdict(d.grads)} (largest |grad| ${d.gradScale.toExponential(2)}); adapter after one GRPO update ${verdict(d.updated)}`);
      });
      await stage('qwen3-0.6b-shaped', opts.quick ? 30 : 150, async () => {
        log(`Qwen3-0.6B-shaped model on webgpu${opts.quick ? ' (--quick: a small model of the same family)' : ''}:`);
        report.large = await largeModelRates(opts.quick ? QUICK_SHAPE : QWEN3_0_6B_SHAPE, opts.quick === true, log, () => budget - elapsed());
      });
    }
  }
  report.seconds = elapsed();
  opts.onUpdate?.(report);
  log(`gpu-check done in ${report.seconds.toFixed(0)} s: ${report.failures.length} failed, ${report.skipped.length} skipped${report.noAdapter ? ', no adapter' : ''}`);
  return report;
}

function argValue(argv: readonly string[], flag: string): string | undefined {
  const i = argv.indexOf(flag);
  if (i < 0) return undefined;
  const v = argv[i + 1];
  if (v === undefined || v.startsWith('--')) throw new Error(`${flag} needs a value`);
  return v;
}

/** The command line (see the file header). Returns the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const fixtureOut = argValue(argv, '--write-fixture');
  if (fixtureOut !== undefined) {
    await initBackend('wasm', { threads: 1 });
    const f = await writePeftFixture(resolve(fixtureOut));
    process.stdout.write(`PEFT fixture in ${fixtureOut}: ${f.sequences.length} sequences scored on ${f.backend}\n`);
    return 0;
  }
  const peftDir = argValue(argv, '--peft-dir');
  if (peftDir === undefined) throw new Error('usage: gpu-check --peft-dir DIR [--json FILE] [--quick] [--budget SECONDS] | --write-fixture DIR');
  const budget = argValue(argv, '--budget');
  const json = argValue(argv, '--json');
  const report = await runGpuCheck({
    peftDir: resolve(peftDir),
    quick: argv.includes('--quick'),
    ...(budget !== undefined ? { budgetSeconds: Number(budget) } : {}),
    ...(json !== undefined ? { onUpdate: (r: GpuCheckReport) => writeJsonAtomic(resolve(json), r) } : {}),
  });
  return report.failures.length > 0 ? 1 : report.noAdapter !== undefined ? 2 : 0;
}

// Run from the sources (`npx tsx bench/gpu-check.ts`); the bundle has its own entry (scripts/gpu-check-pack.ts).
const invokedDirectly = process.argv[1] !== undefined && /[\\/]bench[\\/]gpu-check\.ts$/.test(process.argv[1]);
if (invokedDirectly) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`gpu-check: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
