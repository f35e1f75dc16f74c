// The `sesa-train` command line: parses, validates, dispatches. Each command lives in its own module.
import yargs, { type CommandModule } from 'yargs';
import { notNumberFlags, repeatedScalarFlags, threadsProblem, unknownArgumentsText } from './common.js';
import { dispatchRecipe } from './recipe-dispatch.js';
import { redactSecrets } from '../util/redact.js';
import { cut, MESSAGE_MAX_CHARS } from '../util/text-file.js';

// Each entry is a module exporting `command: CommandModule<object, ItsArgs>`. Keep this list in help order.
// Each module's args type differs and yargs' types are invariant in it, so the list holds them as `unknown`
// and registration casts: each module is type-checked against its own args where it is defined.
type AnyCommandModule = { command: unknown };
const COMMAND_MODULES: Array<() => Promise<AnyCommandModule>> = [
  () => import('./train.js'),
  () => import('./sft.js'),
  () => import('./ctx2skill.js'),
  () => import('./skill-sp.js'),
  () => import('./eval.js'),
  () => import('./report.js'),
  () => import('./generate.js'),
  () => import('./score.js'),
  () => import('./make-tiny.js'),
  () => import('./convert.js'),
  () => import('./export.js'),
  () => import('./skills.js'),
  () => import('./download.js'),
  () => import('./lora-init.js'),
  () => import('./bench.js'),
  () => import('./doctor.js'),
];

export async function main(given: string[]): Promise<void> {
  let argv: string[];
  try {
    argv = dispatchRecipe(given);
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n\nRun with --help for usage.\n`);
    process.exit(2);
  }
  let parser = yargs(argv)
    .scriptName('sesa-train')
    .usage('$0 <command> [options]\n\nSelf-evolving search agents: SESA self-play with LoRA and GRPO on TensorFlow.js.')
    .strict()
    .recommendCommands()
    .wrap(Math.min(120, process.stdout.columns ?? 100))
    .fail((msg, err) => {
      if (err) throw err;
      // getOptions is public in yargs but missing from its type declarations; at this point it holds the
      // options of the command being parsed.
      const declared = Object.keys((parser as unknown as { getOptions(): { key: Record<string, unknown> } }).getOptions().key);
      process.stderr.write(`error: ${unknownArgumentsText(msg, declared) ?? msg}\n\nRun with --help for usage.\n`);
      process.exit(2);
    });
  for (const load of COMMAND_MODULES) parser = parser.command((await load()).command as unknown as CommandModule);
  // A repeated option that takes one value is an error naming it (yargs would make a list or a sum of it).
  const withCommands = parser;
  parser = parser.middleware(() => {
    // getOptions is public in yargs but missing from its type declarations.
    const declared = (withCommands as unknown as { getOptions(): { array: string[] } }).getOptions();
    const repeated = repeatedScalarFlags(argv, declared.array);
    if (repeated.length > 0) throw new Error(`${repeated.join('; ')}: it takes one value, give it once`);
  });
  // Before the commands' own checks: a number flag given a word says the word (yargs made it NaN), and a thread
  // count over the wasm backend's pool says the maximum.
  parser = parser.middleware((args) => {
    const declared = (withCommands as unknown as { getOptions(): { number: string[] } }).getOptions();
    const problems = [...notNumberFlags(argv, declared.number, args), threadsProblem(args.threads, args.backend)].filter((p): p is string => p !== undefined);
    if (problems.length > 0) throw new Error(problems.join('; '));
  }, true);
  try {
    await parser.parseAsync();
  } catch (err) {
    // The last line of defence: a key in a URL or a server reply never reaches the console.
    process.stderr.write(`error: ${cut(redactSecrets((err as Error).message), MESSAGE_MAX_CHARS)}\n`);
    if (process.env.SESA_DEBUG) process.stderr.write(`${redactSecrets((err as Error).stack ?? '')}\n`);
    process.exit(1);
  }
}
