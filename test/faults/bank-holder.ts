// A child process for the concurrent-writer tests (not a test file itself): opens the skill bank given on the
// command line, says "open <pid>", and on a line "commit" on stdin commits one card and exits.
import { createInterface } from 'node:readline';
import { SkillBank } from '../../src/skills/bank.js';
import { LexicalEmbedder } from '../../src/skills/lexical.js';
import { CARD_A } from '../skills-helpers.js';

const path = process.argv[2] as string;
const bank = await SkillBank.open(path, { embedder: new LexicalEmbedder(), create: false });
process.stdout.write(`open ${process.pid}\n`);
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() !== 'commit') continue;
  await bank.importCards([{ ...CARD_A, id: 'holder-card', source: 'mined', stats: { retrieved: 0, helpful: 0, hurt: 0 }, createdStep: 0, bankVersion: 0 }]);
  process.stdout.write('committed\n');
  await bank.dispose();
  process.exit(0);
}
