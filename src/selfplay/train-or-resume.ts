// Train a configuration into its run folder, or continue the run already there (an experiment script's same
// command after a kill): a folder whose config.json records this very configuration is resumed from its last
// complete checkpoint (`train`'s --resume path, which is bit-exact: test/world-train.test.ts), a folder that
// records another configuration is refused with the settings that differ (nothing of it is deleted), and a
// missing folder, or one without config.json, starts the run from step 0.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { configForDisk, parseSavedConfig, type TrainConfig, validateConfig } from '../settings/train.js';
import { train, type TrainHooks, type TrainSummary } from './trainer.js';

/** The settings whose recorded value differs from `config`'s (as config.json writes them), in the order of `config`'s keys. */
export function configDifferences(saved: TrainConfig, config: TrainConfig): string[] {
  const a = configForDisk(saved) as unknown as Record<string, unknown>;
  const b = configForDisk(config) as unknown as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(b), ...Object.keys(a)])];
  return keys.filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]));
}

/**
 * Trains `config` into `config.out`, or resumes the run found there when its config.json records the same
 * configuration. `onResume` is told the folder before a resume (for the caller's log).
 */
export async function trainOrResume(config: TrainConfig, hooks: TrainHooks, onResume?: (dir: string) => void): Promise<TrainSummary> {
  const wanted = validateConfig(config);
  const configPath = join(wanted.out, 'config.json');
  if (!existsSync(configPath)) return train(wanted, hooks);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(configPath, 'utf8'));
  } catch (err) {
    throw new Error(`${configPath} cannot be read as JSON (${(err as Error).message}): remove ${wanted.out} to train this run from the start`);
  }
  const saved = validateConfig(parseSavedConfig(raw, configPath));
  const differ = configDifferences(saved, wanted);
  if (differ.length > 0) {
    const shown = differ.map((k) => `${k}: ${JSON.stringify((saved as unknown as Record<string, unknown>)[k])} there, ${JSON.stringify((wanted as unknown as Record<string, unknown>)[k])} here`);
    throw new Error(`${wanted.out} holds a run of another configuration (${shown.join('; ')}): remove it to train this one, or give another folder`);
  }
  onResume?.(wanted.out);
  return train(undefined, hooks, wanted.out);
}
