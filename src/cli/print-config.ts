// `sesa-train train --print-config` (docs/usage.md, "Seeing the settings before a run"): the settings a run would
// start with, resolved and checked exactly as train resolves them (defaults ← the model's ← the recipe's ← the
// config file ← flags; with --resume, the run's config.json with the flags' changes), printed as the JSON that
// RUN_DIR/config.json would hold, and nothing written or loaded: no run folder, no lock, no model.
import { existsSync, readFileSync } from 'node:fs';
import { configForDisk, parseSavedConfig, resumeChanges, type TrainConfig, validateConfig } from '../settings/train.js';
import { RunFolder } from '../selfplay/run-folder.js';

/** The configuration a `--resume RUN_DIR` with these flags would continue with (refusals thrown as train throws them). */
export function resumedConfig(runDir: string, fromFlags: Partial<TrainConfig>): TrainConfig {
  const folder = new RunFolder(runDir);
  if (!existsSync(folder.configPath)) throw new Error(`${runDir} is not a run folder: ${folder.configPath} does not exist`);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(folder.configPath, 'utf8'));
  } catch (err) {
    throw new Error(`${folder.configPath}: not valid JSON (${(err as Error).message})`);
  }
  const saved = validateConfig(parseSavedConfig(raw, folder.configPath));
  const { changes, refused } = resumeChanges(saved, fromFlags, folder.latestCheckpoint()?.step ?? 0);
  if (refused.length > 0) throw new Error(`--resume ${runDir}: ${refused.join('; ')}`);
  return validateConfig({ ...saved, ...Object.fromEntries(changes.map((c) => [c.key, c.to])) });
}

/** The text --print-config prints: config.json's content (endpoint URLs without their secrets), a valid --config file. */
export function printedConfig(config: TrainConfig): string {
  return `${JSON.stringify(configForDisk(validateConfig(config)), null, 2)}\n`;
}
