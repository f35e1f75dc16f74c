// The run metrics an RL user reads first (issue 48, "what a TRL or verl user expects"): flat, conventional
// names beside the nested ones in metrics.jsonl (./src/selfplay/flat-metrics.ts), and TensorBoard event files
// written by the project (./src/formats/tensorboard.ts). The event files are read back with a decoder written
// from the TFRecord and protobuf specifications, independent of the writer (./helpers/tensorboard-reader.ts:
// its own bitwise CRC32C and protobufjs with a .proto schema of TensorBoard's Event message).
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Rollout } from '../src/agent/rollout.js';
import { crc32c, eventFile } from '../src/formats/tensorboard.js';
import { flatStepMetrics } from '../src/selfplay/flat-metrics.js';
import type { StepMetrics } from '../src/selfplay/step.js';
import { TENSORBOARD_DIR, TensorBoardLog } from '../src/selfplay/tensorboard-log.js';
import { train } from '../src/selfplay/trainer.js';
import type { RolloutGroup } from '../src/selfplay/updater.js';
import { TRAIN_DEFAULTS, type TrainConfig } from '../src/settings/train.js';
import { WORLD_DEFAULTS } from '../src/world/defaults.js';
import { crcBitwise, readEventFile } from './helpers/tensorboard-reader.js';

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sesa-run-metrics-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('the TensorBoard event file', () => {
  it("CRC32C gives the standard check value, the writer's as the reader's", () => {
    const check = new TextEncoder().encode('123456789');
    expect(crcBitwise(check)).toBe(0xe3069283);
    expect(crc32c(check)).toBe(0xe3069283);
  });

  it('reads back as a file_version event, then the scalars with their step and time', () => {
    const bytes = eventFile([{ wallTime: 1700000000.25, step: 7, scalars: { 'solver/actor/kl_loss': 0.0123, 'perf/throughput': 456.5 } }, { wallTime: 1700000001, step: 2 ** 40, scalars: { x: -1 } }], 1700000000);
    const events = readEventFile(bytes);
    expect(events).toHaveLength(3);
    expect(events[0]).toEqual({ wallTime: 1700000000, step: 0, fileVersion: 'brain.Event:2', scalars: {} });
    expect(events[1]).toEqual({ wallTime: 1700000000.25, step: 7, scalars: { 'solver/actor/kl_loss': Math.fround(0.0123), 'perf/throughput': 456.5 } });
    expect(events[2]?.step).toBe(2 ** 40);
    // A damaged byte is caught by the data CRC.
    const bad = Uint8Array.from(bytes);
    bad[bad.length - 6] = (bad[bad.length - 6] as number) ^ 0xff;
    expect(() => readEventFile(bad)).toThrow(/data CRC/);
  });

  it('one file per write, named in write order; a resume drops the files of steps after its checkpoint', () => {
    const run = join(root, 'log');
    const log = TensorBoardLog.open(run, 0);
    const paths = [log.write(0, { 'eval/skills_on/em': 0.5 }), log.write(1, { a: 1 }), log.write(2, { a: 2 }), log.write(3, { a: 3 })];
    const dir = join(run, TENSORBOARD_DIR);
    expect(readdirSync(dir).filter((n) => n.includes('tfevents')).sort()).toEqual(paths.map((p) => p.slice(dir.length + 1)));
    expect(readEventFile(readFileSync(paths[2] as string))[1]).toMatchObject({ step: 2, scalars: { a: 2 } });
    // A killed writer's staged file is swept; a resume from checkpoint step 1 keeps steps 0 and 1.
    mkdirSync(join(dir, '.staging'), { recursive: true });
    writeFileSync(join(dir, '.staging', 'leftover'), 'x');
    const resumed = TensorBoardLog.open(run, 1);
    expect(readdirSync(dir).filter((n) => n.includes('tfevents')).map((n) => /step-(\d+)$/.exec(n)?.[1])).toEqual(['0', '1']);
    expect(existsSync(join(dir, '.staging', 'leftover'))).toBe(false);
    const next = resumed.write(2, { a: 20 });
    // The resumed process's files sort after the first one's (its start time comes first in the name).
    expect([...readdirSync(dir).filter((n) => n.includes('tfevents'))].sort().at(-1)).toBe(next.slice(dir.length + 1));
  });

  it('a labelled file is kept by a resume unless its label is dropped, whatever its step; a bad label is refused', () => {
    const run = join(root, 'labelled');
    const log = TensorBoardLog.open(run, 0);
    const dir = join(run, TENSORBOARD_DIR);
    log.write(1, { a: 1 });
    const replay = log.write(1, { r: 1 }, 'replay');
    expect(replay.endsWith('.step-1.replay')).toBe(true);
    expect(readEventFile(readFileSync(replay))[1]).toMatchObject({ step: 1, scalars: { r: 1 } });
    const steps = (): string[] => readdirSync(dir).filter((n) => n.includes('tfevents')).map((n) => n.replace(/^.*\.step-/, 'step-')).sort();
    TensorBoardLog.open(run, 1);
    expect(steps()).toEqual(['step-1', 'step-1.replay']);
    TensorBoardLog.open(run, 1, ['replay']);
    expect(steps()).toEqual(['step-1']);
    expect(() => log.write(2, { a: 2 }, 'Re.play')).toThrow(/label 'Re.play': must be lower-case/);
  });
});

describe('flat step metrics', () => {
  const rollout = (prompt: number, response: number, outcome: Rollout['outcome'] = 'final'): Rollout =>
    ({ id: 'r', promptIds: Array(prompt).fill(1), responseIds: Array(response).fill(2), responseMask: [], logprobs: [], samplingTemperature: 1, queries: [], retrieved: [], outcome, turns: 1, invalidActions: 0, text: '' }) as Rollout;

  it('gives verl’s names per role: lengths and clip ratio, score, advantages, the all-equal groups’ share, the update', () => {
    const solver: RolloutGroup[] = [
      { rollouts: [rollout(10, 4), rollout(10, 8, 'budget')], rewards: [1, 0] },
      { rollouts: [rollout(12, 6), rollout(12, 6)], rewards: [0, 0] },
    ];
    const proposer: RolloutGroup[] = [{ rollouts: [rollout(5, 20)], rewards: [-1] }];
    const update = { loss: 0.5, pgLoss: 0.4, kl: 0.01, clipFrac: 0.25, entropy: 1.5, gradNorm: 0.9, lr: 1e-3, tokensPerSecond: 100, sequences: 4 };
    const m = { step: 3, solverAccuracy: 0.25, extractionRate: 1, validityRate: 0.5, solver: update, seconds: { propose: 1, validate: 1, solve: 1, judge: 0, update: 1, consolidate: 0, total: 4 } } as unknown as StepMetrics;
    const flat = flatStepMetrics(m, { solver, proposer }, { advantage: { mode: 'grpo', eps: 1e-6 }, workers: 1 });
    expect(flat['training/global_step']).toBe(3);
    expect(flat['solver/response_length/mean']).toBe(6);
    expect(flat['solver/response_length/max']).toBe(8);
    expect(flat['solver/response_length/clip_ratio']).toBe(0.25);
    expect(flat['solver/prompt_length/mean']).toBe(11);
    expect(flat['solver/critic/score/mean']).toBe(0.25);
    expect(flat['solver/critic/score/std']).toBeCloseTo(Math.sqrt(0.1875), 12);
    // grpo: (R − mean) / (sample std + ε); the uniform group's advantages are 0.
    expect(flat['solver/critic/advantages/max']).toBeCloseTo(0.5 / (Math.SQRT1_2 + 1e-6), 6);
    expect(flat['solver/critic/advantages/min']).toBeCloseTo(-0.5 / (Math.SQRT1_2 + 1e-6), 6);
    expect(flat['solver/frac_reward_zero_std']).toBe(0.5);
    expect(flat['solver/actor/kl_loss']).toBe(0.01);
    expect(flat['solver/actor/pg_clipfrac']).toBe(0.25);
    expect(flat['solver/actor/pg_loss']).toBe(0.4);
    expect(flat['solver/actor/grad_norm']).toBe(0.9);
    // A group of one has A = R, and no all-equal share (no group of two or more); no proposer update this step.
    expect(flat['proposer/critic/advantages/mean']).toBe(-1);
    expect(flat['proposer/frac_reward_zero_std']).toBeUndefined();
    expect(flat['proposer/actor/kl_loss']).toBeUndefined();
    expect(flat['perf/total_num_tokens']).toBe(10 + 4 + 10 + 8 + 12 + 6 + 12 + 6 + 5 + 20);
    expect(flat['perf/throughput']).toBe(93 / 4);
    expect(flat['timing_s/step']).toBe(4);
    expect(flat['timing_s/solve']).toBe(1);
  });
});

describe('a training run', () => {
  it('writes the flat metrics beside the nested ones, and the same values to TensorBoard (--tensorboard off: none)', async () => {
    // Uniform groups are trained too (--no-skip-uniform-groups), so that a 1-step run has an update to report.
    const config = (out: string, tensorboard: boolean): TrainConfig =>
      ({ ...TRAIN_DEFAULTS, ...WORLD_DEFAULTS, steps: 1, seedsPerStep: 2, proposalsPerSeed: 2, groupSize: 2, solverEpochs: 1, evalEvery: 0, saveEvery: 1, threads: 1, backend: 'wasm', out, tensorboard, skipUniformGroups: false }) as TrainConfig;
    const out = join(root, 'run');
    await train(config(out, true), { log: () => undefined });
    const row = JSON.parse(readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n')[0] as string) as Record<string, unknown>;
    expect(row.step).toBe(1);
    expect(row.solverAccuracy).toBeTypeOf('number');
    expect(row['training/global_step']).toBe(1);
    for (const k of ['proposer/response_length/mean', 'proposer/critic/score/mean', 'proposer/critic/advantages/mean', 'proposer/actor/kl_loss', 'perf/throughput', 'timing_s/step']) expect(row[k], k).toBeTypeOf('number');
    const files = readdirSync(join(out, TENSORBOARD_DIR)).filter((n) => n.includes('tfevents'));
    expect(files).toHaveLength(1);
    const [version, event] = readEventFile(readFileSync(join(out, TENSORBOARD_DIR, files[0] as string)));
    expect(version?.fileVersion).toBe('brain.Event:2');
    expect(event?.step).toBe(1);
    const flat = Object.entries(row).filter(([k]) => k.includes('/'));
    expect(Object.keys(event?.scalars ?? {}).sort()).toEqual(flat.map(([k]) => k).sort());
    for (const [k, v] of flat) expect(event?.scalars[k], k).toBe(Math.fround(v as number));

    const off = join(root, 'run-off');
    await train(config(off, false), { log: () => undefined });
    expect(existsSync(join(off, TENSORBOARD_DIR))).toBe(false);
  }, 300_000);
});
