// `sesa-train ctx2skill`: the Ctx2Skill recipe (docs/recipes.md). Self-play of five LLM roles over a context,
// no weight updates; writes the selected Reasoner skill set (skills.md, skills.json), history.json,
// metrics.jsonl and (--tensorboard) TensorBoard files. Ctrl-C and SIGTERM stop after the unit of work under
// way (its history saved); the same signal again quits at once (./stop-signals.ts).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { SingleBar } from 'cli-progress';
import type { Argv, CommandModule } from 'yargs';
import type { TextGenerator } from '../llm/types.js';
import { ModelPolicy } from '../model/policy.js';
import { CausalLM } from '../model/qwen3.js';
import { resolveModelName } from '../checkpoint/model-name.js';
import { PolicyTextGenerator } from '../model/text-generator.js';
import { TINY_DEFAULT_NAME } from '../checkpoint/tiny-default.js';
import { loadTokenizer } from '../model/tokenizer.js';
import { CTX2SKILL_SETTINGS, type Ctx2SkillConfig, ctx2skillProblems } from '../recipes/ctx2skill/config.js';
import { loadContext } from '../recipes/ctx2skill/context.js';
import { buildRoles, type EndpointSetting, inProcessRoles } from '../recipes/ctx2skill/role-endpoints.js';
import { CTX2SKILL_ROLES, Ctx2SkillRun, type Ctx2SkillRole, HISTORY_FILE, readHistory } from '../recipes/ctx2skill/run.js';
import { flagsGiven, readSettingsFile, resolveSettings, yargsOptionsOf } from '../settings/table.js';
import { BACKEND_CHOICES, type BackendChoice, describeBackend, initBackend } from '../tensor/backend.js';
import { refusedOnResume } from './recipe-resume.js';
import { listenForStop } from './stop-signals.js';

interface Ctx2SkillArgs {
  [key: string]: unknown;
  context?: string;
  out: string;
  resume?: string;
  config?: string;
  model?: string;
  download: boolean;
  backend: BackendChoice;
  threads?: number;
  json: boolean;
}

function endpointArgs(prefix: string, a: Record<string, unknown>): EndpointSetting {
  const s = (k: string): string | undefined => (typeof a[`${prefix}${k}`] === 'string' ? (a[`${prefix}${k}`] as string) : undefined);
  const n = (k: string): number | undefined => (typeof a[`${prefix}${k}`] === 'number' ? (a[`${prefix}${k}`] as number) : undefined);
  return { url: s('Url'), model: s('Model'), keyEnv: s('KeyEnv'), timeoutS: n('Timeout'), retries: n('Retries') };
}

function endpointFlags(role: string, who: string): Record<string, { type: 'string' | 'number'; describe: string }> {
  return {
    [`${role}-url`]: { type: 'string', describe: `OpenAI-compatible base URL for ${who}` },
    [`${role}-model`]: { type: 'string', describe: `model name at that URL for ${who}` },
    [`${role}-key-env`]: { type: 'string', describe: `environment variable holding the API key for ${who}` },
    [`${role}-timeout`]: { type: 'number', describe: `seconds per request attempt for ${who} (default 120)` },
    [`${role}-retries`]: { type: 'number', describe: `retries of a failed request (5xx, timeouts) for ${who} (default 3)` },
  };
}

/** The in-process model, one generator per role (each with its own sampling seed) over one loaded model. */
async function inProcessGenerators(args: Ctx2SkillArgs, seed: number, log: (l: string) => void): Promise<Record<Ctx2SkillRole, TextGenerator>> {
  const name = args.model as string;
  const backend = await initBackend(args.backend, args.threads !== undefined ? { threads: args.threads } : {});
  log(`backend: ${describeBackend(backend)}`);
  const dir = (await resolveModelName(name, { download: args.download, log })).dir;
  const model = await CausalLM.load(dir);
  const tokenizer = await loadTokenizer(dir);
  const policy = new ModelPolicy(name, model, tokenizer, undefined);
  const out = {} as Record<Ctx2SkillRole, TextGenerator>;
  CTX2SKILL_ROLES.forEach((r, i) => (out[r] = new PolicyTextGenerator(policy, { maxTokens: 512, seed: seed * 10 + i })));
  return out;
}

/** What a forced quit leaves: the history of every finished unit, and the command that continues from it. */
export function ctx2skillQuitNote(outDir: string): string {
  return existsSync(join(outDir, HISTORY_FILE))
    ? `${join(outDir, HISTORY_FILE)} holds every finished unit of work: continue with sesa-train ctx2skill --resume ${outDir} (the unit under way runs again)`
    : `no unit of work was finished yet (${join(outDir, HISTORY_FILE)} does not exist): start the run again`;
}

export const command: CommandModule<object, Ctx2SkillArgs> = {
  command: 'ctx2skill',
  describe: 'Ctx2Skill: skills for a context by self-play of LLM roles (no weight updates)',
  builder: (y: Argv) => {
    let b = y
      .option('context', { type: 'string', describe: 'the context C: a text file, or a folder of .txt/.md files' })
      .option('out', { type: 'string', default: 'runs/ctx2skill', describe: 'output folder (history.json, skills.md, skills.json, metrics.jsonl, tensorboard/)' })
      .option('resume', { type: 'string', describe: 'continue the run in this folder (its settings and context are the recorded ones)' })
      .option('config', { type: 'string', describe: 'settings file (JSON or YAML) with the settings below as keys (kebab-case or camelCase); flags override it' })
      .option('model', { type: 'string', describe: `in-process model for the roles without a URL (a folder, a name such as qwen3-0.6b, or '${TINY_DEFAULT_NAME}')` })
      .option('download', { type: 'boolean', default: false, describe: 'fetch --model into the Hugging Face cache when missing' })
      .option('backend', { choices: BACKEND_CHOICES, default: 'auto' as BackendChoice, describe: 'tensor backend of the in-process model' })
      .option('threads', { type: 'number', describe: "compute threads of the wasm backend, or of the native backend's matMuls, for the in-process model (default: all cores)" })
      .option('json', { type: 'boolean', default: false, describe: 'print one JSON summary at the end' });
    for (const [flag, o] of Object.entries(yargsOptionsOf(CTX2SKILL_SETTINGS))) b = b.option(flag, o);
    for (const [flag, o] of Object.entries(endpointFlags('llm', 'every role'))) b = b.option(flag, o);
    for (const role of CTX2SKILL_ROLES) for (const [flag, o] of Object.entries(endpointFlags(role, `the ${role} (overrides --llm-*)`))) b = b.option(flag, o);
    return b as unknown as Argv<Ctx2SkillArgs>;
  },
  handler: async (args) => {
    const human = !args.json;
    let bar: SingleBar | undefined;
    const log = (line: string): void => {
      if (!human) return;
      if (bar) bar.update({ msg: line });
      else process.stderr.write(`${line}\n`);
    };
    const given = flagsGiven(CTX2SKILL_SETTINGS, args);
    let config: Ctx2SkillConfig;
    let contextPath: string;
    if (args.resume) {
      refusedOnResume(CTX2SKILL_SETTINGS, given, [...(args.config ? ['--config'] : []), ...(args.context ? ['--context'] : [])]);
      const h = readHistory(args.resume);
      config = resolveSettings(CTX2SKILL_SETTINGS, [{ file: `${args.resume}/history.json config`, raw: h.config }, { flags: given }]);
      contextPath = h.context.source;
    } else {
      if (!args.context) throw new Error('give --context FILE|FOLDER (or --resume RUN_DIR)');
      config = resolveSettings(CTX2SKILL_SETTINGS, [...(args.config ? [{ file: args.config, raw: readSettingsFile(args.config) }] : []), { flags: given }], ctx2skillProblems);
      contextPath = args.context;
    }
    const context = loadContext(contextPath, config.contextMaxChars);
    const shared = endpointArgs('llm', args);
    const own = Object.fromEntries(CTX2SKILL_ROLES.map((r) => [r, endpointArgs(r, args)])) as Record<Ctx2SkillRole, EndpointSetting>;
    const local = inProcessRoles(shared, own);
    if (local.length > 0 && !args.model) {
      throw new Error(`no LLM for ${local.join(', ')}: give --llm-url URL --llm-model NAME (an OpenAI-compatible server), per-role --<role>-url/--<role>-model, or --model for the in-process model`);
    }
    const inProcess = local.length > 0 ? await inProcessGenerators(args, config.seed, log) : undefined;
    const roles = buildRoles(shared, own, inProcess);
    const outDir = args.resume ?? args.out;
    if (human) {
      process.stderr.write(`ctx2skill: ${context.source} (${context.text.length} chars) → ${outDir}; ${config.iterations} iterations × ${config.tasks} tasks\n`);
      for (const r of CTX2SKILL_ROLES) process.stderr.write(`  ${r}: ${roles[r].name}\n`);
      if (process.stderr.isTTY) {
        bar = new SingleBar({ format: 'ctx2skill [{bar}] {value}/{total} | {phase}', hideCursor: true }, undefined);
        bar.start(1, 0, { phase: 'starting', msg: '' });
      }
    }
    // Ctrl-C and SIGTERM (Slurm, Kubernetes) finish the unit of work under way and stop; the second one quits at once.
    const stopSignal = listenForStop('stopping after this unit of work (the history is saved after each)', () => ctx2skillQuitNote(outDir));
    const events = {
      log,
      shouldStop: () => stopSignal.requested(),
      progress: (p: { done: number; total: number; phase: string }) => {
        if (bar) {
          bar.setTotal(p.total);
          bar.update(p.done, { phase: p.phase });
        } else if (human) process.stderr.write(`[${p.done}/${p.total}] ${p.phase}\n`);
      },
    };
    try {
      const run = args.resume ? Ctx2SkillRun.resume(outDir, context, roles, events, given as Partial<Ctx2SkillConfig>) : Ctx2SkillRun.start(outDir, config, context, roles, events);
      const h = await run.run();
      // Without a terminal the run's log printed every iteration's line and the replay's as they ended: the
      // summary does not repeat them.
      const shown = bar === undefined;
      bar?.stop();
      bar = undefined;
      const rp = h.replay;
      const summary = {
        out: outDir,
        ...(run.stopped ? { stopped: true } : {}),
        iterations: h.iterations.map((it) => ({
          iteration: it.iteration,
          tasks: it.tasks?.length ?? 0,
          solved: it.attempts.filter((a) => a.solved).length,
          judgeErrors: it.attempts.filter((a) => a.judgeError !== undefined).length,
          reasonerSkills: it.reasonerUpdate?.skills.length ?? 0,
          challengerSkills: it.challengerUpdate?.skills.length ?? 0,
          ...(it.challengerError ? { challengerError: it.challengerError } : {}),
        })),
        replay: rp ? { hard: rp.hardProbe.length, easy: rp.easyProbe.length, scores: rp.candidates.map((c) => ({ iteration: c.iteration, rhoHard: c.rhoHard, rhoEasy: c.rhoEasy, score: c.score })), selected: rp.selected } : undefined,
      };
      if (args.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
      else {
        const lines = shown ? [] : summary.iterations.map((it) => `iteration ${it.iteration}: solved ${it.solved}/${it.tasks}${it.judgeErrors ? ` (${it.judgeErrors} unparsed judgements)` : ''}; skills: Reasoner ${it.reasonerSkills}, Challenger ${it.challengerSkills}`);
        if (summary.replay?.selected !== undefined && !shown) lines.push(`replay: selected the Reasoner skills of iteration ${summary.replay.selected} (${summary.replay.hard} hard, ${summary.replay.easy} easy probes)`);
        if (run.stopped) lines.push(`stopped early on request: history ${outDir}/history.json; continue with sesa-train ctx2skill --resume ${outDir}`);
        else lines.push(`skills: ${outDir}/skills.md, ${outDir}/skills.json; history: ${outDir}/history.json; metrics: ${outDir}/metrics.jsonl`);
        process.stdout.write(`${lines.join('\n')}\n`);
      }
    } finally {
      bar?.stop();
      stopSignal.dispose();
    }
  },
};
