// The Ctx2Skill loop (docs/recipes.md): N iterations of Challenger → Reasoner → Judge → side updates, then
// cross-time replay over the Reasoner skill sets. No weights change; every role is a TextGenerator. The
// history file is rewritten atomically after every finished unit of work (a judged task, a side update, a
// replayed probe), so a killed run resumes where it stopped and repeats at most one unit; a stop on request
// (events.shouldStop, the CLI's Ctrl-C or SIGTERM) ends the run after the unit under way. metrics.jsonl and
// the TensorBoard files get a line per finished iteration and per replayed candidate (./metrics.ts;
// docs/recipes.md, "Run metrics" and "Stopping and resuming").
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic, writeJsonAtomic } from '../../util/atomic.js';
import type { TextGenerator } from '../../llm/types.js';
import { askStructured } from './ask.js';
import { flagName } from '../../settings/table.js';
import { TensorBoardLog } from '../../selfplay/tensorboard-log.js';
import { CTX2SKILL_DEFAULTS, CTX2SKILL_SETTINGS, type Ctx2SkillConfig } from './config.js';
import { flatPart, iterationRow, METRICS_FILE, MetricsFile, type MetricsRow, REPLAY_LABEL, replayRow } from './metrics.js';
import type { LoadedContext } from './context.js';
import { challengerMessages, generatorMessages, judgeMessages, proposerMessages, reasonerMessages } from './prompts.js';
import { skillsMarkdown } from './render.js';
import { probeSets, selectByReplay } from './replay.js';
import { checkChallengerReply, checkGeneratorReply, checkJudgeReply, checkProposerReply } from './shapes.js';
import type { Attempt, Ctx2SkillHistory, IterationRecord, ReplayCandidate, ReplayResult, Side, SideUpdate, SkillSet, Task } from './types.js';

export const CTX2SKILL_ROLES = ['challenger', 'reasoner', 'judge', 'proposer', 'generator'] as const;

/**
 * How skills.md says what was selected: the iteration, and its replay scores with the probes they count. With
 * no probe at all every candidate scores 1 by the Laplace smoothing, which is no evidence, so it says that
 * instead of "ρ_hard 1.000 · ρ_easy 1.000 = 1.000"; an empty selected set is named as such.
 */
export function selectionNote(rp: { hardProbe: readonly string[]; easyProbe: readonly string[] }, cand: ReplayCandidate, skills: SkillSet, iterations: number): string {
  const solved = (rs: readonly ReplayResult[]): number => rs.filter((r) => r.solved).length;
  const what = skills.length === 0 ? `the Reasoner skill set of iteration ${cand.iteration} of ${iterations}, which is empty` : `Reasoner skills of iteration ${cand.iteration} of ${iterations}`;
  if (rp.hardProbe.length + rp.easyProbe.length === 0) {
    return `${what}; no replay probes (no task was judged solved or failed), so every candidate scores 1 by Laplace smoothing and the earliest was taken`;
  }
  return (
    `${what}, ρ_hard ${cand.rhoHard?.toFixed(3)} (${solved(cand.hard)} of ${cand.hard.length} hard probes solved) · ` +
    `ρ_easy ${cand.rhoEasy?.toFixed(3)} (${solved(cand.easy)} of ${cand.easy.length} easy probes solved) = ${cand.score?.toFixed(3)}`
  );
}
export type Ctx2SkillRole = (typeof CTX2SKILL_ROLES)[number];
export type Ctx2SkillRoles = Record<Ctx2SkillRole, TextGenerator>;

export interface Ctx2SkillProgress {
  /** Units done and the total known so far (the replay's size is known once the loop has run). */
  done: number;
  total: number;
  phase: string;
}

export interface Ctx2SkillEvents {
  log?: (line: string) => void;
  progress?: (p: Ctx2SkillProgress) => void;
  /** Polled after every finished unit of work (its history saved): true stops the run there. */
  shouldStop?: () => boolean;
}

/** Thrown at a unit's end when a stop was asked for; run() catches it. */
class StopRequested extends Error {
  constructor(readonly after: string) {
    super(`stopped after ${after}`);
  }
}

export const HISTORY_FILE = 'history.json';

export function readHistory(outDir: string): Ctx2SkillHistory {
  const path = join(outDir, HISTORY_FILE);
  if (!existsSync(path)) throw new Error(`${path}: no Ctx2Skill history to resume`);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`${path}: not valid JSON (${(err as Error).message})`);
  }
  const h = raw as Partial<Ctx2SkillHistory>;
  if (h.format !== 'sesa-ctx2skill-history' || h.version !== 1) throw new Error(`${path}: not a Ctx2Skill history (format/version fields)`);
  if (!Array.isArray(h.iterations) || typeof h.config !== 'object' || !h.context) throw new Error(`${path}: the history lacks its iterations, config or context fields`);
  return h as Ctx2SkillHistory;
}

function stripThinking(text: string): string {
  return text.replace(/<think>[\s\S]*?<\/think>/g, '').trim();
}

export class Ctx2SkillRun {
  private readonly history: Ctx2SkillHistory;
  private readonly metrics: MetricsFile;
  private readonly board: TensorBoardLog | undefined;
  private stoppedEarly = false;

  private constructor(
    private readonly outDir: string,
    private readonly config: Ctx2SkillConfig,
    private readonly context: LoadedContext,
    private readonly roles: Ctx2SkillRoles,
    private readonly events: Ctx2SkillEvents,
    history: Ctx2SkillHistory | undefined,
  ) {
    this.history = history ?? {
      format: 'sesa-ctx2skill-history',
      version: 1,
      config: { ...config },
      context: { source: context.source, chars: context.text.length, sha256: context.sha256 },
      roles: Object.fromEntries(CTX2SKILL_ROLES.map((r) => [r, roles[r].name])),
      iterations: [],
      done: false,
    };
    const metricsPath = join(outDir, METRICS_FILE);
    if (history === undefined) {
      this.metrics = MetricsFile.create(metricsPath);
      this.board = config.tensorboard ? TensorBoardLog.open(outDir, 0) : undefined;
    } else {
      // A resume keeps the lines of the finished iterations (and of the replay, once the run is done) and drops
      // the rest, which it writes again: a line is written before the history records its work as finished.
      const finished = history.iterations.filter((it) => it.done).length;
      this.metrics = MetricsFile.open(metricsPath, (row) => (row.kind === undefined ? row.step <= finished : history.done));
      this.board = config.tensorboard ? TensorBoardLog.open(outDir, finished, history.done ? [] : [REPLAY_LABEL]) : undefined;
    }
  }

  /** A fresh run in `outDir`; refuses a folder that already holds a history (resume it instead). */
  static start(outDir: string, config: Ctx2SkillConfig, context: LoadedContext, roles: Ctx2SkillRoles, events: Ctx2SkillEvents = {}): Ctx2SkillRun {
    if (existsSync(join(outDir, HISTORY_FILE))) throw new Error(`${join(outDir, HISTORY_FILE)} exists: resume that run (--resume ${outDir}) or choose another --out`);
    return new Ctx2SkillRun(outDir, config, context, roles, events, undefined);
  }

  /**
   * Continues the run in `outDir` with its recorded config (a setting it did not record, from an older run,
   * takes its default); the context must be the recorded one. `changes` are the settings the table lets a
   * resume change (--tensorboard); they are recorded in the history.
   */
  static resume(outDir: string, context: LoadedContext, roles: Ctx2SkillRoles, events: Ctx2SkillEvents = {}, changes: Partial<Ctx2SkillConfig> = {}): Ctx2SkillRun {
    const history = readHistory(outDir);
    if (history.context.sha256 !== context.sha256) {
      throw new Error(`${join(outDir, HISTORY_FILE)}: the context changed since the run started (${history.context.source}, sha256 ${history.context.sha256.slice(0, 12)}… recorded, ${context.sha256.slice(0, 12)}… now)`);
    }
    const refused = Object.keys(changes).flatMap((k) => {
      const policy = CTX2SKILL_SETTINGS[k as keyof Ctx2SkillConfig]?.resume;
      return policy?.kind === 'refuse' ? [`--${flagName(k)} cannot change on --resume: ${policy.reason}`] : [];
    });
    if (refused.length > 0) throw new Error(`--resume ${outDir}: ${refused.join('; ')}`);
    history.config = { ...history.config, ...changes };
    return new Ctx2SkillRun(outDir, { ...CTX2SKILL_DEFAULTS, ...history.config } as Ctx2SkillConfig, context, roles, events, history);
  }

  /** True when the last run() stopped on request before the run was done (resume it to finish). */
  get stopped(): boolean {
    return this.stoppedEarly;
  }

  get record(): Ctx2SkillHistory {
    return this.history;
  }

  private save(): void {
    writeJsonAtomic(join(this.outDir, HISTORY_FILE), this.history);
  }

  /** A unit of work is finished and saved: the progress, then a stop if one was asked for. */
  private unitDone(phase: string): void {
    this.tick(phase);
    if (this.events.shouldStop?.() ?? false) throw new StopRequested(phase);
  }

  /** One metrics line, and its flat names to TensorBoard (the replay's files labelled). */
  private writeRow(row: MetricsRow): void {
    this.metrics.append(row);
    this.board?.write(row.step, flatPart(row), row.kind === 'replay' ? REPLAY_LABEL : undefined);
  }

  /** Progress recomputed from the history itself, so it is right after a resume too. */
  private tick(phase: string): void {
    const c = this.config;
    let done = 0;
    for (const it of this.history.iterations) {
      if (it.tasks) done += c.tasks - it.tasks.length; // tasks the Challenger did not write count as done
      done += it.attempts.length + (it.reasonerUpdate ? 1 : 0) + (it.challengerUpdate ? 1 : 0);
    }
    const rp = this.history.replay;
    let total = c.iterations * (c.tasks + 2);
    if (rp) {
      total += rp.candidates.length * (rp.hardProbe.length + rp.easyProbe.length);
      for (const cd of rp.candidates) done += cd.hard.length + cd.easy.length;
    }
    this.events.progress?.({ done, total, phase });
  }

  /**
   * Runs (or continues) the loop and the replay, then writes skills.md and skills.json. A stop on request
   * returns the history as saved after the last finished unit, with `stopped` set and no outputs written.
   */
  async run(): Promise<Ctx2SkillHistory> {
    this.stoppedEarly = false;
    try {
      await this.runUnits();
    } catch (err) {
      if (!(err instanceof StopRequested)) throw err;
      this.stoppedEarly = true;
      this.events.log?.(`stopped on request after ${err.after} (${join(this.outDir, HISTORY_FILE)} holds every finished unit); resume with sesa-train ctx2skill --resume ${this.outDir}`);
    }
    return this.history;
  }

  private async runUnits(): Promise<void> {
    const c = this.config;
    this.tick('starting');
    for (let i = 1; i <= c.iterations; i++) {
      let it = this.history.iterations[i - 1];
      if (it?.done) continue;
      if (!it) {
        const prev = this.history.iterations[i - 2];
        it = {
          iteration: i,
          challengerSkillsIn: prev?.challengerUpdate?.skills ?? [],
          reasonerSkillsIn: prev?.reasonerUpdate?.skills ?? [],
          attempts: [],
          done: false,
        };
        this.history.iterations.push(it);
      }
      await this.iterate(it);
    }
    const wasDone = this.history.done;
    await this.replay();
    // The replay's lines before the history says the run is done (a resume of a run not done drops them).
    if (!wasDone) for (const cand of this.history.replay?.candidates ?? []) this.writeRow(replayRow(cand, this.history.replay?.selected as number));
    this.history.done = true;
    this.save();
    this.writeOutputs();
  }

  private async iterate(it: IterationRecord): Promise<void> {
    const c = this.config;
    const started = performance.now();
    const log = this.events.log ?? (() => {});
    if (it.tasks === undefined && it.challengerError === undefined) {
      const asked = await askStructured(
        this.roles.challenger,
        challengerMessages(this.context.text, it.challengerSkillsIn, c.tasks, c.rubricsMin, c.rubricsMax),
        checkChallengerReply(c.tasks, c.rubricsMin, c.rubricsMax),
        { retries: c.parseRetries, maxTokens: c.challengerTokens, temperature: c.challengerTemperature },
      );
      if (asked.ok) it.tasks = asked.value.map((t, k) => ({ id: `i${it.iteration}-t${k + 1}`, iteration: it.iteration, task: t.task, rubrics: t.rubrics }));
      else {
        it.challengerError = asked.error;
        it.tasks = [];
        log(`iteration ${it.iteration}: the Challenger gave no usable tasks (${asked.error})`);
      }
      this.save();
      this.unitDone(`iteration ${it.iteration}: ${it.tasks.length} tasks`);
    }
    const tasks = it.tasks ?? [];
    for (const task of tasks.slice(it.attempts.length)) {
      it.attempts.push(await this.attempt(task, it.reasonerSkillsIn));
      this.save();
      this.unitDone(`iteration ${it.iteration}: task ${it.attempts.length}/${tasks.length}`);
    }
    const byId = new Map(tasks.map((t) => [t.id, t]));
    const cases = (solved: boolean) => it.attempts.filter((a) => a.judgeError === undefined && a.solved === solved).map((a) => ({ task: byId.get(a.taskId) as Task, attempt: a }));
    if (!it.reasonerUpdate) {
      it.reasonerUpdate = await this.updateSide('reasoner', it.reasonerSkillsIn, cases(false));
      this.save();
      this.unitDone(`iteration ${it.iteration}: Reasoner skills`);
    }
    if (!it.challengerUpdate) {
      it.challengerUpdate = await this.updateSide('challenger', it.challengerSkillsIn, cases(true));
      this.save();
      this.unitDone(`iteration ${it.iteration}: Challenger skills`);
    }
    // The iteration's metrics line before the history records it as done (a resume drops a line of an
    // iteration not done, and writes it again).
    this.writeRow(iterationRow(it, (performance.now() - started) / 1000));
    it.done = true;
    this.save();
    const solved = it.attempts.filter((a) => a.solved).length;
    log(`iteration ${it.iteration}: solved ${solved}/${it.attempts.length}; Reasoner skills ${it.reasonerSkillsIn.length} → ${it.reasonerUpdate.skills.length}; Challenger skills ${it.challengerSkillsIn.length} → ${it.challengerUpdate.skills.length}`);
    this.unitDone(`iteration ${it.iteration}`);
  }

  /** The Reasoner answers with `skills`; the Judge grades every rubric item. */
  private async attempt(task: Task, skills: SkillSet): Promise<Attempt> {
    const c = this.config;
    const answer = stripThinking(await this.roles.reasoner.complete(reasonerMessages(this.context.text, skills, task.task), { maxTokens: c.reasonerTokens, temperature: c.temperature }));
    const judged = await askStructured(this.roles.judge, judgeMessages(task, answer), checkJudgeReply(task.rubrics.length), {
      retries: c.parseRetries,
      maxTokens: c.judgeTokens,
      temperature: c.temperature,
    });
    return judged.ok ? { taskId: task.id, answer, verdict: judged.value, solved: judged.value.solved } : { taskId: task.id, answer, solved: false, judgeError: judged.error };
  }

  private async updateSide(side: Side, skills: SkillSet, cases: Array<{ task: Task; attempt: Attempt }>): Promise<SideUpdate> {
    const c = this.config;
    const base: SideUpdate = { side, cases: cases.map((x) => x.attempt.taskId), skills };
    if (cases.length === 0) return base;
    const diag = await askStructured(this.roles.proposer, proposerMessages(side, this.context.text, skills, cases), checkProposerReply, {
      retries: c.parseRetries,
      maxTokens: c.proposerTokens,
      temperature: c.temperature,
    });
    if (!diag.ok) return { ...base, proposerError: diag.error };
    const gen = await askStructured(this.roles.generator, generatorMessages(side, this.context.text, skills, diag.value, c.maxSkills), checkGeneratorReply(c.maxSkills), {
      retries: c.parseRetries,
      maxTokens: c.generatorTokens,
      temperature: c.temperature,
    });
    if (!gen.ok) return { ...base, diagnoses: diag.value, generatorError: gen.error };
    return { ...base, diagnoses: diag.value, skills: gen.value };
  }

  private async replay(): Promise<void> {
    const its = this.history.iterations;
    if (!this.history.replay) {
      const { hard, easy } = probeSets(its, this.config.probeMax);
      this.history.replay = { hardProbe: hard, easyProbe: easy, candidates: its.map((it) => ({ iteration: it.iteration, hard: [], easy: [] })) };
      this.save();
    }
    const rp = this.history.replay;
    const tasks = new Map(its.flatMap((it) => it.tasks ?? []).map((t) => [t.id, t]));
    const skillsOf = (i: number): SkillSet => its[i - 1]?.reasonerUpdate?.skills ?? [];
    const keyOf = (i: number): string => JSON.stringify(skillsOf(i));
    for (const cand of rp.candidates) {
      if (cand.score !== undefined) continue;
      const twin = rp.candidates.find((o) => o.iteration < cand.iteration && keyOf(o.iteration) === keyOf(cand.iteration));
      if (twin) {
        cand.sameAs = twin.iteration;
        cand.hard = twin.hard.map((r) => ({ ...r }));
        cand.easy = twin.easy.map((r) => ({ ...r }));
      }
      for (const [probe, results] of [
        [rp.hardProbe, cand.hard],
        [rp.easyProbe, cand.easy],
      ] as Array<[string[], ReplayResult[]]>) {
        for (const id of probe.slice(results.length)) {
          const a = await this.attempt(tasks.get(id) as Task, skillsOf(cand.iteration));
          results.push({ taskId: id, solved: a.solved, ...(a.judgeError !== undefined ? { judgeError: a.judgeError } : {}) });
          this.save();
          this.unitDone(`replay: skills of iteration ${cand.iteration}`);
        }
      }
      const solved = (rs: ReplayResult[]) => rs.filter((r) => r.solved).length;
      const { scored } = selectByReplay([{ iteration: cand.iteration, hardSolved: solved(cand.hard), hardN: cand.hard.length, easySolved: solved(cand.easy), easyN: cand.easy.length }]);
      const s = scored[0] as NonNullable<(typeof scored)[0]>;
      Object.assign(cand, { rhoHard: s.rhoHard, rhoEasy: s.rhoEasy, score: s.score } satisfies Partial<ReplayCandidate>);
      this.save();
    }
    const { selected } = selectByReplay(
      rp.candidates.map((cd) => ({
        iteration: cd.iteration,
        hardSolved: cd.hard.filter((r) => r.solved).length,
        hardN: cd.hard.length,
        easySolved: cd.easy.filter((r) => r.solved).length,
        easyN: cd.easy.length,
      })),
    );
    rp.selected = selected;
    this.events.log?.(
      `replay: ${rp.hardProbe.length} hard / ${rp.easyProbe.length} easy probes; ${rp.candidates.map((cd) => `S${cd.iteration} ${cd.score?.toFixed(3)}`).join(', ')}; selected the skills of iteration ${selected}`,
    );
  }

  private writeOutputs(): void {
    const rp = this.history.replay;
    if (!rp || rp.selected === undefined) return;
    const cand = rp.candidates.find((cd) => cd.iteration === rp.selected) as ReplayCandidate;
    const skills = this.history.iterations[rp.selected - 1]?.reasonerUpdate?.skills ?? [];
    const note = `Ctx2Skill: ${selectionNote(rp, cand, skills, this.history.iterations.length)}; context ${this.history.context.source}`;
    writeJsonAtomic(join(this.outDir, 'skills.json'), { iteration: rp.selected, rhoHard: cand.rhoHard, rhoEasy: cand.rhoEasy, score: cand.score, skills });
    writeFileAtomic(join(this.outDir, 'skills.md'), skillsMarkdown(skills, note));
  }
}
