// Child process for skills-kill.test.ts (not a test itself): commits to a bank in a loop and reports each
// commit on stdout, until the parent SIGKILLs it at an arbitrary point.
import { SkillBank } from '../src/skills/bank.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';

const path = process.argv[2];
if (!path) throw new Error('usage: skills-kill-child.ts BANK');
const bank = await SkillBank.open(path, { embedder: new LexicalEmbedder() });
for (let i = 1; i <= 5000; i++) {
  const id = `kill-${i}`;
  await bank.importCards(
    [
      {
        id,
        category: 'test',
        source: 'mined',
        description: `Card number ${i} written by the child process before it is killed.`,
        triggers: [`trigger ${i}`],
        avoid: [],
        queries: [],
        stats: { retrieved: 0, helpful: 0, hurt: 0 },
        createdStep: i,
        bankVersion: 0,
      },
    ],
    { step: i },
  );
  bank.recordOutcome([id], 'correct');
  bank.enqueueFailure({ question: `question ${i}`, target: 't', evidence: '', prediction: 'p', retrievedSkillIds: [id] }, i);
  const r = bank.commit(i);
  process.stdout.write(`committed ${id} ${r.version}\n`);
}
