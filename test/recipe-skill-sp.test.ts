// Skill Self-Play (docs/recipes.md): routing arithmetic, the gate and the reward against worked examples;
// the puzzle solver against brute-force enumeration, and uniqueness proved on 1,000 generated puzzles; the
// tool sandbox and grader; the validity mask; skill induction; and a scripted-policy run of the loop.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SKILL_SP_DEFAULTS, type SkillSpConfig } from '../src/recipes/skill-sp/config.js';
import { type IterationMetrics, type ProposalRecord, skillSpIteration } from '../src/recipes/skill-sp/iteration.js';
import { SkillLibrary } from '../src/recipes/skill-sp/library.js';
import { induceSkill, jaccard, seedPackages, type SpTask, specFeatures, validate } from '../src/recipes/skill-sp/packages.js';
import { parseProposal } from '../src/recipes/skill-sp/prompts.js';
import { compositeScore, explorationBonus, gatedReward, routingDistribution, smoothedRate } from '../src/recipes/skill-sp/routing.js';
import { executeCalls, generateToolTask, gradeToolCalls, toolValidity } from '../src/recipes/skill-sp/toolcall.js';
import { type Clue, countSolutions, generateZebra, gradeZebra, satisfies, type ZebraPuzzle, type ZebraSolution } from '../src/recipes/skill-sp/zebra.js';
import { Rng } from '../src/util/rng.js';
import { RecordingUpdater, ScriptedProposer, ScriptedSolver } from './recipe-skill-sp-doubles.js';

const PARAMS = { weights: { verified: 0.5, consistent: 0.25, frontier: 0.25 }, clip: [0.1, 1] as [number, number], beta: 1, tau: 5 };

describe('routing and reward arithmetic', () => {
  it('Laplace rates, composite, bonus and normalization on a worked example', () => {
    // s1: a=2, verified 1, consistent 1, frontier 0; s2: a=1, nothing; s3: untried.
    const counts = [
      { attempts: 2, verified: 1, consistent: 1, frontier: 0 },
      { attempts: 1, verified: 0, consistent: 0, frontier: 0 },
      { attempts: 0, verified: 0, consistent: 0, frontier: 0 },
    ];
    // r = (n+1)/(a+2): s1 (2/4, 2/4, 1/4); s2 1/3 each; s3 1/2 each.
    expect(smoothedRate(1, 2)).toBe(0.5);
    expect(smoothedRate(0, 1)).toBeCloseTo(1 / 3, 15);
    expect(smoothedRate(0, 0)).toBe(0.5);
    // v = 0.5·r_ver + 0.25·r_con + 0.25·r_fd: s1 0.25 + 0.125 + 0.0625 = 0.4375; s2 1/3; s3 1/2.
    const v = [0.4375, 1 / 3, 0.5];
    counts.forEach((c, i) => expect(compositeScore(c, PARAMS)).toBeCloseTo(v[i] as number, 15));
    // bonus 1 + e^(−a/5): 1.670320046, 1.818730753, 2.
    const bonus = [1 + Math.exp(-0.4), 1 + Math.exp(-0.2), 2];
    counts.forEach((c, i) => expect(explorationBonus(c.attempts, PARAMS)).toBeCloseTo(bonus[i] as number, 15));
    expect(explorationBonus(0, PARAMS)).toBe(2);
    // w = v·bonus = 0.730765020, 0.606243584, 1.0; sum 2.337008604.
    const w = v.map((x, i) => x * (bonus[i] as number));
    const probs = routingDistribution(counts, PARAMS);
    expect(probs.reduce((s, p) => s + p, 0)).toBeCloseTo(1, 15);
    probs.forEach((p, i) => expect(p).toBeCloseTo((w[i] as number) / (w[0]! + w[1]! + w[2]!), 15));
    expect(probs.map((p) => Number(p.toFixed(4)))).toEqual([0.3127, 0.2594, 0.4279]);
    // The clip: a skill that never verifies bottoms out at 0.1 (before the bonus) instead of 0.
    expect(compositeScore({ attempts: 1000, verified: 0, consistent: 0, frontier: 0 }, PARAMS)).toBe(0.1);
    expect(compositeScore({ attempts: 10, verified: 10, consistent: 10, frontier: 10 }, { ...PARAMS, weights: { verified: 1, consistent: 1, frontier: 1 } })).toBe(1);
    expect(() => smoothedRate(3, 2)).toThrow(/0 ≤ n ≤ a/);
  });

  it('the gated reward: mask · (1 − 2|v_solve − 0.5|)', () => {
    // K = 2, one pass and one fail: v = 0.5, reward 1 (the paper's example).
    expect(gatedReward(1, 0.5)).toBe(1);
    expect(gatedReward(1, 0.25)).toBe(0.5);
    expect(gatedReward(1, 0.75)).toBe(0.5);
    expect(gatedReward(1, 0)).toBe(0);
    expect(gatedReward(1, 1)).toBe(0);
    expect(gatedReward(0, 0.5)).toBe(0);
    expect(() => gatedReward(1, 1.5)).toThrow(/v_solve must be in \[0, 1\]/);
  });
});

/** Independent reference: every combination of permutations, each clue checked directly. */
function bruteForceCount(p: ZebraPuzzle): number {
  const attrs = Object.keys(p.attributes);
  const perms = (xs: string[]): string[][] => (xs.length <= 1 ? [xs] : xs.flatMap((x, i) => perms([...xs.slice(0, i), ...xs.slice(i + 1)]).map((rest) => [x, ...rest])));
  let count = 0;
  const walk = (i: number, partial: ZebraSolution): void => {
    if (i === attrs.length) {
      const house = (r: [string, string]): number => (partial[r[0]] as string[]).indexOf(r[1]) + 1;
      const ok = p.clues.every((c: Clue) => {
        const a = house(c.x);
        if (!('y' in c)) return c.type === 'found_at' ? a === c.house : a !== c.house;
        const b = house(c.y);
        return { same_house: a === b, not_same_house: a !== b, directly_left_of: b - a === 1, left_of: a < b, next_to: Math.abs(a - b) === 1 }[c.type];
      });
      if (ok) count++;
      return;
    }
    for (const perm of perms(p.attributes[attrs[i] as string] as string[])) walk(i + 1, { ...partial, [attrs[i] as string]: perm });
  };
  walk(0, {});
  return count;
}

describe('ZebraLogic puzzles', () => {
  it('the exact solver agrees with brute-force enumeration, unique or not', () => {
    const rng = new Rng(3);
    let nonUnique = 0;
    for (let i = 0; i < 120; i++) {
      const { puzzle } = generateZebra({ houses: [2, 4], attributes: [2, 3] }, rng);
      // Drop some clues at random so that many puzzles have several (or, with a false clue, no) solutions.
      const clues = puzzle.clues.filter(() => rng.next() < 0.7);
      const p = { ...puzzle, clues: clues.length > 0 ? clues : puzzle.clues };
      const brute = bruteForceCount(p);
      expect(countSolutions(p, 1e6).count).toBe(brute);
      expect(countSolutions(p, 2).count).toBe(Math.min(brute, 2));
      if (brute > 1) nonUnique++;
    }
    expect(nonUnique).toBeGreaterThan(20);
  });

  it('1,000 generated puzzles each have exactly one solution, the hidden one, and the checker grades it', () => {
    let clues = 0;
    for (let i = 0; i < 1000; i++) {
      const rng = Rng.derive(11, i);
      const { puzzle, solution } = generateZebra({ houses: [2, 5], attributes: [2, 4], requiredClueTypes: i % 3 === 0 ? ['next_to'] : [] }, rng);
      const proof = countSolutions(puzzle, 2);
      expect(proof.count, `puzzle ${i}`).toBe(1);
      expect(proof.first).toEqual(solution);
      expect(satisfies(puzzle, solution)).toBe(true);
      if (i % 3 === 0) expect(puzzle.clues.some((c) => c.type === 'next_to')).toBe(true);
      expect(gradeZebra(puzzle, solution, solution)).toEqual({ correct: true, cellAccuracy: 1 });
      const [first] = Object.keys(solution) as [string];
      const wrong = { ...solution, [first]: [...(solution[first] as string[])].reverse() };
      expect(gradeZebra(puzzle, solution, wrong).correct).toBe(false);
      clues += puzzle.clues.length;
    }
    expect(gradeZebra({ houses: 2, attributes: { A: ['x', 'y'], B: ['u', 'v'] }, clues: [] }, { A: ['x', 'y'], B: ['u', 'v'] }, { A: ['x', 'z'] })).toEqual({ correct: false, cellAccuracy: 0 });
    // Minimal clue sets are small but not trivial: on average a handful of clues per puzzle.
    expect(clues / 1000).toBeGreaterThan(3);
  });
});

describe('tool-call tasks', () => {
  it('the sandbox is deterministic; answers are graded by executing them', () => {
    const rng = new Rng(5);
    for (const fn of ['get_weather', 'convert_currency', 'search_restaurants', 'book_table', 'schedule_meeting', 'send_email']) {
      const task = generateToolTask([fn], rng);
      expect(toolValidity(task, 4), fn).toEqual({ schema: [], contract: [], consistency: [] });
      expect(executeCalls(task.calls)).toEqual(executeCalls(JSON.parse(JSON.stringify(task.calls))));
      expect(gradeToolCalls(task, task.calls, 4).correct).toBe(true);
      expect(gradeToolCalls(task, [{ name: 'send_email', arguments: { to: 'a@b.com', subject: 's', body: 'b' } }], 4).correct).toBe(fn === 'send_email' && false);
    }
    const conv = executeCalls([{ name: 'convert_currency', arguments: { amount: 100, from: 'EUR', to: 'USD' } }]);
    expect(conv.results).toEqual([{ amount: 108, currency: 'USD' }]);
    // Schema, execution and grounding failures are told apart.
    const book = generateToolTask(['book_table'], new Rng(1));
    expect(toolValidity({ request: book.request, calls: [{ name: 'book_table', arguments: { ...book.calls[0]!.arguments, guests: 40 } }] }, 4).schema).toEqual(['calls[0].arguments.guests must be ≤ 12']);
    expect(toolValidity({ request: 'Book R-0001 for 2 on 2026-01-11 at 19:00.', calls: [{ name: 'book_table', arguments: { restaurant_id: 'R-0001', date: '2026-01-11', time: '19:00', guests: 2 } }] }, 4).contract).toEqual(['calls[0]: no restaurant R-0001']);
    expect(toolValidity({ request: 'What is the weather like in Oslo tomorrow?', calls: [{ name: 'get_weather', arguments: { city: 'Oslo', date: '2026-02-02' } }] }, 4).consistency).toEqual(['calls[0].arguments.date = "2026-02-02" does not appear in the request']);
  });
});

describe('the validity mask and skill induction', () => {
  it('schema, contract and consistency each gate a task', () => {
    const rng = new Rng(9);
    const { puzzle, solution } = generateZebra({ houses: [3, 3], attributes: [3, 3] }, rng);
    const ok: SpTask = { family: 'zebra', puzzle, solution };
    expect(validate(ok, undefined, 4)).toEqual({ schema: [], contract: [], consistency: [], mask: 1 });
    const loose = validate({ ...ok, puzzle: { ...puzzle, clues: puzzle.clues.slice(1) } }, undefined, 4);
    expect(loose.consistency).toEqual(['the puzzle has more than one solution']);
    expect(loose.mask).toBe(0);
    const [a] = Object.keys(solution) as [string];
    const swapped = { ...solution, [a]: [...(solution[a] as string[])].reverse() };
    expect(validate({ ...ok, solution: swapped }, undefined, 4).contract).toEqual(['the hidden solution breaks a clue']);
    expect(validate({ ...ok, puzzle: { ...puzzle, houses: 1 } }, undefined, 4).schema[0]).toMatch(/houses must be an integer in 2..8/);
    const spec = { family: 'zebra' as const, houses: [4, 5] as [number, number], attributes: [3, 3] as [number, number], requiredClueTypes: ['left_of' as const] };
    expect(validate(ok, spec, 4).contract[0]).toMatch(/the skill wants 4–5 houses, got 3/);
    expect(parseProposal('no json', 'zebra')).toEqual({ ok: false, problem: 'the reply holds no JSON object' });
    expect(parseProposal(`sure: ${JSON.stringify(ok)}`, 'zebra')).toEqual({ ok: true, value: ok });
  });

  it('an induced skill passes integrity (its spec accepts its example) and novelty (Jaccard below the bound)', () => {
    const seeds = seedPackages();
    for (const p of seeds) for (const e of p.examples) expect(validate(e, p.validator, 4).mask, p.id).toBe(1);
    const rng = new Rng(21);
    const task: SpTask = { family: 'zebra', ...generateZebra({ houses: [5, 5], attributes: [2, 2], requiredClueTypes: ['not_at', 'next_to'] }, rng) };
    const got = induceSkill(task, seeds, { id: 'n1', iteration: 1, from: 't', noveltyMax: 0.75, maxCalls: 4 });
    expect(got.ok).toBe(true);
    if (!got.ok) return;
    expect(validate(task, got.pkg.validator, 4).mask).toBe(1);
    for (const s of seeds.filter((p) => p.family === 'zebra')) expect(jaccard(specFeatures(got.pkg.validator), specFeatures(s.validator))).toBeLessThan(0.75);
    // The same structure again is not novel; a broken task fails integrity.
    const again = induceSkill(task, [...seeds, got.pkg], { id: 'n2', iteration: 1, from: 't', noveltyMax: 0.75, maxCalls: 4 });
    expect(again).toEqual({ ok: false, reason: expect.stringMatching(/^novelty: overlaps n1 \(Jaccard 1.00/) });
    const broken = induceSkill({ ...task, puzzle: { ...task.puzzle, clues: [task.puzzle.clues[0] as Clue] } }, seeds, { id: 'n3', iteration: 1, from: 't', noveltyMax: 0.75, maxCalls: 4 });
    expect(broken.ok).toBe(false);
    expect(!broken.ok && broken.reason).toMatch(/^integrity: /);
  });
});

describe('the Skill Self-Play loop with scripted policies', () => {
  it('routes, gates, rewards, induces, prunes, updates and commits the library each iteration', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ssp-loop-'));
    const lib = SkillLibrary.open(join(dir, 'library.json'));
    expect(lib.version).toBe(1);
    const config: SkillSpConfig = { ...SKILL_SP_DEFAULTS, promptsPerIteration: 10, proposalsPerPrompt: 3, solverRollouts: 4, alpha: 0.3, pruneSeeds: true, pruneMinAttempts: 4, gamma: 0.2 };
    const proposer = new ScriptedProposer(lib, 1);
    const solver = new ScriptedSolver(proposer, 2);
    const updater = new RecordingUpdater();
    const rng = new Rng(4);
    const metrics: IterationMetrics[] = [];
    const records: ProposalRecord[][] = [];
    for (let it = 1; it <= 4; it++) {
      const before = lib.packages.map((p) => ({ ...p.stats }));
      const expected = routingDistribution(before, PARAMS);
      const r = await skillSpIteration(it, { proposer, solver, library: lib, updater }, config, rng);
      metrics.push(r.metrics);
      records.push(r.proposals);
      // σ as reported = the distribution of the stats at the start of the iteration.
      expect(Object.values(r.metrics.routing)).toEqual(expected);
    }
    const m1 = metrics[0]!;
    // Iteration 1: every seed untried, so σ is uniform over the 9 seeds.
    for (const p of Object.values(m1.routing)) expect(p).toBeCloseTo(1 / 9, 12);
    for (const [i, m] of metrics.entries()) {
      const recs = records[i]!;
      expect(m.proposals).toBe(30);
      expect(m.skillStream + m.openStream).toBe(30);
      expect(m.openStream % 3).toBe(0);
      // The reward is the gate times the frontier score, and only verified tasks were solved.
      for (const r of recs) {
        expect(r.reward).toBe(gatedReward(r.mask, r.vSolve ?? 0));
        expect(r.vSolve !== undefined).toBe(r.mask === 1);
        if (r.mask === 0) expect(r.problems.length).toBeGreaterThan(0);
      }
      expect(m.verified).toBe(recs.filter((r) => r.mask === 1).length);
      expect(m.verified).toBeLessThan(30); // the malformed and non-unique proposals were gated out
      expect(m.verified).toBeGreaterThan(10);
      expect(m.meanVSolve).toBeGreaterThan(0);
      expect(m.meanVSolve).toBeLessThan(1);
      // The version counts skill sets: +1 for each iteration so far that induced or pruned a skill.
      expect(m.libraryVersion).toBe(1 + metrics.slice(0, i + 1).filter((x) => x.newSkills > 0 || x.pruned.length > 0).length);
      // GRPO groups: one per prompt (n_p proposals, their gated rewards) and one per verified task (K answers).
      const prop = updater.updates.filter((u) => u.role === 'proposer')[i]!;
      expect(prop.groups.map((g) => g.rollouts.length)).toEqual(new Array(10).fill(3));
      expect(prop.groups.flatMap((g) => g.rewards)).toEqual(recs.map((r) => r.reward));
      const sol = updater.updates.filter((u) => u.role === 'solver')[i]!;
      expect(sol.groups).toHaveLength(m.verified);
      expect(sol.groups.map((g) => g.rewards.reduce((s, x) => s + x, 0) / 4)).toEqual(recs.filter((r) => r.mask === 1).map((r) => r.vSolve));
    }
    // Routing statistics equal the counts of the records of each surviving skill.
    const all = records.flat();
    for (const p of lib.packages) {
      const mine = all.filter((r) => r.skillId === p.id);
      expect(p.stats.attempts, p.id).toBe(mine.length);
      expect(p.stats.verified, p.id).toBe(mine.filter((r) => r.mask === 1).length);
      expect(p.stats.frontier, p.id).toBe(mine.filter((r) => r.frontier).length);
      expect(p.stats.rewardSum, p.id).toBeCloseTo(mine.reduce((s, r) => s + r.reward, 0), 12);
    }
    // Induction happened from the open stream; pruning removed skills whose mean reward fell below γ.
    const induced = lib.packages.filter((p) => p.source === 'induced');
    expect(metrics.reduce((s, m) => s + m.newSkills, 0)).toBeGreaterThan(0);
    for (const p of induced) expect(validate(p.examples[0] as SpTask, p.validator, 4).mask).toBe(1);
    const pruned = metrics.flatMap((m) => m.pruned);
    expect(pruned).toContain('tool-email'); // the scripted solver always gets emails right: reward 0
    expect(lib.get('tool-email')).toBeUndefined();
    // The library on disk is the last committed version.
    const file = JSON.parse(readFileSync(join(dir, 'library.json'), 'utf8'));
    expect(file.version).toBe(1 + metrics.filter((x) => x.newSkills > 0 || x.pruned.length > 0).length);
    expect(file.packages.map((p: { id: string }) => p.id)).toEqual(lib.packages.map((p) => p.id));
    expect(existsSync(join(dir, 'library.json'))).toBe(true);
    expect(SkillLibrary.open(join(dir, 'library.json')).packages).toEqual(JSON.parse(JSON.stringify(lib.packages)));
  });
});
