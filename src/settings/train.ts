// The trainer's configuration, derived from one declarative table per group (./train/*.ts).
//
// TO ADD A SETTING: add one entry to the group table it belongs to (./train/run.ts, rollout.ts, search.ts,
// grpo.ts, lora.ts, proposer.ts, skills.ts, judge.ts), built with the helpers of ./setting.ts
// (`int`, `num`, `str`, `bool`, `onOff`, `choice`, `list`, `optionalStr`, `optionalNum`): key, default, the
// tiny model's default if it differs (`tiny`), help text with the paper's symbol, check, and whether --resume may change it. The
// TrainConfig type, the `train` flags and --help, config-file parsing (JSON/YAML, kebab-case or camelCase
// keys), validation, the resume rules and the option table of docs/options.md (`npx tsx scripts/options-table.ts
// --write`) all follow from that entry. A rule that ties two settings together goes into CROSS_CHECKS below.
// Then read the value from the TrainConfig where it is used (src/selfplay/trainer.ts builds everything),
// regenerate that table, and give the setting a non-default value in test/train-settings.test.ts
// (EVERY_SETTING: the round-trip test requires one per setting).
import { EVAL_SETTINGS } from './train/eval.js';
import { GRPO_SETTINGS } from './train/grpo.js';
import { JUDGE_SETTINGS } from './train/judge.js';
import { LORA_SETTINGS } from './train/lora.js';
import { PROPOSER_SETTINGS } from './train/proposer.js';
import { ROLLOUT_SETTINGS } from './train/rollout.js';
import { RECIPES, type RecipeName, RUN_SETTINGS, workerCount } from './train/run.js';
import { ENCYCLOPEDIA, RENAMED_DATA, RENAMED_DATA_WHY, SEARCH_SETTINGS } from './train/search.js';
import type { AnySetting, ConfigOf } from './setting.js';
import { SKILLS_SETTINGS } from './train/skills.js';
import { isRedactedUrl, redactUrl } from '../util/redact.js';
import { currentValue, defaultsOf, tinyDefaultsOf, flagName, flagValueOf, keyOf, settingProblems, settingsFromObject, showValue, yargsOptionOf } from './table.js';

export { ENCYCLOPEDIA, flagName, keyOf, RECIPES, type RecipeName, RENAMED_DATA, RENAMED_DATA_WHY, showValue, workerCount };

/** The groups in the order --help and docs/options.md show them. */
export const SETTING_GROUPS = {
  run: RUN_SETTINGS,
  rollout: ROLLOUT_SETTINGS,
  search: SEARCH_SETTINGS,
  proposer: PROPOSER_SETTINGS,
  grpo: GRPO_SETTINGS,
  lora: LORA_SETTINGS,
  skills: SKILLS_SETTINGS,
  judge: JUDGE_SETTINGS,
  eval: EVAL_SETTINGS,
};

export const GROUP_TITLES: Record<keyof typeof SETTING_GROUPS, string> = {
  run: 'Run',
  rollout: 'Rollout',
  search: 'Search',
  proposer: 'Proposer (validity and reward)',
  grpo: 'GRPO and optimizer',
  lora: 'LoRA',
  skills: 'Skill bank',
  judge: 'Judge and distiller',
  eval: 'Held-out evaluation',
};

export const SETTINGS = {
  ...RUN_SETTINGS,
  ...ROLLOUT_SETTINGS,
  ...SEARCH_SETTINGS,
  ...PROPOSER_SETTINGS,
  ...GRPO_SETTINGS,
  ...LORA_SETTINGS,
  ...SKILLS_SETTINGS,
  ...JUDGE_SETTINGS,
  ...EVAL_SETTINGS,
};

export type SettingKey = keyof typeof SETTINGS;
export type TrainConfig = ConfigOf<typeof SETTINGS>;
export type EmbedderName = TrainConfig['embedder'];
export type BackendOption = TrainConfig['backend'];

const TABLE = SETTINGS as unknown as Record<string, AnySetting>;
export const SETTING_KEYS = Object.keys(SETTINGS) as SettingKey[];

/** Defaults for a real model (`--model`). Optional settings that are unset by default are absent. */
export const TRAIN_DEFAULTS: TrainConfig = defaultsOf(SETTINGS);

/**
 * `--model tiny`: the tiny random model, the synthetic corpus and the lexical embedder, sized to finish a few
 * steps on a CPU in a minute (mechanics only: a random model writes no valid question).
 */
export const TINY_DEFAULTS: Partial<TrainConfig> = tinyDefaultsOf(SETTINGS);


/**
 * What a recipe fixes (docs/method.md, "Recipes"). They are layered over the defaults; a config file or a
 * flag that contradicts them is refused (see CROSS_CHECKS).
 */
export const RECIPE_PRESETS: Record<RecipeName, Partial<TrainConfig>> = {
  sesa: {},
  ssp: { skills: false, frontier: false, proposalsPerSeed: 1, invalidReward: 0, rejectRepeatedQueries: true },
};

const RECIPE_REASONS: Partial<Record<SettingKey, string>> = {
  skills: 'SSP has no skill bank',
  frontier: 'the SSP proposer reward is 1 − p̂',
  proposalsPerSeed: 'SSP proposes once per seed',
  invalidReward: 'SSP has no format penalty',
  rejectRepeatedQueries: 'SSP rejects a proposal that repeats a query',
};

type CrossCheck = (c: TrainConfig) => string | undefined;

/** The smallest reply budget that leaves a thinking judge room for a short <think> block and its verdict. */
const THINKING_JUDGE_MIN_TOKENS = 256;

/** Rules that tie settings together; each names the flags and the reason. */
const CROSS_CHECKS: CrossCheck[] = [
  (c) => (c.maxResponseTokens >= c.maxNewTokens ? undefined : `--max-response-tokens (${c.maxResponseTokens}) must be ≥ --max-new-tokens (${c.maxNewTokens})`),
  (c) =>
    c.minInformativeGroups === 0 || c.extractionFailure === 'reuse'
      ? undefined
      : '--min-informative-groups draws its extra questions from the reuse pool: it needs --extraction-failure reuse',
  (c) =>
    c.minInformativeGroups === 0 || c.groupSize >= 2
      ? undefined
      : '--min-informative-groups counts groups with 0 < p̂ < 1: it needs --group-size ≥ 2',
  (c) => (c.groupSize >= 2 || !c.frontier ? undefined : '--group-size must be ≥ 2 for the frontier reward (p̂ needs a group)'),
  (c) =>
    c.temperature > 0
      ? undefined
      : '--temperature 0 samples greedily: the G rollouts of a group would be identical and GRPO would get no signal (use a temperature > 0)',
  (c) =>
    c.minHops === undefined || c.maxHops === undefined || c.minHops <= c.maxHops
      ? undefined
      : `--min-hops (${c.minHops}) must be ≤ --max-hops (${c.maxHops})`,
  (c) => (c.questionMinChars <= c.questionMaxChars ? undefined : `--question-min-chars (${c.questionMinChars}) must be ≤ --question-max-chars (${c.questionMaxChars})`),
  (c) => (c.lrSchedule === 'cosine' || c.minLrRatio === 0 ? undefined : `--min-lr-ratio ${c.minLrRatio} applies only to --lr-schedule cosine`),
  (c) => (c.lrSchedule !== 'cosine' || c.steps > c.warmupSteps ? undefined : `--lr-schedule cosine needs --steps (${c.steps}) > --warmup-steps (${c.warmupSteps})`),
  (c) =>
    !c.enableThinking || c.judgeUrl !== undefined || Math.min(c.judgeMaxTokens, c.ragMaxTokens) >= THINKING_JUDGE_MIN_TOKENS
      ? undefined
      : `--enable-thinking makes the in-process judge think before it answers: --judge-max-tokens (${c.judgeMaxTokens}) and --rag-max-tokens (${c.ragMaxTokens}) must be ≥ ${THINKING_JUDGE_MIN_TOKENS} to leave room for the verdict`,
  (c) => (c.judgeModel === undefined || c.judgeUrl !== undefined ? undefined : '--judge-model names a model at --judge-url, which is not set'),
  (c) => (c.distillerModel === undefined || c.distillerUrl !== undefined ? undefined : '--distiller-model names a model at --distiller-url, which is not set'),
  (c) => (c.retrieverUrl === undefined || c.corpus === ENCYCLOPEDIA ? undefined : `--retriever-url replaces the local index, so --corpus ${c.corpus} would be unused: give one of them`),
  (c) => (c.evalEvery === 0 || (c.evalData !== undefined && c.evalData !== '') ? undefined : '--eval-every needs --eval-data (a FlashRAG JSONL file, a benchmark name or encyclopedia)'),
  (c) =>
    c.cardUtility !== 'counterfactual' || (c.skills && c.cardsInGroup === 'half')
      ? undefined
      : '--card-utility counterfactual compares the rollouts of a group with and without its cards: it needs --skills on and --cards-in-group half',
  (c) =>
    (c.evalData !== 'world' && c.evalData !== 'eval-worlds' && c.evalData !== 'training-worlds') || (c.corpus === 'world' && c.retrieverUrl === undefined)
      ? undefined
      : `--eval-data ${c.evalData} needs --corpus world (a world's held-out questions are searched in that world's corpus)`,
  (c) => (c.retrieverUrl === undefined || c.seeds !== undefined ? undefined : '--retriever-url needs --seeds FILE (answer seeds: JSONL of {"answer","hops"}); a local --corpus supplies its own'),
  (c) =>
    c.gpus === 1 || c.workers === 1 || c.gpus === c.workers
      ? undefined
      : `--gpus ${c.gpus} runs ${c.gpus} worker processes (one device each) but --workers is ${c.workers}: give one of them, or the same number to both`,
  (c) =>
    workerCount(c) === 1 || c.rolloutEngine !== 'llama.cpp'
      ? undefined
      : `--rollout-engine llama.cpp generates in the trainer's process, but ${c.gpus > 1 ? `--gpus ${c.gpus}` : `--workers ${c.workers}`} shards the step's rollouts over worker processes (native engine): use one or the other`,
  ...(Object.keys(RECIPE_PRESETS.ssp) as SettingKey[]).map(
    (k): CrossCheck =>
      (c) => {
        if (c.recipe !== 'ssp') return undefined;
        const want = RECIPE_PRESETS.ssp[k];
        return c[k] === want ? undefined : `--recipe ssp runs with --${flagName(k)} ${showValue(want)} (${RECIPE_REASONS[k]}); got ${showValue(c[k])}`;
      },
  ),
];

/** All problems with a config, each naming its flag; empty when valid. */
export function configProblems(c: TrainConfig): string[] {
  const problems = settingProblems(TABLE, c as unknown as Record<string, unknown>);
  if (problems.length > 0) return problems;
  for (const check of CROSS_CHECKS) {
    const p = check(c);
    if (p) problems.push(p);
  }
  return problems;
}

export function validateConfig(c: TrainConfig): TrainConfig {
  const problems = configProblems(c);
  if (problems.length > 0) throw new Error(`invalid training configuration:\n  - ${problems.join('\n  - ')}`);
  return c;
}

/**
 * Checks a parsed config file's keys and value types against the settings table (kebab-case or camelCase
 * keys); `file` names it in errors. Values are checked for range later, by validateConfig.
 */
export function parseConfigObject(raw: unknown, file: string): Partial<TrainConfig> {
  const { values, problems } = settingsFromObject(TABLE, raw, file);
  if (problems.length > 0) throw new Error(problems.join('\n'));
  return values as Partial<TrainConfig>;
}

/** Converts one command-line value (already typed by yargs) to the setting's type. */
export function flagValue(key: SettingKey, v: unknown): unknown {
  return flagValueOf(key, TABLE[key] as AnySetting, v);
}

/**
 * The defaults of a setting as `train --help` shows them: one value when the three starts agree, else each one
 * labelled, the plain `npx sesa-train` (the demo world) first, since that is what runs with no arguments.
 */
export function defaultsText(key: SettingKey, demoDefaults: Partial<TrainConfig>): string {
  const s = TABLE[key] as AnySetting;
  const real = showValue(s.default);
  if (key === 'model') return `default ${real}`;
  const world = (demoDefaults as Record<string, unknown>)[key];
  const demo = world !== undefined ? showValue(world) : real;
  const tiny = s.tiny !== undefined ? showValue(s.tiny) : real;
  if (demo === real && tiny === real) return `default ${real}`;
  return `no arguments (--model demo): ${demo}; --model M: ${real}; --model tiny: ${tiny}`;
}

/**
 * The yargs option of a setting: its type, choices and a help line that shows the defaults that apply;
 * `demoDefaults` are those of a run with no arguments (the demo world's, src/world/defaults.ts).
 */
export function yargsOption(key: SettingKey, demoDefaults: Partial<TrainConfig>): ReturnType<typeof yargsOptionOf> {
  return yargsOptionOf(TABLE[key] as AnySetting, defaultsText(key, demoDefaults));
}

/** The option table of docs/options.md: one section per group, one row per setting. */
export function settingsMarkdown(demoDefaults: Partial<TrainConfig>): string {
  const cell = (s: string): string => s.replace(/\|/g, '\\|');
  const out: string[] = [];
  for (const [group, table] of Object.entries(SETTING_GROUPS) as Array<[keyof typeof SETTING_GROUPS, Record<string, AnySetting>]>) {
    out.push(`**${GROUP_TITLES[group]}**`, '', '| flag | default (a real model, `--model M`) | no arguments (`--model demo`, the demo world) | `--model tiny` | on --resume | what it sets |', '|---|---|---|---|---|---|');
    for (const [k, s] of Object.entries(table)) {
      const flag = s.kind === 'boolean' ? `--[no-]${flagName(k)}` : s.kind === 'on-off' ? `--${flagName(k)} on\\|off` : s.kind === 'choice' ? `--${flagName(k)} ${(s.choices ?? []).join('\\|')}` : `--${flagName(k)}`;
      const resume = s.resume.kind === 'change' ? 'may change' : 'fixed';
      const world = (demoDefaults as Record<string, unknown>)[k];
      out.push(`| \`${flag}\` | ${cell(showValue(s.default))} | ${world !== undefined ? cell(showValue(world)) : ''} | ${s.tiny !== undefined ? cell(showValue(s.tiny)) : ''} | ${resume} | ${cell(s.help)} |`);
    }
    out.push('');
  }
  return out.join('\n');
}

export interface ResumeChange {
  key: SettingKey;
  from: unknown;
  to: unknown;
}

/**
 * What `--resume` does with settings given on its command line: each new value is a change to write to the
 * run's config.json and log, or a refusal that names the flag and why. `checkpointStep` is the step the run
 * resumes from: --steps may not go below it.
 */
export function resumeChanges(saved: TrainConfig, requested: Partial<TrainConfig>, checkpointStep: number): { changes: ResumeChange[]; refused: string[] } {
  const changes: ResumeChange[] = [];
  const refused: string[] = [];
  const savedValues = saved as unknown as Record<string, unknown>;
  for (const [k, to] of Object.entries(requested) as Array<[SettingKey, unknown]>) {
    const from = savedValues[k];
    if (JSON.stringify(from) === JSON.stringify(to)) continue;
    const s = TABLE[k] as AnySetting;
    if (s.resume.kind === 'refuse') {
      refused.push(`--${flagName(k)} cannot change on --resume (the run has ${showValue(from)}): ${s.resume.reason}`);
      continue;
    }
    if (k === 'steps' && typeof to === 'number' && to < checkpointStep) {
      refused.push(`--steps ${to} is below the step the run resumes from (${checkpointStep}): a run cannot be shortened to before its last checkpoint`);
      continue;
    }
    changes.push({ key: k, from, to });
  }
  return { changes, refused };
}

/**
 * A config.json read back: a missing setting takes its default (a run written before it existed), and a
 * renamed value its new name (a run written with `corpus: demo` or `evalData: demo` plays in the encyclopedia).
 */
export function parseSavedConfig(raw: unknown, file: string): TrainConfig {
  const saved = { ...TRAIN_DEFAULTS, ...parseConfigObject(raw, file) };
  return { ...saved, corpus: currentValue(saved.corpus, RENAMED_DATA), ...(saved.evalData !== undefined ? { evalData: currentValue(saved.evalData, RENAMED_DATA) } : {}) };
}

/** The keys of the endpoint-URL settings (see `url` in ./setting.ts). */
export const URL_SETTING_KEYS = SETTING_KEYS.filter((k) => (TABLE[k] as AnySetting).url === true);

/** A setting's value as it may be shown or written: an endpoint URL without the secrets it may hold. */
export function shownValue(key: string, v: unknown): unknown {
  return typeof v === 'string' && (TABLE[key] as AnySetting | undefined)?.url === true ? redactUrl(v) : v;
}

/** The configuration as config.json records it: every endpoint URL with its secrets removed. */
export function configForDisk(c: TrainConfig): TrainConfig {
  const out: Record<string, unknown> = { ...c };
  for (const k of URL_SETTING_KEYS) if (out[k] !== undefined) out[k] = shownValue(k, out[k]);
  return out as TrainConfig;
}

/** Endpoint URLs of a resumed run's config that came back redacted from config.json (each must be given again). */
export function redactedUrlSettings(c: TrainConfig): SettingKey[] {
  return URL_SETTING_KEYS.filter((k) => typeof c[k] === 'string' && isRedactedUrl(c[k] as string));
}

/** The title of the group a setting belongs to (for --help). */
export function groupTitleOf(key: SettingKey): string {
  for (const [group, table] of Object.entries(SETTING_GROUPS) as Array<[keyof typeof SETTING_GROUPS, object]>) if (key in table) return GROUP_TITLES[group];
  throw new Error(`unknown setting ${key}`);
}
