// The two sibling recipes (docs/recipes.md, "Run metrics" and "Stopping and resuming"), as the trainer does
// it: metrics.jsonl carries the trainer's flat names (and the recipe's own under its prefix), --tensorboard
// writes them as event files that an independent reader (./helpers/tensorboard-reader.ts) parses, and a run
// stopped by SIGTERM after its first iteration, then resumed with --resume, ends with the same result as an
// uninterrupted run: skill sets, library, adapters and the metrics without their timing fields.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';
import type { ChatMessage } from '../src/llm/types.js';
import { ScriptedTextGenerator } from '../src/llm/scripted.js';
import { CTX2SKILL_DEFAULTS, type Ctx2SkillConfig } from '../src/recipes/ctx2skill/config.js';
import { loadContext } from '../src/recipes/ctx2skill/context.js';
import { Ctx2SkillRun, readHistory } from '../src/recipes/ctx2skill/run.js';
import { flatIterationMetrics } from '../src/recipes/skill-sp/flat-metrics.js';
import type { IterationMetrics } from '../src/recipes/skill-sp/iteration.js';
import { TENSORBOARD_DIR } from '../src/selfplay/tensorboard-log.js';
import type { RolloutGroup } from '../src/selfplay/updater.js';
import type { Rollout } from '../src/agent/rollout.js';
import { CLI, type Finished, start } from './faults/cli.js';
import { metricsWithoutTimings, stripTimings } from './helpers/cli-process.js';
import { readEventFolder } from './helpers/tensorboard-reader.js';
import { TOY_CONTEXT, toyReply } from './recipe-ctx2skill-double.js';

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'recipe-stop-resume-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

type Row = Record<string, unknown> & { step: number; kind?: string };

function rows(dir: string): Row[] {
  return readFileSync(join(dir, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
}

/** A row's flat names (those with a '/'). */
function flat(row: Row): Record<string, number> {
  return Object.fromEntries(Object.entries(row).filter(([k]) => k.includes('/'))) as Record<string, number>;
}

/** What the files of tensorboard/ hold, in TensorBoard's (name) order: per file its step, label and scalars. */
function board(dir: string): Array<{ step: number; label: string | undefined; scalars: Record<string, number> }> {
  return readEventFolder(join(dir, TENSORBOARD_DIR)).map(({ name, events }) => {
    const [version, event, ...more] = events;
    expect(version?.fileVersion, name).toBe('brain.Event:2');
    expect(more, name).toEqual([]);
    const m = /\.step-(\d+)(?:\.(\w+))?$/.exec(name);
    expect(Number(m?.[1]), name).toBe(event?.step);
    return { step: event?.step as number, label: m?.[2], scalars: event?.scalars ?? {} };
  });
}

/** The scalars without the tags that measure time (they differ from run to run). */
function timeless(s: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(s).filter(([k]) => !k.startsWith('timing_s/') && k !== 'perf/throughput' && !k.endsWith('/update_tokens_per_s')));
}

/** Every metrics row's flat names are in TensorBoard, as float32, in a file of its step (labelled as given). */
function expectBoardMatchesRows(dir: string, label: (r: Row) => string | undefined): void {
  const files = board(dir);
  const rs = rows(dir);
  expect(files.map((f) => [f.step, f.label])).toEqual(rs.map((r) => [r.step, label(r)]));
  rs.forEach((r, i) => {
    const want = Object.fromEntries(Object.entries(flat(r)).map(([k, v]) => [k, Math.fround(v)]));
    expect(files[i]?.scalars, `row ${i}`).toEqual(want);
  });
}

async function finished(p: { done: Promise<Finished> }): Promise<Finished> {
  const r = await p.done;
  expect(r.code, r.stderr).toBe(0);
  return r;
}

/** Starts `args`, sends SIGTERM once stderr matches `boundary`, and returns how it ended. */
async function stoppedBySigterm(args: string[], boundary: RegExp): Promise<Finished> {
  const p = start(root, args);
  await p.waitFor(boundary);
  p.child.kill('SIGTERM');
  return finished(p);
}

describe('Skill Self-Play', () => {
  let model: string;
  beforeAll(() => {
    model = makeTinyCheckpoint({ out: join(root, 'model'), arch: 'qwen3', layers: 1, hidden: 32, heads: 2, kvHeads: 1, headDim: 16, intermediate: 64, vocab: 'full', seed: 3 }).dir;
  });
  // Enough iterations that a SIGTERM sent at the end of the first one stops the run well before its last.
  const ITERATIONS = 5;
  const args = (out: string, iterations = ITERATIONS): string[] => [
    CLI, 'skill-sp', '--model', model, '--backend', 'wasm', '--threads', '1', '--iterations', String(iterations), '--prompts-per-iteration', '1',
    '--proposals-per-prompt', '2', '--solver-rollouts', '2', '--proposer-tokens', '8', '--solver-tokens', '8', '--lora-r', '2', '--out', out,
  ];

  it('gives the flat names of an iteration: the roles’ as the trainer’s, the recipe’s under skill_sp/', () => {
    const rollout = (prompt: number, response: number): Rollout => ({ id: 'r', promptIds: Array(prompt).fill(1), responseIds: Array(response).fill(2), responseMask: [], logprobs: [], samplingTemperature: 1, queries: [], retrieved: [], outcome: 'eos', turns: 1, invalidActions: 0, text: '' });
    const proposer: RolloutGroup[] = [{ rollouts: [rollout(10, 4), rollout(10, 6)], rewards: [0.5, 0] }];
    const update = { loss: 0.5, pgLoss: 0.4, kl: 0.01, clipFrac: 0.25, entropy: 1.5, gradNorm: 0.9, lr: 1e-5, tokensPerSecond: 100, sequences: 2 };
    const metrics = { iteration: 3, proposals: 2, skillStream: 1, openStream: 1, verified: 1, validRate: 0.5, meanVSolve: null, frontierRate: 0.5, meanReward: 0.25, solverAccuracy: null, newSkills: 1, newSkillIds: ['induced-3-1'], inductionRejected: ['x', 'y'], pruned: [], librarySize: 10, libraryVersion: 2, routing: {}, proposerUpdate: update, seconds: 4 } as IterationMetrics;
    const f = flatIterationMetrics({ metrics, groups: { proposer, solver: [] }, phaseSeconds: { propose: 1, solve: 2, update: 1 } });
    expect(f).toMatchObject({
      'training/global_step': 3,
      'proposer/response_length/mean': 5,
      'proposer/critic/score/mean': 0.25,
      'proposer/actor/pg_loss': 0.4,
      'proposer/actor/kl_loss': 0.01,
      'proposer/frac_reward_zero_std': 0,
      'perf/total_num_tokens': 30,
      'perf/throughput': 30 / 4,
      'timing_s/step': 4,
      'timing_s/propose': 1,
      'timing_s/solve': 2,
      'timing_s/update': 1,
      'skill_sp/valid_ratio': 0.5,
      'skill_sp/open_stream_ratio': 0.5,
      'skill_sp/new_skills': 1,
      'skill_sp/rejected_inductions': 2,
      'skill_sp/library_size': 10,
      'skill_sp/library_version': 2,
    });
    // No solver rollout, no verified task's v_solve and no solver answer: those names are absent, not NaN.
    for (const k of Object.keys(f)) expect(k.startsWith('solver/'), k).toBe(false);
    expect(f['skill_sp/mean_v_solve']).toBeUndefined();
    expect(f['skill_sp/solver_accuracy']).toBeUndefined();
  });

  it('SIGTERM after the first iteration stops at an iteration with its checkpoint; --resume ends as the uninterrupted run', async () => {
    const whole = join(root, 'ssp-whole');
    await finished(start(root, args(whole)));

    const parted = join(root, 'ssp-parted');
    const stopped = await stoppedBySigterm(args(parted), /^iteration 1: /m);
    expect(stopped.stderr).toContain('SIGTERM: stopping after this iteration (a checkpoint is written); send SIGTERM again to quit now');
    const m = /stopped after iteration (\d+) on request \(checkpoint (\S+)\); resume with --resume /.exec(stopped.stderr);
    expect(m, stopped.stderr).not.toBeNull();
    const at = Number(m?.[1]);
    console.log(`skill-sp: SIGTERM after iteration 1 stopped the run after iteration ${at} of ${ITERATIONS}`);
    expect(at).toBeGreaterThanOrEqual(1);
    expect(at).toBeLessThan(ITERATIONS);
    expect(existsSync(join(parted, 'checkpoints', `step-${at}`, 'manifest.json'))).toBe(true);
    expect(rows(parted).map((r) => r.step)).toEqual(Array.from({ length: at }, (_, i) => i + 1));
    // Not finished: no final adapters yet; the summary says where they are and how to continue.
    expect(existsSync(join(parted, 'proposer'))).toBe(false);
    expect(stopped.stdout).toContain(`continue with sesa-train skill-sp --resume ${parted}`);

    const resumed = await finished(start(root, [CLI, 'skill-sp', '--resume', parted, '--threads', '1']));
    expect(resumed.stdout).toContain(`(resumed after iteration ${at})`);

    expect(metricsWithoutTimings(parted)).toEqual(metricsWithoutTimings(whole));
    expect(readFileSync(join(parted, 'library.json'), 'utf8')).toBe(readFileSync(join(whole, 'library.json'), 'utf8'));
    for (const r of ['proposer', 'solver']) {
      expect(readFileSync(join(parted, r, 'adapter_model.safetensors')).equals(readFileSync(join(whole, r, 'adapter_model.safetensors'))), r).toBe(true);
    }

    // The trainer's flat names in every line, beside the nested ones.
    for (const r of rows(parted)) {
      expect(r['training/global_step']).toBe(r.step);
      for (const k of ['timing_s/step', 'timing_s/propose', 'perf/total_num_tokens', 'proposer/response_length/mean', 'proposer/critic/score/mean', 'proposer/actor/kl_loss', 'skill_sp/valid_ratio', 'skill_sp/library_size']) expect(r[k], k).toBeTypeOf('number');
      expect(r['skill_sp/library_version']).toBe(r.libraryVersion);
    }
    // TensorBoard (on by default, as train's): a file per iteration, the resumed run's after the first's, with
    // the same values as metrics.jsonl, and (time aside) as the uninterrupted run's.
    expectBoardMatchesRows(parted, () => undefined);
    expect(board(parted).map((f) => timeless(f.scalars))).toEqual(board(whole).map((f) => timeless(f.scalars)));
  }, 400_000);

  it('--tensorboard off writes no event files; it may change on --resume, other settings may not', async () => {
    const out = join(root, 'ssp-off');
    await finished(start(root, [...args(out, 1), '--tensorboard', 'off']));
    expect(existsSync(join(out, TENSORBOARD_DIR))).toBe(false);
    const refused = await start(root, [CLI, 'skill-sp', '--resume', out, '--iterations', '2', '--tensorboard', 'on', '--solver-rollouts', '3']).done;
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('--solver-rollouts cannot change on --resume');
    expect(refused.stderr).not.toContain('--tensorboard cannot change');
    await finished(start(root, [CLI, 'skill-sp', '--resume', out, '--iterations', '2', '--tensorboard', 'on', '--threads', '1']));
    expect(board(out).map((f) => f.step)).toEqual([2]);
    expect(JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')).tensorboard).toBe(true);
  }, 300_000);
});

describe('Ctx2Skill', () => {
  const servers: Server[] = [];
  afterAll(async () => {
    for (const s of servers) await new Promise<void>((r) => s.close(() => r()));
  });
  /** The toy double behind a real OpenAI-compatible server on 127.0.0.1, each reply a little delayed. */
  async function toyServer(delayMs: number): Promise<string> {
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        const parsed = JSON.parse(body) as { model: string; messages: ChatMessage[] };
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ id: 'c', object: 'chat.completion', model: parsed.model, choices: [{ index: 0, message: { role: 'assistant', content: toyReply(parsed.messages) }, finish_reason: 'stop' }] }));
        }, delayMs);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    servers.push(server);
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  }
  let contextFile: string;
  beforeAll(() => {
    contextFile = join(root, 'registry.md');
    writeFileSync(contextFile, TOY_CONTEXT);
  });
  const ITERATIONS = 4;
  const llm = (url: string): string[] => ['--llm-url', url, '--llm-model', 'toy'];
  const args = (out: string, url: string): string[] => [CLI, 'ctx2skill', '--context', contextFile, '--out', out, '--iterations', String(ITERATIONS), '--tasks', '3', ...llm(url)];
  const replayLabel = (r: Row): string | undefined => (r.kind === 'replay' ? 'replay' : undefined);

  it('SIGTERM after the first iteration stops at the next unit of work; --resume ends as the uninterrupted run', async () => {
    // A short delay per reply, so that the stop lands inside the run.
    const url = await toyServer(20);
    const whole = join(root, 'c2s-whole');
    await finished(start(root, args(whole, url)));

    const parted = join(root, 'c2s-parted');
    const stopped = await stoppedBySigterm(args(parted, url), /^iteration 1: solved/m);
    expect(stopped.stderr).toContain('SIGTERM: stopping after this unit of work (the history is saved after each); send SIGTERM again to quit now');
    expect(stopped.stderr).toMatch(/stopped on request after (iteration|replay)[^\n]*; resume with sesa-train ctx2skill --resume /);
    expect(stopped.stdout).toContain(`continue with sesa-train ctx2skill --resume ${parted}`);
    const partial = readHistory(parted);
    expect(partial.done).toBe(false);
    expect(existsSync(join(parted, 'skills.json'))).toBe(false);
    const doneBefore = partial.iterations.filter((i) => i.done).length;
    console.log(`ctx2skill: SIGTERM after iteration 1 stopped the run with ${doneBefore} of ${ITERATIONS} iterations done`);
    expect(doneBefore).toBeGreaterThanOrEqual(1);
    expect(rows(parted).map((r) => r.step)).toEqual(Array.from({ length: doneBefore }, (_, i) => i + 1));

    await finished(start(root, [CLI, 'ctx2skill', '--resume', parted, ...llm(url)]));
    for (const f of ['skills.json', 'skills.md']) expect(readFileSync(join(parted, f), 'utf8'), f).toBe(readFileSync(join(whole, f), 'utf8'));
    expect(readHistory(parted)).toEqual(readHistory(whole));
    expect(metricsWithoutTimings(parted)).toEqual(metricsWithoutTimings(whole));

    // metrics.jsonl: a line per iteration, then one per replayed candidate, with the flat names.
    const rs = rows(parted);
    expect(rs.map((r) => [r.kind ?? 'iteration', r.step])).toEqual([1, 2, 3, 4].map((s) => ['iteration', s]).concat([1, 2, 3, 4].map((s) => ['replay', s])));
    expect(rs.slice(0, ITERATIONS).map((r) => [r['training/global_step'], r['ctx2skill/solved'], r['ctx2skill/judge_errors']])).toEqual([[1, 0, 0], [2, 3, 0], [3, 1, 0], [4, 1, 1]]);
    for (const r of rs.slice(0, ITERATIONS)) expect(r['timing_s/step']).toBeTypeOf('number');
    // The toy run's replay (test/recipe-ctx2skill.test.ts): S3 selected with 6/7 · 1.
    expect(rs.slice(ITERATIONS).map((r) => r['ctx2skill/replay/selected'])).toEqual([0, 0, 1, 0]);
    expect(rs[ITERATIONS + 2]?.['ctx2skill/replay/score']).toBe(6 / 7);
    // TensorBoard: the same values, the replay's files labelled; the stop and resume left no file twice.
    expectBoardMatchesRows(parted, replayLabel);
    expect(board(parted).map((f) => [f.step, f.label, timeless(f.scalars)])).toEqual(board(whole).map((f) => [f.step, f.label, timeless(f.scalars)]));
  }, 300_000);

  const CONFIG: Ctx2SkillConfig = { ...CTX2SKILL_DEFAULTS, iterations: 2, tasks: 3 };
  const roles = () => {
    const g = new ScriptedTextGenerator([toyReply], { cycle: true, name: 'toy double' });
    return { challenger: g, reasoner: g, judge: g, proposer: g, generator: g };
  };

  it('a run killed after the replay’s or an iteration’s lines, before the history recorded them as done, writes them once on resume', async () => {
    const out = join(root, 'c2s-replay-kill');
    const context = loadContext(contextFile, CONFIG.contextMaxChars);
    await Ctx2SkillRun.start(out, CONFIG, context, roles()).run();
    const before = rows(out);
    expect(before.filter((r) => r.kind === 'replay')).toHaveLength(2);
    // The state such a kill leaves: the replay's lines and files are written, the history not yet done.
    const h = readHistory(out);
    writeFileSync(join(out, 'history.json'), JSON.stringify({ ...h, done: false }));
    await Ctx2SkillRun.resume(out, context, roles()).run();
    expect(metricsWithoutTimings(out)).toEqual(before.map(stripTimings));
    expectBoardMatchesRows(out, replayLabel);
    // The same for an iteration: its line written, the history not yet saying it is done.
    const again = readHistory(out);
    const { replay: _replay, ...rest } = again;
    writeFileSync(join(out, 'history.json'), JSON.stringify({ ...rest, done: false, iterations: again.iterations.map((it, i) => (i === 1 ? { ...it, done: false } : it)) }));
    await Ctx2SkillRun.resume(out, context, roles()).run();
    expect(metricsWithoutTimings(out)).toEqual(before.map(stripTimings));
    expectBoardMatchesRows(out, replayLabel);
  });

  it('--tensorboard off writes none and is recorded on --resume; a fixed setting is refused naming it', async () => {
    const out = join(root, 'c2s-off');
    const context = loadContext(contextFile, CONFIG.contextMaxChars);
    const run = Ctx2SkillRun.start(out, { ...CONFIG, tensorboard: false }, context, { ...roles() }, { shouldStop: () => true });
    await run.run();
    expect(run.stopped).toBe(true);
    expect(existsSync(join(out, TENSORBOARD_DIR))).toBe(false);
    expect(() => Ctx2SkillRun.resume(out, context, roles(), {}, { tasks: 4 })).toThrow(`--resume ${out}: --tasks cannot change on --resume: a resumed run continues with the settings and context it recorded`);
    const resumed = Ctx2SkillRun.resume(out, context, roles(), {}, { tensorboard: true });
    await resumed.run();
    expect(resumed.stopped).toBe(false);
    expect(readHistory(out).config.tensorboard).toBe(true);
    expectBoardMatchesRows(out, replayLabel);
  });
});
