// `--recipe skill-sp` on the train command (or with no command) hands the command line to the Skill
// Self-Play command, which has its own settings table (docs/recipes.md). The train command's own recipes
// (sesa, ssp) share the training settings and stay with it. A flag the Skill Self-Play command does not
// take is refused here, saying whether it is a setting of the SESA/SSP trainer or of nothing at all.
import { flagName, keyOf, SETTING_KEYS } from '../settings/train.js';
import { typedFlagNames } from './common.js';
import { SKILL_SP_SETTINGS } from '../recipes/skill-sp/config.js';

/** The recipe that runs as its own command rather than through the training settings. */
export const SKILL_SP_RECIPE = 'skill-sp';

/** The command-line options of `sesa-train skill-sp` besides its settings. */
const SKILL_SP_COMMAND_OPTIONS = ['config', 'resume', 'json', 'help', 'version'];

/** Where `--recipe VALUE` sits in argv: the index of its first word and how many words it spans. */
function recipeFlag(argv: readonly string[]): { at: number; span: number; value: string | undefined }[] {
  const found: { at: number; span: number; value: string | undefined }[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--') break;
    if (a === '--recipe') found.push({ at: i, span: 2, value: argv[i + 1] });
    else if (a.startsWith('--recipe=')) found.push({ at: i, span: 1, value: a.slice('--recipe='.length) });
  }
  return found;
}

/**
 * The command line to parse: unchanged, unless it is the train command (named or implied) with
 * `--recipe skill-sp`, which becomes `skill-sp` with the same flags minus `--recipe`. Throws, naming each
 * flag, when the Skill Self-Play command would not take one of them.
 */
export function dispatchRecipe(argv: readonly string[]): string[] {
  const flags = recipeFlag(argv);
  const wanted = flags.find((f) => f.value === SKILL_SP_RECIPE);
  if (!wanted || flags.length > 1) return [...argv];
  const command = argv[0];
  const isTrain = command === undefined || command === 'train' || command.startsWith('-');
  if (!isTrain && command !== SKILL_SP_RECIPE) return [...argv];
  const rest = [...argv.slice(0, wanted.at), ...argv.slice(wanted.at + wanted.span)];
  if (rest[0] === 'train' || rest[0] === SKILL_SP_RECIPE) rest.shift();

  const known = new Set([...Object.keys(SKILL_SP_SETTINGS), ...SKILL_SP_COMMAND_OPTIONS]);
  const training = new Set<string>(SETTING_KEYS);
  const refused: string[] = [];
  for (const name of typedFlagNames(rest)) {
    const key = keyOf(name);
    if (known.has(key)) continue;
    refused.push(training.has(key) ? `--${flagName(key)} is a setting of the SESA/SSP trainer (--recipe sesa|ssp), not of Skill Self-Play` : `--${name} is not a setting of any recipe`);
  }
  if (refused.length > 0) {
    throw new Error(`--recipe skill-sp runs Skill Self-Play with its own settings (sesa-train --recipe skill-sp --help):\n  - ${refused.join('\n  - ')}`);
  }
  return [SKILL_SP_RECIPE, ...rest];
}
