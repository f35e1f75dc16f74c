// The settings of an SFT run (docs/sft.md), declared once in a table built with the trainer's helpers
// (src/settings/setting.ts): `sesa-train sft`'s flags and --help, its --config files (JSON or YAML,
// kebab-case or camelCase keys), the defaults and the checks all derive from it. A setting that train also has
// carries train's name (lr-schedule, enable-thinking, warmup-steps, micro-batch-size, lora-r, lora-alpha,
// lora-targets, seed, ...); the defaults are SFT's own. The resolved settings are saved in the run folder as
// sft.json; a resumed run reads them back from there (readSavedSftConfig: keys of older runs still read).
//
// TO ADD A SETTING: one entry in SFT_SETTINGS (key, default, help, check); read it from the SftConfig where it
// is used (./trainer.ts). A rule that ties two settings together goes into sftProblems.
import { PROJECTIONS } from '../model/qwen3.js';
import { bool, choice, type ConfigOf, fixedOnResumeExcept, int, list, num, optionalStr, requiredChoice, requiredStr } from '../settings/setting.js';
import { defaultsOf, renamedKeyProblems, resolveSettings, type SettingsLayer } from '../settings/table.js';
import { BACKEND_CHOICES } from '../tensor/backend.js';
import { LOSS_ON } from './transcript.js';

export const SFT_SETTINGS = fixedOnResumeExcept(
  {
    model: requiredStr({ help: 'model folder or name (qwen3-0.6b, ...)' }),
    data: requiredStr({ help: 'training transcripts: JSONL of {"messages":[{role, content}, ...]} (roles system, user, assistant, tool)' }),
    out: requiredStr({ help: 'run folder (sft.json, loss.jsonl, checkpoints/, final/)' }),
    mode: requiredChoice(['full', 'lora'], { help: 'full: train every weight (small models); lora: train a LoRA adapter on the frozen model (--full and --lora are short for these)' }),
    evalData: optionalStr({ help: 'held-out transcripts for the eval loss (instead of, or besides, --eval-fraction)' }),
    evalFraction: num(0, { min: 0, below: 1, help: 'fraction of --data held out for the eval loss (0: none)' }),
    loraR: int(16, { help: 'r, the LoRA rank' }),
    loraAlpha: num(32, { above: 0, help: 'α, the LoRA scale is α / r' }),
    loraTargets: list(PROJECTIONS, PROJECTIONS, { help: 'projections that get an adapter' }),
    epochs: int(1, { help: 'passes over the training transcripts' }),
    maxSteps: int(0, { min: 0, help: 'stop after this many optimizer steps (0: all epochs)' }),
    batchSize: int(8, { help: 'transcripts per optimizer step' }),
    microBatchSize: int(4, { help: 'transcripts per forward/backward pass (gradients accumulate over the passes of a step)' }),
    microBatchTokens: int(0, {
      min: 0,
      help: 'padded tokens per forward/backward at most (0: no limit): a pass takes up to --micro-batch-size transcripts of similar length while transcripts × longest ≤ this, so short ones share a pass and long ones go alone',
    }),
    lr: num(1e-4, { above: 0, help: 'η, the peak AdamW learning rate' }),
    warmupSteps: int(0, { min: 0, help: 'linear learning-rate warmup (optimizer steps)' }),
    lrSchedule: choice(['constant', 'cosine'], 'cosine', { help: 'after warmup: constant, or cosine decay to lr·min-lr-ratio at the last step' }),
    minLrRatio: num(0.1, { min: 0, max: 1, help: 'the cosine floor as a fraction of lr' }),
    weightDecay: num(0.01, { min: 0, help: 'AdamW decoupled weight decay' }),
    maxGradNorm: num(1.0, { above: 0, help: 'gradient clipping at this global norm' }),
    seed: int(0, { min: 0, help: 'data order, held-out split and LoRA init', check: (v) => (v <= 0xffffffff ? undefined : `must be below 2^32, got ${v}`) }),
    maxTokens: int(4096, { help: 'longest rendered transcript allowed (tokens); a longer one is an error naming its line, never cut' }),
    saveEvery: int(100, { help: 'write a checkpoint every N optimizer steps (and at the end)' }),
    evalEvery: int(0, { min: 0, help: 'eval loss every N optimizer steps (and at step 0 and the end); 0: at step 0 and the end only' }),
    keepCheckpoints: int(2, { help: 'complete checkpoints kept (older ones are deleted)' }),
    saveDtype: choice(['f32', 'f16', 'bf16'], 'f32', { help: 'dtype of the final full model (checkpoints stay f32, for exact resume)' }),
    enableThinking: bool(false, { help: "Qwen3 thinking in the chat template when rendering prompts (the template's enable_thinking)" }),
    lossOn: choice(LOSS_ON, 'assistant', { help: "loss targets: the assistant's tokens (SFT), or every token of the transcript (language modelling)" }),
    logitsChunkSize: int(128, { help: 'rows of logits formed at once in the fused log-prob kernel' }),
    recomputeLayers: bool(true, {
      help: 'recompute layer activations in the backward: the same gradient in far less memory per pass, about 1/3 more compute (--no-recompute-layers: faster, more memory)',
    }),
    backend: choice(BACKEND_CHOICES, 'auto', { help: 'tensor backend (auto picks the fastest available)' }),
  },
  // Only how long the run is may change on --resume (docs/sft.md, "Resume"): more epochs or steps extend it.
  ['epochs', 'maxSteps'],
  "a resumed run continues with the settings in its sft.json",
);

export type SftConfig = ConfigOf<typeof SFT_SETTINGS>;
export type SftMode = SftConfig['mode'];

/** The defaults of every setting that has one (all but model, data, out and mode; evalData is unset). */
export const SFT_DEFAULTS: Omit<SftConfig, 'model' | 'data' | 'out' | 'mode'> = defaultsOf(SFT_SETTINGS);

/**
 * Flags and settings-file keys renamed to train's names. The old names are refused with a message naming the
 * new one (docs/sft.md); an sft.json of an older run still reads (readSavedSftConfig).
 */
export const SFT_RENAMED: Readonly<Record<string, keyof SftConfig>> = { schedule: 'lrSchedule', thinking: 'enableThinking' };

/** Why they were renamed, as the refusal says it. */
export const SFT_RENAMED_WHY = 'the name train uses';

/** Rules that tie settings together, each naming the flags. */
export function sftProblems(c: SftConfig): string[] {
  return c.microBatchSize <= c.batchSize ? [] : [`--micro-batch-size (${c.microBatchSize}) must not exceed --batch-size (${c.batchSize})`];
}

/**
 * Defaults ← each layer (a settings file, the flags given) in order, then every setting's check and sftProblems.
 * A file that uses an old name is refused naming the new one. Throws one error listing every problem.
 */
export function resolveSftConfig(layers: readonly SettingsLayer[]): SftConfig {
  const problems = renamedKeyProblems(SFT_RENAMED, layers, SFT_RENAMED_WHY);
  if (problems.length > 0) throw new Error(`invalid settings:\n  - ${problems.join('\n  - ')}`);
  return resolveSettings(SFT_SETTINGS, layers, sftProblems);
}

/** Checks a complete configuration (a program's own, or one read back); errors name the flags. */
export function validateSftConfig(c: SftConfig): SftConfig {
  return resolveSftConfig([{ flags: c as unknown as Record<string, unknown> }]);
}

/**
 * An sft.json read back. Keys of runs written before the settings table still read: `schedule` is
 * lrSchedule; a run without `lossOn` trained on the assistant's tokens, one without `recomputeLayers` did not
 * recompute (the gradient is the same either way), one without `microBatchTokens` had no token limit.
 */
export function readSavedSftConfig(raw: unknown, file: string): SftConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`${file}: the saved settings must be an object`);
  const saved: Record<string, unknown> = { recomputeLayers: false, ...(raw as Record<string, unknown>) };
  for (const [from, to] of Object.entries(SFT_RENAMED)) {
    if (from in saved) {
      if (!(to in saved)) saved[to] = saved[from];
      delete saved[from];
    }
  }
  return resolveSettings(SFT_SETTINGS, [{ file, raw: saved }], sftProblems);
}
