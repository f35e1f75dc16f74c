// The skill library on disk (docs/recipes.md): one JSON file, rewritten atomically at every commit (the routing
// statistics change every iteration); its version counts the skill sets: it is incremented when a commit adds or
// removes a skill, never for statistics alone. A torn or foreign file is an error naming the file.
import { existsSync, readFileSync } from 'node:fs';
import { writeJsonAtomic } from '../../util/atomic.js';
import { type SkillPackage, seedPackages } from './packages.js';

export const LIBRARY_FORMAT = 'sesa-skill-sp-library';

export interface LibraryFile {
  format: typeof LIBRARY_FORMAT;
  version: number;
  iteration: number;
  packages: SkillPackage[];
}

export class SkillLibrary {
  private constructor(
    readonly path: string,
    public packages: SkillPackage[],
    public version: number,
    public iteration: number,
  ) {}

  /** Opens the library at `path`, or creates it from the seed packages (version 1) when it does not exist. */
  static open(path: string, seeds: () => SkillPackage[] = seedPackages): SkillLibrary {
    if (!existsSync(path)) {
      const lib = new SkillLibrary(path, seeds(), 0, 0);
      lib.commit(0, true);
      return lib;
    }
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(path, 'utf8'));
    } catch (err) {
      throw new Error(`${path}: not valid JSON (${(err as Error).message})`);
    }
    const f = raw as Partial<LibraryFile>;
    if (f.format !== LIBRARY_FORMAT) throw new Error(`${path}: not a Skill Self-Play library (format ${JSON.stringify(f.format)})`);
    if (!Number.isInteger(f.version) || !Array.isArray(f.packages)) throw new Error(`${path}: the version or packages field is missing`);
    f.packages.forEach((p, i) => {
      if (typeof p?.id !== 'string' || (p.family !== 'zebra' && p.family !== 'toolcall') || typeof p.validator !== 'object' || typeof p.stats !== 'object') {
        throw new Error(`${path}: packages[${i}] lacks its id, family, validator or stats`);
      }
    });
    return new SkillLibrary(path, f.packages, f.version as number, f.iteration ?? 0);
  }

  get(id: string): SkillPackage | undefined {
    return this.packages.find((p) => p.id === id);
  }

  /**
   * Writes the library atomically; `changed` (skills added or removed since the last commit) makes it the next
   * version. Returns the version written.
   */
  commit(iteration: number, changed: boolean): number {
    if (changed) this.version++;
    this.iteration = iteration;
    const file: LibraryFile = { format: LIBRARY_FORMAT, version: this.version, iteration, packages: this.packages };
    writeJsonAtomic(this.path, file);
    return this.version;
  }
}
