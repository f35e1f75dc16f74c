// The run folder (docs/method.md, "The run folder, checkpoints and resume"):
//   config.json            the resolved configuration
//   metrics.jsonl          one line per step
//   skills.json            the live skill bank (owned by the SkillBank, committed every step)
//   train.log              a human log
//   eval/step-N-skills-M.jsonl  the held-out eval's predictions at step N, skills on or off (one line a question)
//   .lock                  held by the one process that writes the run (pid and host inside)
//   checkpoints/step-N/    proposer/ and solver/ (PEFT, each with its optimizer state), skills.json, state.json,
//                          manifest.json (sizes and checksums of all the others, written last)
// Every file is written atomically. A checkpoint is written into a temp folder and renamed into place, and
// its manifest is the last file: a checkpoint is restored only when every file matches its manifest and
// loads, else the next older one is tried, and the log says which was skipped and why.
import { existsSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { appendToFile, ensureDir, sweepStaleTemps, writeFileAtomic, writeJsonAtomic } from '../util/atomic.js';
import { checkManifest, writeManifest } from '../formats/manifest.js';
import { FileLock } from '../util/lock.js';
import { configForDisk, type TrainConfig } from '../settings/train.js';

export interface CheckpointState {
  step: number;
  seed: number;
  /** The bank version at the checkpoint (for the summary and for checks). */
  bankVersion?: number;
  savedAt: string;
}

export interface CheckpointRef {
  step: number;
  dir: string;
  state: CheckpointState;
}

/** A checkpoint that was not restored, and why. */
export interface SkippedCheckpoint {
  step: number;
  reason: string;
}

export const LOCK_FILE = '.lock';

export class RunFolder {
  readonly configPath: string;
  readonly metricsPath: string;
  readonly bankPath: string;
  readonly logPath: string;
  readonly checkpointsDir: string;
  readonly lockPath: string;
  private metricsLines: string[] = [];
  private lock: FileLock | undefined;
  /** The folders create() made (the run folder and missing parents), deepest first. */
  private createdDirs: string[] = [];

  constructor(readonly dir: string) {
    this.configPath = join(dir, 'config.json');
    this.metricsPath = join(dir, 'metrics.jsonl');
    this.bankPath = join(dir, 'skills.json');
    this.logPath = join(dir, 'train.log');
    this.checkpointsDir = join(dir, 'checkpoints');
    this.lockPath = join(dir, LOCK_FILE);
  }

  /** A new run: refuses a folder that already holds one (use --resume for that). */
  static create(dir: string, config: TrainConfig, warn?: (line: string) => void): RunFolder {
    const run = new RunFolder(dir);
    if (existsSync(run.configPath)) {
      throw new Error(`${dir} already holds a run (${run.configPath} exists): resume it with --resume ${dir}, or choose another --out`);
    }
    for (let d = resolve(dir); !existsSync(d) && dirname(d) !== d; d = dirname(d)) run.createdDirs.push(d);
    ensureDir(dir);
    run.lock = FileLock.acquire(run.lockPath, `run folder ${dir}`, 'training', warn);
    if (existsSync(run.configPath)) {
      run.release();
      throw new Error(`${dir} already holds a run (${run.configPath} exists): resume it with --resume ${dir}, or choose another --out`);
    }
    run.sweepTemps(warn);
    ensureDir(run.checkpointsDir);
    writeJsonAtomic(run.configPath, configForDisk(config));
    writeFileAtomic(run.metricsPath, '');
    return run;
  }

  /** An existing run, for --resume. */
  static open(dir: string, warn?: (line: string) => void): { run: RunFolder; config: TrainConfig } {
    const run = new RunFolder(dir);
    if (!existsSync(run.configPath)) throw new Error(`${dir} is not a run folder: ${run.configPath} does not exist`);
    run.lock = FileLock.acquire(run.lockPath, `run folder ${dir}`, 'training', warn);
    try {
      let config: TrainConfig;
      try {
        config = JSON.parse(readFileSync(run.configPath, 'utf8')) as TrainConfig;
      } catch (err) {
        throw new Error(`${run.configPath}: not valid JSON (${(err as Error).message})`);
      }
      run.sweepTemps(warn);
      if (existsSync(run.metricsPath)) run.metricsLines = readFileSync(run.metricsPath, 'utf8').split('\n').filter((l) => l.trim().length > 0);
      return { run, config };
    } catch (err) {
      run.release();
      throw err;
    }
  }

  /** Lets another process write the run (at the end, or after a failed start). */
  release(): void {
    this.lock?.release();
    this.lock = undefined;
  }

  /**
   * After a new run's start failed before its first step: removes what create() and the start wrote (config,
   * empty metrics, the empty checkpoints folder, train.log, the new bank, the llama.cpp export, the lock) and the
   * folders create() made when nothing else is in them, so a
   * failed start leaves nothing behind and the same command can run again. The error is on the console.
   */
  discardUnstarted(): void {
    rmSync(this.configPath, { force: true });
    if (this.metricsLines.length === 0) rmSync(this.metricsPath, { force: true });
    if (existsSync(this.checkpointsDir) && readdirSync(this.checkpointsDir).length === 0) rmSync(this.checkpointsDir, { recursive: true, force: true });
    rmSync(this.logPath, { force: true });
    // What a start writes before its first step besides these: the new skill bank with its lock, and the
    // llama.cpp engine's export of the base model.
    for (const f of [this.bankPath, `${this.bankPath}.lock`, join(this.dir, 'llama-cpp')]) rmSync(f, { recursive: true, force: true });
    this.release();
    for (const d of this.createdDirs) {
      if (!existsSync(d) || readdirSync(d).length > 0) break;
      rmdirSync(d);
    }
  }

  /** Removes temp files and folders that a killed writer left (never those of a process still running). */
  private sweepTemps(warn?: (line: string) => void): void {
    const swept = [this.dir, this.checkpointsDir].flatMap((d) => sweepStaleTemps(d, (name) => name.startsWith('.')));
    if (swept.length > 0) warn?.(`removed ${swept.length} temp file(s) left by an interrupted writer: ${swept.join(', ')}`);
  }

  checkpointDir(step: number): string {
    return join(this.checkpointsDir, `step-${step}`);
  }

  /** Every checkpoint folder's step, newest first (complete or not). */
  checkpointSteps(): number[] {
    if (!existsSync(this.checkpointsDir)) return [];
    return readdirSync(this.checkpointsDir)
      .map((name) => /^step-(\d+)$/.exec(name))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number(m[1]))
      .sort((a, b) => b - a);
  }

  /** Checkpoint `step` if its files are whole (manifest, state.json); else why not. */
  inspectCheckpoint(step: number): CheckpointRef | SkippedCheckpoint {
    const dir = this.checkpointDir(step);
    const statePath = join(dir, 'state.json');
    const manifest = checkManifest(dir);
    if (manifest.problem) return { step, reason: manifest.problem };
    if (!existsSync(statePath)) return { step, reason: `${statePath} is missing (the checkpoint is incomplete)` };
    try {
      const state = JSON.parse(readFileSync(statePath, 'utf8')) as CheckpointState;
      if (state.step !== step) return { step, reason: `${statePath}: records step ${String(state.step)}, not ${step}` };
      return { step, dir, state };
    } catch (err) {
      return { step, reason: `${statePath}: not valid JSON (${(err as Error).message})` };
    }
  }

  /** The newest checkpoint whose files are whole, or undefined. */
  latestCheckpoint(): CheckpointRef | undefined {
    for (const step of this.checkpointSteps()) {
      const c = this.inspectCheckpoint(step);
      if ('dir' in c) return c;
    }
    return undefined;
  }

  /**
   * The newest checkpoint that is whole and that `load` accepts (it reads every file it restores and throws
   * on a bad one), with what `load` returned; older ones are tried in turn. Nothing is written here: the
   * caller writes only after this returns. With checkpoints present but none usable, an error lists why.
   */
  async restoreLatest<T>(load: (c: CheckpointRef) => Promise<T>): Promise<{ checkpoint?: CheckpointRef & { loaded: T }; skipped: SkippedCheckpoint[] }> {
    const skipped: SkippedCheckpoint[] = [];
    for (const step of this.checkpointSteps()) {
      const c = this.inspectCheckpoint(step);
      if (!('dir' in c)) {
        skipped.push(c);
        continue;
      }
      try {
        return { checkpoint: { ...c, loaded: await load(c) }, skipped };
      } catch (err) {
        skipped.push({ step, reason: (err as Error).message });
      }
    }
    if (skipped.length > 0) {
      throw new Error(
        `${this.dir}: no usable checkpoint; ${skipped.map((s) => `step ${s.step}: ${s.reason}`).join('; ')}. Nothing was changed; repair or move the checkpoints away to start over`,
      );
    }
    return { skipped };
  }

  /**
   * Writes checkpoint `step`: `fill(tmpDir)` writes the payload, then state.json and the manifest go last
   * and the folder is renamed into place (replacing an older copy of the same step). A failure removes the
   * temp folder.
   */
  async writeCheckpoint(step: number, state: CheckpointState, fill: (dir: string) => Promise<void>): Promise<string> {
    const final = this.checkpointDir(step);
    const tmp = join(this.checkpointsDir, `.step-${step}.${process.pid}.tmp`);
    rmSync(tmp, { recursive: true, force: true });
    ensureDir(tmp);
    try {
      await fill(tmp);
      writeJsonAtomic(join(tmp, 'state.json'), state);
      writeManifest(tmp);
      rmSync(final, { recursive: true, force: true });
      renameSync(tmp, final);
    } catch (err) {
      rmSync(tmp, { recursive: true, force: true });
      throw err;
    }
    return final;
  }

  /** Appends one step's metrics (the whole file is rewritten atomically: it is small). */
  appendMetrics(record: object): void {
    this.metricsLines.push(JSON.stringify(record));
    writeFileAtomic(this.metricsPath, `${this.metricsLines.join('\n')}\n`);
  }

  /** The held-out predictions of one eval (one JSON object a line, as `sesa-train eval` writes predictions.jsonl). */
  evalPredictionsPath(step: number, skills: 'on' | 'off'): string {
    return join(this.dir, 'eval', `step-${step}-skills-${skills}.jsonl`);
  }

  writeEvalPredictions(step: number, skills: 'on' | 'off', records: readonly object[]): void {
    const file = this.evalPredictionsPath(step, skills);
    ensureDir(join(this.dir, 'eval'));
    writeFileAtomic(file, records.map((r) => JSON.stringify(r)).join('\n') + (records.length > 0 ? '\n' : ''));
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
    appendToFile(this.logPath, `${new Date().toISOString()} ${line}\n`);
  }
}
