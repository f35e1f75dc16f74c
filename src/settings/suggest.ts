// The nearest known setting to a mistyped one (a flag or a settings-file key): the same name in another spelling
// (`group_size`, `GroupSize` → group-size), the name another trainer gives it (TRL's and verl's, below), or a
// name within a few typing slips (`stepz` → steps). docs/options.md lists every setting.
import { own } from '../util/own.js';

/** Lower case, letters and digits only: `group_size`, `group-size` and `groupSize` are one name. */
function plain(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/**
 * What TRL and verl call a setting this trainer names otherwise (plain spelling → our camelCase key). A hint
 * for an error message only: these names are never accepted as settings.
 */
const OTHER_TRAINERS_NAMES: Readonly<Record<string, string>> = {
  learningrate: 'lr',
  numtrainepochs: 'epochs',
  numgenerations: 'groupSize',
  rolloutn: 'groupSize',
  beta: 'klCoef',
  klloss: 'klCoef',
  maxcompletionlength: 'maxResponseTokens',
  responselength: 'maxResponseTokens',
  ppoepochs: 'solverEpochs',
};

/** Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`. */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i] as number[];
      const up = d[i - 1] as number[];
      row[j] = Math.min((up[j] as number) + 1, (row[j - 1] as number) + 1, (up[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1);
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}

/**
 * The known key (camelCase, as given in `known`) nearest to `given`, or undefined when none is near: the same
 * plain spelling, another trainer's name for it, or at most one slip per four letters (and at most two).
 */
export function nearestSetting(given: string, known: readonly string[]): string | undefined {
  const g = plain(given);
  if (g.length === 0) return undefined;
  const same = known.find((k) => plain(k) === g);
  if (same !== undefined) return same;
  const other = own(OTHER_TRAINERS_NAMES, g);
  if (other !== undefined && known.includes(other)) return other;
  const allowed = Math.min(2, Math.max(1, Math.floor(g.length / 4)));
  let best: { key: string; d: number } | undefined;
  for (const k of known) {
    const p = plain(k);
    // The length difference is a lower bound of the distance: a long name (a hostile file's) is never compared.
    if (Math.abs(p.length - g.length) > allowed) continue;
    const d = distance(g, p);
    if (d <= allowed && (best === undefined || d < best.d)) best = { key: k, d };
  }
  return best?.key;
}
