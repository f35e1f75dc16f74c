// Child process for recipe-ctx2skill.test.ts (not a test itself): runs Ctx2Skill with the scripted double,
// each reply slightly delayed, and reports every progress unit on stdout until the parent SIGKILLs it.
import { ScriptedTextGenerator } from '../src/llm/scripted.js';
import { CTX2SKILL_DEFAULTS } from '../src/recipes/ctx2skill/config.js';
import { loadContext } from '../src/recipes/ctx2skill/context.js';
import { Ctx2SkillRun } from '../src/recipes/ctx2skill/run.js';
import { toyReply } from './recipe-ctx2skill-double.js';

const [outDir, contextFile] = process.argv.slice(2);
if (!outDir || !contextFile) throw new Error('usage: recipe-ctx2skill-child.ts OUT_DIR CONTEXT_FILE');
const llm = new ScriptedTextGenerator([async (m) => (await new Promise((r) => setTimeout(r, 40)), toyReply(m))], { cycle: true, name: 'toy double' });
const roles = { challenger: llm, reasoner: llm, judge: llm, proposer: llm, generator: llm };
const config = { ...CTX2SKILL_DEFAULTS, iterations: 4, tasks: 3 };
const run = Ctx2SkillRun.start(outDir, config, loadContext(contextFile, config.contextMaxChars), roles, {
  progress: (p) => process.stdout.write(`progress ${p.done} ${p.total}\n`),
});
await run.run();
process.stdout.write('finished\n');
