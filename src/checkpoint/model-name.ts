// The one resolver of `--model` names that every command uses: the two models that ship with sesa ('demo', the
// demo world's warm start in models/demo; 'tiny', the tiny random Qwen3 made on first use), a registry name or
// Hub repo id found in the Hugging Face cache, or a local folder (./resolve.ts). A command that took only some
// of these answered "unknown model 'demo'" for a name another command accepted.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../util/shared-data.js';
import { resolveModel, type ResolvedModel, type ResolveOptions } from '../model/resolve.js';
import { ensureTinyDefaultModel, TINY_DEFAULT_NAME } from './tiny-default.js';

/** `--model demo`: the demo world's warm-start model shipped in models/demo (scripts/make-demo-model.ts, docs/world.md). */
export const DEMO_MODEL_NAME = 'demo';

export { TINY_DEFAULT_NAME };

/** The names that need no folder and no download. */
export const BUILTIN_MODEL_NAMES = [DEMO_MODEL_NAME, TINY_DEFAULT_NAME] as const;

/** Where the demo world's warm-start model ships (it may be missing in a checkout that dropped it). */
export function demoModelPath(): string {
  return join(repoRoot(), 'models', 'demo');
}

/** The demo model's folder; an error naming the missing file and how to build it when it is not there. */
export function demoModelDir(): string {
  const dir = demoModelPath();
  if (!existsSync(join(dir, 'model.safetensors'))) {
    throw new Error(`--model demo: ${join(dir, 'model.safetensors')} not found; build it with npx tsx scripts/make-demo-model.ts (see docs/world.md)`);
  }
  return dir;
}

export interface ModelNameOptions extends ResolveOptions {
  /** Where 'tiny' says that it is being made (first use only); default: nowhere. */
  log?: (line: string) => void;
}

/**
 * What an adapter's `base_model_name_or_path` names (docs/models.md, "Adapters and their base model"): the Hub
 * repo id for a model that has one (a registry name, a repo id, or a folder in the Hugging Face cache), which
 * PEFT and vLLM fetch or find in their cache; else the model's absolute folder, which PEFT loads on this machine
 * (the demo and tiny models and other local folders are on no Hub). Never a registry short name such as
 * 'qwen3-0.6b', which PEFT would look up as a Hub repo that does not exist.
 */
export function peftBaseModel(resolved: ResolvedModel): string {
  return resolved.repoId ?? resolved.dir;
}

/**
 * Resolves a `--model` value to a folder: 'demo', 'tiny', a folder, a registry name or a Hub repo id (from the
 * Hugging Face cache, or downloaded with `download`). `repoId` is set only for a model that has one on the Hub.
 */
export async function resolveModelName(name: string, opts: ModelNameOptions = {}): Promise<ResolvedModel> {
  if (name === DEMO_MODEL_NAME) return { dir: demoModelDir(), source: 'demo' };
  if (name === TINY_DEFAULT_NAME) return { dir: ensureTinyDefaultModel(opts.log ?? (() => {})), source: 'tiny' };
  const { log: _log, ...resolveOpts } = opts;
  return resolveModel(name, resolveOpts);
}
