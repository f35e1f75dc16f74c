// Shared fixtures for the skill-bank tests (not a test file itself).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChatMessage } from '../src/llm/types.js';
import type { CardContent } from '../src/skills/card.js';
import type { FailureInput } from '../src/skills/queue.js';

export function tempDir(tag = 'sk'): string {
  return mkdtempSync(join(tmpdir(), `${tag}-`));
}

export function failure(question: string, extra: Partial<FailureInput> = {}): FailureInput {
  return { question, target: 'target answer', evidence: 'Doc 1 (Title: X) some passage text.', prediction: 'wrong answer', retrievedSkillIds: [], ...extra };
}

/** The question of a distillation prompt (the line "Question: ..."). */
export function promptQuestion(messages: ChatMessage[]): string {
  const user = messages.find((m) => m.role === 'user')?.content ?? '';
  return /^Question: (.*)$/m.exec(user)?.[1] ?? '';
}

export const CARD_A: CardContent = {
  category: 'dates-numbers',
  description:
    'When a question asks for the age of a person at an event, find both the birth date and the event date and subtract, instead of quoting an age reported for a different year.',
  triggers: ['how old', 'age at', 'at the age of'],
  avoid: ['quoting an age from another year'],
  queries: ['[person] date of birth', '[event] date'],
};

/** A light rewording of CARD_A: a duplicate under any sensible embedder. */
export const CARD_A_REWORDED: CardContent = {
  ...CARD_A,
  description:
    'When a question asks for the age of a person at an event, find both the birth date and the event date and subtract, instead of quoting an age stated for a different year.',
};

export const CARD_B: CardContent = {
  category: 'geography',
  description:
    'Rivers, mountains and lakes often cross borders; when asked where a natural feature is, list every country it touches and check which one the question means by its source or mouth.',
  triggers: ['river', 'mountain', 'lake', 'flows through'],
  avoid: ['naming only the country of the river mouth'],
  queries: ['[river] source country', '[river] flows through'],
};

export const CARD_G: CardContent = {
  category: 'relations',
  description:
    "For a sports team's home ground or a company's headquarters, check the period: teams move stadiums and companies relocate, so the answer depends on the year in the question.",
  triggers: ['home stadium', 'headquarters', 'based in'],
  avoid: ['giving the current stadium for a historical season'],
  queries: ['[team] home ground [year]', '[company] headquarters [year]'],
};

export const CARD_DELTA: CardContent = {
  category: 'awards',
  description:
    'Award questions name a ceremony year that differs from the year of the honoured work; search the award with the ceremony edition and confirm the category, such as best actress or best picture.',
  triggers: ['won the award', 'nominated', 'academy award', 'prize'],
  avoid: ['mixing the ceremony year with the release year'],
  queries: ['[award] [category] [ceremony year] winner'],
};

export const CARD_EPS: CardContent = {
  category: 'languages',
  description:
    'Questions about the official or spoken language of a country or region must distinguish official languages, national languages and the most widely spoken one; check which the question asks.',
  triggers: ['official language', 'spoken in', 'language of'],
  avoid: ['answering the most spoken language when the official one is asked'],
  queries: ['[country] official language', '[region] languages spoken'],
};

export function json(c: CardContent): string {
  return JSON.stringify(c);
}
