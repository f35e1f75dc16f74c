// Ctx2Skill (docs/recipes.md): the loop's control flow with a scripted LLM double, the replay selection on a
// worked example, robust parsing of role replies, the client path against a real HTTP server on 127.0.0.1
// (in process and through the CLI), and a SIGKILLed run that resumes to the uninterrupted result.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../src/llm/types.js';
import { ScriptedTextGenerator } from '../src/llm/scripted.js';
import { askStructured } from '../src/recipes/ctx2skill/ask.js';
import { CTX2SKILL_DEFAULTS, CTX2SKILL_SETTINGS, type Ctx2SkillConfig } from '../src/recipes/ctx2skill/config.js';
import { loadContext } from '../src/recipes/ctx2skill/context.js';
import { jsonCandidates } from '../src/recipes/reply-json.js';
import { laplaceRate, probeSets, selectByReplay } from '../src/recipes/ctx2skill/replay.js';
import { buildRoles } from '../src/recipes/ctx2skill/role-endpoints.js';
import { Ctx2SkillRun, readHistory } from '../src/recipes/ctx2skill/run.js';
import { checkJudgeReply } from '../src/recipes/ctx2skill/shapes.js';
import type { Ctx2SkillHistory } from '../src/recipes/ctx2skill/types.js';
import { resolveSettings } from '../src/settings/table.js';
import { TOY_CONTEXT, toyReply } from './recipe-ctx2skill-double.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CONFIG: Ctx2SkillConfig = { ...CTX2SKILL_DEFAULTS, iterations: 4, tasks: 3 };

function tempDir(tag: string): string {
  return mkdtempSync(join(tmpdir(), `${tag}-`));
}

function toyContextFile(): string {
  const f = join(tempDir('c2s-ctx'), 'registry.md');
  writeFileSync(f, TOY_CONTEXT);
  return f;
}

function doubleRoles(llm = new ScriptedTextGenerator([toyReply], { cycle: true, name: 'toy double' })) {
  return { llm, roles: { challenger: llm, reasoner: llm, judge: llm, proposer: llm, generator: llm } };
}

/** The history without what names where replies came from (role names, the context's temp path). */
function comparable(h: Ctx2SkillHistory): unknown {
  const { roles: _roles, context, ...rest } = h;
  const text = JSON.stringify({ ...rest, context: { ...context, source: '' } }).replace(/(toy double|openai:\S+ toy-[a-z]+): no usable reply/g, 'LLM: no usable reply');
  return JSON.parse(text);
}

async function toyRun(): Promise<{ history: Ctx2SkillHistory; out: string; calls: ChatMessage[][] }> {
  const out = tempDir('c2s-run');
  const { llm, roles } = doubleRoles();
  const history = await Ctx2SkillRun.start(out, CONFIG, loadContext(toyContextFile(), CONFIG.contextMaxChars), roles).run();
  return { history, out, calls: llm.calls };
}

describe('cross-time replay', () => {
  it('Laplace rates and the product pick the balanced skill set (worked example)', () => {
    // Hard probes n=4, easy n=3. S1 solves 1 hard, 3 easy: ρ = 2/5 · 4/4 = 0.40. S2: 3 hard, 1 easy:
    // 4/5 · 2/4 = 0.40. S3: 2 hard, 2 easy: 3/5 · 3/4 = 0.45 → S3, although the additive score
    // (1.40, 1.30, 1.35) would have picked S1.
    const { scored, selected } = selectByReplay([
      { iteration: 1, hardSolved: 1, hardN: 4, easySolved: 3, easyN: 3 },
      { iteration: 2, hardSolved: 3, hardN: 4, easySolved: 1, easyN: 3 },
      { iteration: 3, hardSolved: 2, hardN: 4, easySolved: 2, easyN: 3 },
    ]);
    expect(scored.map((s) => [s.rhoHard, s.rhoEasy])).toEqual([
      [0.4, 1],
      [0.8, 0.5],
      [0.6, 0.75],
    ]);
    expect(scored.map((s) => s.score)).toEqual([0.4, 0.4, 0.6 * 0.75]);
    expect(selected).toBe(3);
    // A tie goes to the earliest iteration; an empty probe set scores 1.
    expect(selectByReplay(scored.slice(0, 2)).selected).toBe(1);
    expect(laplaceRate(0, 0)).toBe(1);
    expect(laplaceRate(0, 4)).toBe(0.2);
    expect(() => laplaceRate(5, 4)).toThrow(/solved ≤ n/);
  });

  it('probe sets take failed and solved tasks round-robin over the iterations, without unparsed judgements', () => {
    const it = (iteration: number, outcomes: Array<boolean | 'error'>) => ({
      iteration,
      challengerSkillsIn: [],
      reasonerSkillsIn: [],
      attempts: outcomes.map((o, k) => ({ taskId: `i${iteration}-t${k + 1}`, answer: '', solved: o === true, ...(o === 'error' ? { judgeError: 'x' } : {}) })),
      done: true,
    });
    const sets = probeSets([it(1, [false, false, false]), it(2, [true, 'error', false]), it(3, [true, true, false])], 4);
    expect(sets.hard).toEqual(['i1-t1', 'i2-t3', 'i3-t3', 'i1-t2']);
    expect(sets.easy).toEqual(['i2-t1', 'i3-t1', 'i3-t2']);
  });
});

describe('role replies', () => {
  it('finds the JSON in prose, fences and think blocks; skips what does not parse', () => {
    expect(jsonCandidates('Sure! ```json\n{"a": 1}\n``` bye')).toEqual([{ a: 1 }, { a: 1 }]);
    expect(jsonCandidates('<think>{"no": 1}</think> here: {"a": {"b": [1, "}"]}} and {broken')).toEqual([{ a: { b: [1, '}'] } }]);
    expect(jsonCandidates('no json at all')).toEqual([]);
  });

  it('retries a malformed reply with the problem stated, then records a failure instead of throwing', async () => {
    const fixed = new ScriptedTextGenerator(['not json', '{"verdicts": [{"pass": true}]}', '{"verdicts": [{"pass": true}, {"pass": false, "reason": "no"}]}']);
    const got = await askStructured(fixed, [{ role: 'user', content: 'grade' }], checkJudgeReply(2), { retries: 2, maxTokens: 10, temperature: 0 });
    expect(got).toEqual({ ok: true, attempts: 3, value: { passes: [true, false], reasons: ['', 'no'], solved: false } });
    expect(fixed.calls[1]?.at(-1)?.content).toMatch(/holds no JSON object/);
    expect(fixed.calls[2]?.at(-1)?.content).toMatch(/"verdicts" has 1 items; there are 2 rubric items/);

    const never = new ScriptedTextGenerator(['nope'], { cycle: true });
    const failed = await askStructured(never, [{ role: 'user', content: 'grade' }], checkJudgeReply(2), { retries: 1, maxTokens: 10, temperature: 0 });
    expect(failed.ok).toBe(false);
    expect(failed.attempts).toBe(2);
    expect(never.calls).toHaveLength(2);
  });
});

describe('the Ctx2Skill loop with a scripted LLM double', () => {
  it('routes failures to the Reasoner side and solved tasks to the Challenger side, then replays', async () => {
    const { history: h, out, calls } = await toyRun();
    expect(h.done).toBe(true);
    const its = h.iterations;
    expect(its.map((it) => it.tasks?.map((t) => /code of (\w+)/.exec(t.task)?.[1]))).toEqual([
      ['ALPHA', 'BETA', 'GAMMA'],
      ['ALPHA', 'BETA', 'GAMMA'],
      ['GAMMA', 'DELTA', 'EPSILON'],
      ['EPSILON', 'ZETA', 'ETA'],
    ]);
    // Solved only when every rubric item passes: the unsure answers name the item but miss its code.
    expect(its[0]?.attempts.map((a) => a.verdict?.passes)).toEqual([[true, false], [true, false], [true, false]]);
    expect(its.map((it) => it.attempts.map((a) => a.solved))).toEqual([
      [false, false, false],
      [true, true, true],
      [true, false, false],
      [true, false, false],
    ]);
    // ZETA's judgement never parsed: a recorded failure, routed to neither side.
    const zeta = its[3]?.attempts[1];
    expect(zeta?.judgeError).toMatch(/no usable reply after 3 attempts/);
    expect(its[3]?.reasonerUpdate?.cases).toEqual(['i4-t3']);
    // Skill sets carried from iteration to iteration; each side updated only from its own cases.
    const names = (s: { name: string }[] | undefined) => s?.map((x) => x.name);
    expect(its.map((it) => names(it.reasonerUpdate?.skills))).toEqual([
      ['code-ALPHA', 'code-BETA', 'code-GAMMA'],
      ['code-ALPHA', 'code-BETA', 'code-GAMMA'],
      ['code-ALPHA', 'code-BETA', 'code-GAMMA', 'code-DELTA', 'code-EPSILON'],
      ['code-BETA', 'code-GAMMA', 'code-DELTA', 'code-EPSILON', 'code-ETA'],
    ]);
    expect(its.map((it) => it.challengerUpdate?.cases)).toEqual([[], ['i2-t1', 'i2-t2', 'i2-t3'], ['i3-t1'], ['i4-t1']]);
    expect(its.map((it) => names(it.challengerUpdate?.skills)?.length)).toEqual([0, 1, 2, 3]);
    for (let i = 1; i < its.length; i++) {
      expect(its[i]?.reasonerSkillsIn).toEqual(its[i - 1]?.reasonerUpdate?.skills);
      expect(its[i]?.challengerSkillsIn).toEqual(its[i - 1]?.challengerUpdate?.skills);
    }
    // No prompt shows one side's skills to the other side.
    for (const m of calls) {
      const sys = m[0]?.content ?? '';
      const all = m.map((x) => x.content).join('\n');
      if (sys.startsWith('You are the Challenger') || sys.startsWith('You are the Challenger-side')) expect(all).not.toMatch(/code-[A-Z]/);
      if (sys.startsWith('You are the Reasoner')) expect(all).not.toMatch(/probe-\d/);
    }
    // Replay: hard = judged failures, easy = solved, round-robin over iterations; S2 = S1 is not re-run.
    const rp = h.replay!;
    expect(rp.hardProbe).toEqual(['i1-t1', 'i3-t2', 'i4-t3', 'i1-t2', 'i3-t3', 'i1-t3']);
    expect(rp.easyProbe).toEqual(['i2-t1', 'i3-t1', 'i4-t1', 'i2-t2', 'i2-t3']);
    expect(rp.candidates.map((c) => c.sameAs)).toEqual([undefined, 1, undefined, undefined]);
    const solved = (rs: { solved: boolean }[]) => rs.filter((r) => r.solved).length;
    expect(rp.candidates.map((c) => [solved(c.hard), solved(c.easy)])).toEqual([
      [3, 4],
      [3, 4],
      [5, 5],
      [5, 4],
    ]);
    expect(rp.candidates.map((c) => c.score)).toEqual([(4 / 7) * (5 / 6), (4 / 7) * (5 / 6), 6 / 7, (6 / 7) * (5 / 6)]);
    expect(rp.selected).toBe(3); // the last iteration lost code-ALPHA: replay prefers iteration 3
    const md = readFileSync(join(out, 'skills.md'), 'utf8');
    expect(md).toMatch(/## code-ALPHA/);
    expect(md).toMatch(/## code-EPSILON/);
    expect(md).not.toMatch(/code-ETA/);
    expect(md).toContain('Reasoner skills of iteration 3 of 4, ρ_hard 0.857 (5 of 6 hard probes solved) · ρ_easy 1.000 (5 of 5 easy probes solved) = 0.857');
    expect(JSON.parse(readFileSync(join(out, 'skills.json'), 'utf8')).iteration).toBe(3);
    expect(readHistory(out)).toEqual(JSON.parse(JSON.stringify(h)));
    // Reasoner calls: 12 in the loop, then S1, S3 and S4 each on the 11 probes (S2 = S1 is reused).
    expect(calls.filter((m) => m[0]?.content.startsWith('You are the Reasoner in')).length).toBe(12 + 3 * 11);
    // Judge retries: one per GAMMA judgement (3 in the loop; 3 GAMMA probes × 3 replayed sets), two for ZETA.
    const judgeRetries = calls.filter((m) => m[0]?.content.startsWith('You are the Judge') && m.length > 2);
    expect(judgeRetries.length).toBe(3 + 3 * 3 + 2);
  });

  it('a role that never gives usable JSON leaves the skills unchanged and the run finishes', async () => {
    const llm = new ScriptedTextGenerator([(m) => (m[0]?.content.includes('-side Generator') ? 'I would rather not.' : toyReply(m))], { cycle: true });
    const out = tempDir('c2s-gen');
    const h = await Ctx2SkillRun.start(out, { ...CONFIG, iterations: 2, parseRetries: 1 }, loadContext(toyContextFile(), 1e6), { challenger: llm, reasoner: llm, judge: llm, proposer: llm, generator: llm }).run();
    expect(h.done).toBe(true);
    expect(h.iterations[0]?.reasonerUpdate?.diagnoses?.length).toBe(3);
    expect(h.iterations[0]?.reasonerUpdate?.generatorError).toMatch(/after 2 attempts/);
    expect(h.iterations.map((it) => it.reasonerUpdate?.skills)).toEqual([[], []]);
    expect(h.replay?.selected).toBe(1);
  });

  it('refuses to overwrite a run, a changed context on resume, and bad settings, naming them', async () => {
    const { out } = await toyRun();
    const { roles } = doubleRoles();
    const ctx = loadContext(toyContextFile(), 1e6);
    expect(() => Ctx2SkillRun.start(out, CONFIG, ctx, roles)).toThrow(/exists: resume that run/);
    const other = join(tempDir('c2s-other'), 'c.txt');
    writeFileSync(other, 'a different context');
    expect(() => Ctx2SkillRun.resume(out, loadContext(other, 1e6), roles)).toThrow(/the context changed/);
    expect(() => loadContext(other, 5)).toThrow(/more than --context-max-chars 5/);
    const bad = () => resolveSettings(CTX2SKILL_SETTINGS, [{ flags: { iterations: 0, tasks: 1.5, nope: 1, temperature: 'hot' } }]);
    expect(bad).toThrow(/--nope: unknown setting/);
    expect(bad).toThrow(/--tasks must be a positive integer, got 1.5/);
    expect(bad).toThrow(/--iterations must be a positive integer, got 0/);
    expect(bad).toThrow(/--temperature must be a number, got "hot"/);
  });
});

interface FakeServer {
  url: string;
  requests: Array<{ model: string; messages: ChatMessage[] }>;
  close(): Promise<void>;
}

const servers: FakeServer[] = [];
afterEach(async () => {
  while (servers.length > 0) await servers.pop()!.close();
});

/** A real OpenAI-compatible chat-completions server on 127.0.0.1 whose "model" is the toy double. */
async function toyServer(): Promise<FakeServer> {
  const requests: FakeServer['requests'] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const parsed = JSON.parse(body) as { model: string; messages: ChatMessage[] };
      requests.push(parsed);
      if (req.url !== '/v1/chat/completions') {
        res.writeHead(404).end('not found');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'c', object: 'chat.completion', model: parsed.model, choices: [{ index: 0, message: { role: 'assistant', content: toyReply(parsed.messages) }, finish_reason: 'stop' }] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const s: FakeServer = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
  servers.push(s);
  return s;
}

describe('Ctx2Skill against an OpenAI-compatible HTTP server', () => {
  it('runs every role through the client, with a per-role override, to the in-process result', async () => {
    const main = await toyServer();
    const judge = await toyServer();
    const roles = buildRoles({ url: main.url, model: 'toy-main' }, { judge: { url: judge.url, model: 'toy-judge' } }, undefined);
    const out = tempDir('c2s-http');
    const h = await Ctx2SkillRun.start(out, CONFIG, loadContext(toyContextFile(), 1e6), roles).run();
    const { history: reference } = await toyRun();
    expect(comparable(h)).toEqual(comparable(reference));
    expect(h.roles.judge).toBe(`openai:${judge.url}/chat/completions toy-judge`);
    expect(judge.requests.length).toBeGreaterThan(0);
    expect(judge.requests.every((r) => r.model === 'toy-judge' && r.messages[0]?.content.startsWith('You are the Judge'))).toBe(true);
    expect(main.requests.some((r) => r.messages[0]?.content.startsWith('You are the Judge'))).toBe(false);
    expect(new Set(main.requests.map((r) => r.model))).toEqual(new Set(['toy-main']));
  });

  it('mixes endpoints and the in-process model per role, and names the missing flag', () => {
    const local = new ScriptedTextGenerator([], { name: 'local double' });
    const roles = buildRoles({}, { judge: { url: 'http://127.0.0.1:9/v1', model: 'j' } }, { challenger: local, reasoner: local, proposer: local, generator: local });
    expect(roles.judge.name).toBe('openai:http://127.0.0.1:9/v1/chat/completions j');
    expect(roles.reasoner).toBe(local);
    expect(() => buildRoles({}, {}, { challenger: local })).toThrow(/no LLM for the reasoner: give --llm-url and --llm-model/);
    expect(() => buildRoles({ url: 'http://127.0.0.1:9/v1' }, {}, undefined)).toThrow(/needs a model name: --llm-model/);
    expect(() => buildRoles({ url: 'http://127.0.0.1:9/v1', model: 'm' }, { judge: { url: 'http://127.0.0.1:8/v1' } }, undefined)).toThrow(/needs a model name: --judge-model/);
  });

  it('the CLI runs against it and prints the summary', async () => {
    const server = await toyServer();
    const out = join(tempDir('c2s-cli'), 'run');
    const args = ['bin/sesa-train.mjs', 'ctx2skill', '--context', toyContextFile(), '--out', out, '--iterations', '4', '--tasks', '3', '--llm-url', server.url, '--llm-model', 'toy', '--json'];
    // spawn (not spawnSync): the server lives in this process and must keep answering.
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    expect(code, stderr).toBe(0);
    const summary = JSON.parse(stdout.trim().split('\n').at(-1) as string);
    expect(summary.replay.selected).toBe(3);
    expect(summary.iterations.map((i: { solved: number }) => i.solved)).toEqual([0, 3, 1, 1]);
    expect(readFileSync(join(out, 'skills.md'), 'utf8')).toMatch(/## code-DELTA/);
    // Missing LLM: a clear error naming the flags.
    const bad = spawnSync(process.execPath, ['bin/sesa-train.mjs', 'ctx2skill', '--context', toyContextFile(), '--out', join(out, 'x')], { cwd: ROOT, encoding: 'utf8' });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/no LLM for challenger, reasoner, judge, proposer, generator: give --llm-url/);
  });
});

describe('a killed Ctx2Skill run', () => {
  it('resumes from its history to the same result as an uninterrupted run', async () => {
    const out = join(tempDir('c2s-kill'), 'run');
    const contextFile = toyContextFile();
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/recipe-ctx2skill-child.ts'), out, contextFile], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<NodeJS.Signals | null>((r) => child.on('exit', (_c, sig) => r(sig)));
    let reached = 0;
    await new Promise<void>((resolve, reject) => {
      let buf = '';
      child.stdout.on('data', (d: Buffer) => {
        buf += d.toString();
        const lines = buf.split('\n');
        buf = lines.pop() ?? '';
        for (const line of lines) {
          const m = /^progress (\d+) /.exec(line);
          if (m) reached = Math.max(reached, Number(m[1]));
        }
        // Mid-run: past the first iteration, well before the replay.
        if (reached >= 8 && !child.killed) {
          child.kill('SIGKILL');
          resolve();
        }
      });
      child.on('exit', () => (child.killed ? resolve() : reject(new Error(`child finished before it was killed: ${stderr}`))));
    });
    expect(await exited).toBe('SIGKILL');
    const partial = readHistory(out);
    expect(partial.done).toBe(false);
    expect(partial.iterations.length).toBeGreaterThanOrEqual(2);

    const { llm, roles } = doubleRoles();
    const resumed = await Ctx2SkillRun.resume(out, loadContext(contextFile, 1e6), roles).run();
    const { history: reference } = await toyRun();
    expect(comparable(resumed)).toEqual(comparable(reference));
    // The resumed process did not redo the finished iteration: no Challenger call for iteration 1's skills.
    const challengerCalls = llm.calls.filter((m) => m[0]?.content.startsWith('You are the Challenger in'));
    expect(challengerCalls.length).toBeLessThan(4);
  });
});
