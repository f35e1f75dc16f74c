// Short model names the CLI accepts (`--model qwen3-4b`, `sesa-train download qwen3-4b`) and the facts about
// each that matter before its files are read: where it lives on the Hugging Face Hub, whether its chat template
// takes `enable_thinking`, and whether the repo is gated (needs an accepted licence and HF_TOKEN).

export type ModelFamily = 'qwen3' | 'qwen2.5' | 'llama3';

export interface RegistryEntry {
  /** The short name, lower case. */
  name: string;
  /** Hugging Face repo id, `Org/Name`. */
  repoId: string;
  family: ModelFamily;
  /** Approximate parameter count in billions, for messages and memory estimates. */
  paramsB: number;
  /** The chat template takes `enable_thinking` (Qwen3); SESA rollouts turn it off by default. */
  thinking: boolean;
  /** Gated on the Hub: accept the licence on the model page and set HF_TOKEN before downloading. */
  gated: boolean;
  /** The licence named on the model card. */
  license: string;
}

function entry(name: string, repoId: string, family: ModelFamily, paramsB: number, license: string): RegistryEntry {
  return { name, repoId, family, paramsB, thinking: family === 'qwen3', gated: family === 'llama3', license };
}

export const MODEL_REGISTRY: readonly RegistryEntry[] = [
  entry('qwen3-0.6b', 'Qwen/Qwen3-0.6B', 'qwen3', 0.6, 'apache-2.0'),
  entry('qwen3-1.7b', 'Qwen/Qwen3-1.7B', 'qwen3', 1.7, 'apache-2.0'),
  entry('qwen3-4b', 'Qwen/Qwen3-4B', 'qwen3', 4.0, 'apache-2.0'),
  entry('qwen3-8b', 'Qwen/Qwen3-8B', 'qwen3', 8.2, 'apache-2.0'),
  entry('qwen3-14b', 'Qwen/Qwen3-14B', 'qwen3', 14.8, 'apache-2.0'),
  entry('qwen2.5-0.5b-instruct', 'Qwen/Qwen2.5-0.5B-Instruct', 'qwen2.5', 0.5, 'apache-2.0'),
  entry('qwen2.5-1.5b-instruct', 'Qwen/Qwen2.5-1.5B-Instruct', 'qwen2.5', 1.5, 'apache-2.0'),
  entry('qwen2.5-3b-instruct', 'Qwen/Qwen2.5-3B-Instruct', 'qwen2.5', 3.1, 'qwen-research'),
  entry('qwen2.5-7b-instruct', 'Qwen/Qwen2.5-7B-Instruct', 'qwen2.5', 7.6, 'apache-2.0'),
  entry('llama-3.2-1b-instruct', 'meta-llama/Llama-3.2-1B-Instruct', 'llama3', 1.2, 'llama3.2'),
  entry('llama-3.2-3b-instruct', 'meta-llama/Llama-3.2-3B-Instruct', 'llama3', 3.2, 'llama3.2'),
  entry('llama-3.1-8b-instruct', 'meta-llama/Llama-3.1-8B-Instruct', 'llama3', 8.0, 'llama3.1'),
];

/** The entry for a short name or a registered repo id (both case-insensitive), or undefined. */
export function lookupModel(nameOrRepo: string): RegistryEntry | undefined {
  const key = nameOrRepo.trim().toLowerCase();
  return MODEL_REGISTRY.find((e) => e.name === key || e.repoId.toLowerCase() === key);
}

/** The short names, for help texts and error messages. */
export function registryNames(): string[] {
  return MODEL_REGISTRY.map((e) => e.name);
}
