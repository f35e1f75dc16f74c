// What a recipe command does with flags given alongside --resume: its settings table says, per setting,
// whether a resumed run may change it (src/settings/setting.ts, `resume`). Every refused flag is named
// with the reason, together with the `others` (options such as --config) a resumed run does not take.
import type { SettingTable } from '../settings/setting.js';
import { flagName } from '../settings/table.js';

export function refusedOnResume(table: SettingTable, given: Record<string, unknown>, others: readonly string[]): void {
  const refused: string[] = [];
  for (const k of Object.keys(given)) {
    const policy = table[k]?.resume;
    if (policy?.kind === 'refuse') refused.push(`--${flagName(k)} cannot change on --resume: ${policy.reason}`);
  }
  for (const o of others) refused.push(`${o} cannot be given with --resume: the run keeps the settings it recorded`);
  if (refused.length > 0) throw new Error(`--resume:\n  - ${refused.join('\n  - ')}`);
}
