// Ctx2Skill's metrics.jsonl (docs/recipes.md, "Run metrics"): a line per finished iteration and, once the
// replay has scored every candidate, a `kind: "replay"` line per candidate skill set S^R_i. Each line holds
// its nested fields and, beside them, the same under the trainer's flat names where they apply
// (src/selfplay/flat-metrics.ts: `training/global_step` is the iteration, `timing_s/step` its seconds) and the
// recipe's own under `ctx2skill/`; the flat names go to TensorBoard too (--tensorboard). The file is
// rewritten whole and atomically at every line (it is small), so a killed run leaves no torn one.
import { existsSync, readFileSync } from 'node:fs';
import { writeFileAtomic } from '../../util/atomic.js';
import { finiteMetrics, type FlatMetrics } from '../../selfplay/flat-metrics.js';
import type { IterationRecord, ReplayCandidate } from './types.js';

export const METRICS_FILE = 'metrics.jsonl';

/** The TensorBoard label of the replay's files, so that a resume can drop them (src/selfplay/tensorboard-log.ts). */
export const REPLAY_LABEL = 'replay';

export interface MetricsRow {
  step: number;
  kind?: 'replay';
  [key: string]: unknown;
}

/** A metrics row's flat names: the keys with a '/' (the nested ones have none). */
export function flatPart(row: MetricsRow): FlatMetrics {
  return Object.fromEntries(Object.entries(row).filter(([k, v]) => k.includes('/') && typeof v === 'number')) as FlatMetrics;
}

/** The line of a finished iteration; `seconds`: what this process spent on it (after a resume, since the resume). */
export function iterationRow(it: IterationRecord, seconds: number): MetricsRow {
  const judged = it.attempts.filter((a) => a.judgeError === undefined);
  const solved = it.attempts.filter((a) => a.solved).length;
  const judgeErrors = it.attempts.length - judged.length;
  const updates = [it.reasonerUpdate, it.challengerUpdate];
  const updateErrors = updates.filter((u) => u?.proposerError !== undefined || u?.generatorError !== undefined).length;
  const nested = {
    step: it.iteration,
    iteration: it.iteration,
    tasks: it.tasks?.length ?? 0,
    solved,
    judgeErrors,
    challengerFailed: it.challengerError !== undefined,
    reasonerCases: it.reasonerUpdate?.cases.length ?? 0,
    challengerCases: it.challengerUpdate?.cases.length ?? 0,
    updateErrors,
    reasonerSkills: it.reasonerUpdate?.skills.length ?? 0,
    challengerSkills: it.challengerUpdate?.skills.length ?? 0,
    seconds,
  };
  const flat = finiteMetrics({
    'training/global_step': it.iteration,
    'timing_s/step': seconds,
    'ctx2skill/tasks': nested.tasks,
    'ctx2skill/solved': solved,
    // Over the judged tasks: a judgement that never parsed is neither solved nor failed.
    'ctx2skill/solve_ratio': judged.length === 0 ? Number.NaN : judged.filter((a) => a.solved).length / judged.length,
    'ctx2skill/judge_errors': judgeErrors,
    'ctx2skill/challenger_failed': nested.challengerFailed ? 1 : 0,
    'ctx2skill/reasoner_cases': nested.reasonerCases,
    'ctx2skill/challenger_cases': nested.challengerCases,
    'ctx2skill/update_errors': updateErrors,
    'ctx2skill/reasoner_skills': nested.reasonerSkills,
    'ctx2skill/challenger_skills': nested.challengerSkills,
  });
  return { ...nested, ...flat };
}

/** The replay's line for candidate S^R_i (its step is i, the iteration whose skills it scored). */
export function replayRow(c: ReplayCandidate, selected: number): MetricsRow {
  const solved = (rs: ReplayCandidate['hard']): number => rs.filter((r) => r.solved).length;
  const nested = {
    kind: 'replay' as const,
    step: c.iteration,
    iteration: c.iteration,
    hardSolved: solved(c.hard),
    hardProbes: c.hard.length,
    easySolved: solved(c.easy),
    easyProbes: c.easy.length,
    ...(c.rhoHard !== undefined ? { rhoHard: c.rhoHard } : {}),
    ...(c.rhoEasy !== undefined ? { rhoEasy: c.rhoEasy } : {}),
    ...(c.score !== undefined ? { score: c.score } : {}),
    selected: c.iteration === selected,
    ...(c.sameAs !== undefined ? { sameAs: c.sameAs } : {}),
  };
  const flat = finiteMetrics({
    'training/global_step': c.iteration,
    'ctx2skill/replay/hard_solved': nested.hardSolved,
    'ctx2skill/replay/easy_solved': nested.easySolved,
    'ctx2skill/replay/rho_hard': c.rhoHard ?? Number.NaN,
    'ctx2skill/replay/rho_easy': c.rhoEasy ?? Number.NaN,
    'ctx2skill/replay/score': c.score ?? Number.NaN,
    'ctx2skill/replay/selected': nested.selected ? 1 : 0,
  });
  return { ...nested, ...flat };
}

/** The run's metrics.jsonl, held in memory and rewritten whole at every line. */
export class MetricsFile {
  private constructor(
    readonly path: string,
    private readonly lines: string[],
  ) {}

  /** A new run's file, empty. */
  static create(path: string): MetricsFile {
    writeFileAtomic(path, '');
    return new MetricsFile(path, []);
  }

  /**
   * A resumed run's file, keeping the rows `keep` accepts (the work the resume does not redo) and dropping
   * the rest, which the resumed run writes again; a line that does not parse is no finished row and goes too.
   */
  static open(path: string, keep: (row: MetricsRow) => boolean): MetricsFile {
    const text = existsSync(path) ? readFileSync(path, 'utf8') : '';
    const lines = text.split('\n').filter((l) => {
      if (l.trim().length === 0) return false;
      try {
        const row = JSON.parse(l) as MetricsRow;
        return typeof row.step === 'number' && keep(row);
      } catch {
        return false;
      }
    });
    const file = new MetricsFile(path, lines);
    file.write();
    return file;
  }

  append(row: MetricsRow): void {
    this.lines.push(JSON.stringify(row));
    this.write();
  }

  private write(): void {
    writeFileAtomic(this.path, this.lines.length > 0 ? `${this.lines.join('\n')}\n` : '');
  }
}
