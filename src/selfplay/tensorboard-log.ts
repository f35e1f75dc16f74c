// The run's TensorBoard log (docs/usage.md, "TensorBoard"): RUN_DIR/tensorboard/, one small event file per
// step (and per held-out eval), each written whole and renamed into place, so a file TensorBoard sees is
// always complete and a killed run leaves no torn one. TensorBoard reads the files of a folder in name order
// and follows new ones as they appear: the names sort by the process's start time, then a sequence number.
//   events.out.tfevents.<start ms, 13 digits>.<host>.<pid>.<sequence, 6 digits>.step-<N>[.<label>]
// A resumed run removes the files of the steps after its checkpoint, which it trains again (as metrics.jsonl
// drops their lines). A label names files that are not a step's own (Ctx2Skill's replay of each iteration's
// skills, docs/recipes.md), so that a resume can remove them whatever their step.
import { existsSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { eventFile } from '../formats/tensorboard.js';
import { ensureDir, writeFileAtomic } from '../util/atomic.js';

export const TENSORBOARD_DIR = 'tensorboard';

/** Where a file is written before it is renamed into place: a name TensorBoard does not take for an event file. */
const STAGING_DIR = '.staging';

/** The digits of the start time and of the sequence number in a file name (so that names sort as numbers). */
const TIME_DIGITS = 13;
const SEQUENCE_DIGITS = 6;

const FILE_PATTERN = /^events\.out\.tfevents\.\d+\..*\.step-(\d+)(?:\.([a-z][a-z0-9-]*))?$/;

/** What a label may be: it ends the file name, so no dot (the host part of the name holds none either). */
const LABEL_PATTERN = /^[a-z][a-z0-9-]*$/;

export class TensorBoardLog {
  private sequence = 0;
  private readonly prefix: string;

  private constructor(readonly dir: string) {
    const start = String(Date.now()).padStart(TIME_DIGITS, '0');
    this.prefix = `events.out.tfevents.${start}.${hostname().replace(/[^A-Za-z0-9-]/g, '_')}.${process.pid}`;
  }

  /**
   * The log of the run in `runDir`, keeping the files of steps ≤ `keepThroughStep` (a resumed run's checkpoint
   * step; 0 for a new run) and removing later ones, the files labelled with one of `dropLabels` whatever their
   * step, and anything a killed writer left in the staging folder.
   */
  static open(runDir: string, keepThroughStep: number, dropLabels: readonly string[] = []): TensorBoardLog {
    const log = new TensorBoardLog(join(runDir, TENSORBOARD_DIR));
    if (existsSync(log.dir)) {
      rmSync(join(log.dir, STAGING_DIR), { recursive: true, force: true });
      for (const name of readdirSync(log.dir)) {
        const m = FILE_PATTERN.exec(name);
        if (m && (Number(m[1]) > keepThroughStep || (m[2] !== undefined && dropLabels.includes(m[2])))) rmSync(join(log.dir, name), { force: true });
      }
    }
    return log;
  }

  /** Writes the scalars of `step` as one new event file (its name ending in `.label` where given); returns its path. */
  write(step: number, scalars: Readonly<Record<string, number>>, label?: string): string {
    if (label !== undefined && !LABEL_PATTERN.test(label)) throw new Error(`TensorBoard file label '${label}': must be lower-case letters, digits and '-', starting with a letter`);
    const now = Date.now() / 1000;
    const name = `${this.prefix}.${String(this.sequence++).padStart(SEQUENCE_DIGITS, '0')}.step-${step}${label !== undefined ? `.${label}` : ''}`;
    const staged = join(this.dir, STAGING_DIR, `${name.replace('tfevents', 'pending')}`);
    ensureDir(join(this.dir, STAGING_DIR));
    writeFileAtomic(staged, eventFile([{ wallTime: now, step, scalars }], now));
    const path = join(this.dir, name);
    renameSync(staged, path);
    return path;
  }
}
