// `sesa-train --recipe skill-sp` (or `sesa-train skill-sp`): the Skill Self-Play recipe (docs/recipes.md);
// ./recipe-dispatch.ts hands `--recipe skill-sp` to this command. A proposer and a solver LoRA adapter on
// one frozen model, trained by GRPO on ZebraLogic puzzles and tool-call tasks that the proposer writes,
// conditioned on routed skill packages or on nothing (the open stream). Ctrl-C and SIGTERM stop after the
// iteration under way and its checkpoint; the same signal again quits at once (./stop-signals.ts).
import { SingleBar } from 'cli-progress';
import type { Argv, CommandModule } from 'yargs';
import { SKILL_SP_SETTINGS, type SkillSpConfig, skillSpProblems } from '../recipes/skill-sp/config.js';
import type { IterationMetrics } from '../recipes/skill-sp/iteration.js';
import { readRunConfig, runSkillSp } from '../recipes/skill-sp/run.js';
import { RunFolder } from '../selfplay/run-folder.js';
import { flagsGiven, readSettingsFile, resolveSettings, yargsOptionsOf } from '../settings/table.js';
import { refusedOnResume } from './recipe-resume.js';
import { listenForStop } from './stop-signals.js';

interface SkillSpArgs {
  [key: string]: unknown;
  config?: string;
  resume?: string;
  json: boolean;
}

export function iterationLine(m: IterationMetrics): string {
  const v = m.meanVSolve === null ? '–' : m.meanVSolve.toFixed(2);
  return `valid ${m.verified}/${m.proposals} | mean v_solve ${v} | reward ${m.meanReward.toFixed(2)} | new skills ${m.newSkills}, pruned ${m.pruned.length}, library ${m.librarySize} (v${m.libraryVersion}) | ${m.seconds.toFixed(1)}s`;
}

/**
 * What a forced quit leaves: the newest complete checkpoint and the command that continues from it (the
 * iteration after it runs again), or that there is none yet.
 */
export function skillSpQuitNote(out: string): string {
  const last = new RunFolder(out).latestCheckpoint();
  return last === undefined
    ? `${out} has no complete checkpoint yet: a resume starts it over (sesa-train skill-sp --resume ${out})`
    : `the last complete checkpoint is ${last.dir} (iteration ${last.step}): continue with sesa-train skill-sp --resume ${out}`;
}

export const command: CommandModule<object, SkillSpArgs> = {
  command: 'skill-sp',
  describe: 'Skill Self-Play: proposer and solver adapters trained by GRPO on skill-routed ZebraLogic and tool-call tasks',
  builder: (y: Argv) => {
    let b = y
      .usage('$0 --recipe skill-sp [options]   (or: $0 skill-sp [options])\n\nSkill Self-Play. Every setting below can also be given in a --config file (JSON or YAML, same names).')
      .option('config', { type: 'string', describe: 'settings file (JSON or YAML) with the settings below as keys (kebab-case or camelCase); flags override it' })
      .option('resume', { type: 'string', describe: 'continue the run in this folder from its last checkpoint (its settings; --iterations may extend it)' })
      .option('json', { type: 'boolean', default: false, describe: 'print one JSON summary at the end' });
    for (const [flag, o] of Object.entries(yargsOptionsOf(SKILL_SP_SETTINGS))) b = b.option(flag, o);
    return b as unknown as Argv<SkillSpArgs>;
  },
  handler: async (args) => {
    const given = flagsGiven(SKILL_SP_SETTINGS, args);
    let config: SkillSpConfig;
    if (args.resume) {
      refusedOnResume(SKILL_SP_SETTINGS, given, args.config !== undefined ? ['--config'] : []);
      config = resolveSettings(SKILL_SP_SETTINGS, [{ file: `${args.resume}/config.json`, raw: { ...readRunConfig(args.resume), out: args.resume } }, { flags: given }], skillSpProblems);
    } else {
      config = resolveSettings(SKILL_SP_SETTINGS, [...(args.config ? [{ file: args.config, raw: readSettingsFile(args.config) }] : []), { flags: given }], skillSpProblems);
    }
    const human = !args.json;
    let bar: SingleBar | undefined;
    if (human && process.stderr.isTTY) {
      bar = new SingleBar({ format: 'skill-sp [{bar}] iteration {value}/{total} | {last}', hideCursor: true });
      bar.start(config.iterations, 0, { last: 'starting…' });
    }
    // Ctrl-C and SIGTERM (Slurm, Kubernetes) finish the iteration, checkpoint and stop; the second one quits at once.
    const stopSignal = listenForStop('stopping after this iteration (a checkpoint is written)', () => skillSpQuitNote(config.out));
    try {
      const summary = await runSkillSp(
        config,
        {
        log: (line) => (human && !bar ? process.stderr.write(`${line}\n`) : undefined),
        onIteration: (m) => {
          if (bar) bar.update(m.iteration, { last: iterationLine(m) });
          else if (human) process.stderr.write(`iteration ${m.iteration}: ${iterationLine(m)}\n`);
        },
        shouldStop: () => stopSignal.requested(),
        },
        args.resume !== undefined,
      );
      // Without a terminal every iteration's line was printed as it ended: the summary does not repeat them.
      const shown = bar === undefined;
      bar?.stop();
      if (args.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
      else {
        process.stdout.write(
          [
            `run folder: ${summary.out}${summary.resumedFrom !== undefined ? ` (resumed after iteration ${summary.resumedFrom})` : ''}`,
            ...(shown ? [] : summary.metrics.map((m) => `iteration ${m.iteration}: ${iterationLine(m)}`)),
            `library: ${summary.library.packages} skills (${summary.library.induced} induced), version ${summary.library.version}`,
            summary.stoppedEarly
              ? `stopped early on request: the adapters are in ${summary.lastCheckpoint}; continue with sesa-train skill-sp --resume ${summary.out}`
              : `adapters: ${summary.adapters.proposer}, ${summary.adapters.solver}`,
          ].join('\n') + '\n',
        );
      }
    } finally {
      bar?.stop();
      stopSignal.dispose();
    }
  },
};
