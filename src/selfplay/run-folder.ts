// The run folder (docs/method.md, "The run folder, checkpoints and resume"):
//   config.json            the resolved configuration
//   metrics.jsonl          one line per step
//   skills.json            the live skill bank (owned by the SkillBank, committed every step)
//   train.log              a human log
//   checkpoints/step-N/    proposer/ and solver/ (PEFT), optimizer-*.safetensors, skills.json, state.json
// Every file is written atomically. A checkpoint is written into a temp folder and renamed into place, and
// state.json is its last file: a folder without it is incomplete and ignored, so a run killed at any moment
// resumes from its last complete checkpoint.
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic, writeJsonAtomic } from '../checkpoint/atomic.js';
import type { TrainConfig } from './config.js';

export interface CheckpointState {
  step: number;
  seed: number;
  /** The bank version at the checkpoint (for the summary and for checks). */
  bankVersion?: number;
  savedAt: string;
}

export class RunFolder {
  readonly configPath: string;
  readonly metricsPath: string;
  readonly bankPath: string;
  readonly logPath: string;
  readonly checkpointsDir: string;
  private metricsLines: string[] = [];

  constructor(readonly dir: string) {
    this.configPath = join(dir, 'config.json');
    this.metricsPath = join(dir, 'metrics.jsonl');
    this.bankPath = join(dir, 'skills.json');
    this.logPath = join(dir, 'train.log');
    this.checkpointsDir = join(dir, 'checkpoints');
  }

  /** A new run: refuses a folder that already holds one (use --resume for that). */
  static create(dir: string, config: TrainConfig): RunFolder {
    const run = new RunFolder(dir);
    if (existsSync(run.configPath)) {
      throw new Error(`${dir} already holds a run (${run.configPath} exists): resume it with --resume ${dir}, or choose another --out`);
    }
    mkdirSync(run.checkpointsDir, { recursive: true });
    writeJsonAtomic(run.configPath, config);
    writeFileAtomic(run.metricsPath, '');
    return run;
  }

  /** An existing run, for --resume. */
  static open(dir: string): { run: RunFolder; config: TrainConfig } {
    const run = new RunFolder(dir);
    if (!existsSync(run.configPath)) throw new Error(`${dir} is not a run folder: ${run.configPath} does not exist`);
    let config: TrainConfig;
    try {
      config = JSON.parse(readFileSync(run.configPath, 'utf8')) as TrainConfig;
    } catch (err) {
      throw new Error(`${run.configPath}: not valid JSON (${(err as Error).message})`);
    }
    if (existsSync(run.metricsPath)) run.metricsLines = readFileSync(run.metricsPath, 'utf8').split('\n').filter((l) => l.trim().length > 0);
    return { run, config };
  }

  checkpointDir(step: number): string {
    return join(this.checkpointsDir, `step-${step}`);
  }

  /** The newest complete checkpoint (one with state.json), or undefined. */
  latestCheckpoint(): { step: number; dir: string; state: CheckpointState } | undefined {
    if (!existsSync(this.checkpointsDir)) return undefined;
    const steps = readdirSync(this.checkpointsDir)
      .map((name) => /^step-(\d+)$/.exec(name))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number(m[1]))
      .sort((a, b) => b - a);
    for (const step of steps) {
      const dir = this.checkpointDir(step);
      const statePath = join(dir, 'state.json');
      if (!existsSync(statePath)) continue;
      try {
        return { step, dir, state: JSON.parse(readFileSync(statePath, 'utf8')) as CheckpointState };
      } catch {
        continue; // an unreadable state.json is an incomplete checkpoint; fall back to an older one
      }
    }
    return undefined;
  }

  /**
   * Writes checkpoint `step`: `fill(tmpDir)` writes the payload, then state.json goes last and the folder
   * is renamed into place (replacing an older copy of the same step).
   */
  async writeCheckpoint(step: number, state: CheckpointState, fill: (dir: string) => Promise<void>): Promise<string> {
    const final = this.checkpointDir(step);
    const tmp = join(this.checkpointsDir, `.step-${step}.${process.pid}.tmp`);
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    await fill(tmp);
    writeJsonAtomic(join(tmp, 'state.json'), state);
    rmSync(final, { recursive: true, force: true });
    renameSync(tmp, final);
    return final;
  }

  /** Appends one step's metrics (the whole file is rewritten atomically: it is small). */
  appendMetrics(record: object): void {
    this.metricsLines.push(JSON.stringify(record));
    writeFileAtomic(this.metricsPath, `${this.metricsLines.join('\n')}\n`);
  }

  /** On resume: drops metrics of steps after the checkpoint, which the resumed run will redo. */
  truncateMetricsAfter(step: number): void {
    this.metricsLines = this.metricsLines.filter((l) => {
      try {
        const s = (JSON.parse(l) as { step?: unknown }).step;
        return typeof s === 'number' && s <= step;
      } catch {
        return false; // a torn line cannot be a completed step's record
      }
    });
    writeFileAtomic(this.metricsPath, this.metricsLines.length > 0 ? `${this.metricsLines.join('\n')}\n` : '');
  }

  metrics(): object[] {
    return this.metricsLines.map((l) => JSON.parse(l) as object);
  }

  /** A log line (appended: a torn last line after a kill is harmless, and the log is never read back). */
  log(line: string): void {
    appendFileSync(this.logPath, `${new Date().toISOString()} ${line}\n`);
  }
}
