// The world's LLM-free text roles, named as scripted in code and in their `name` (which the run log prints):
// - WorldRagReader answers the RAG validity check (docs/method.md, "Validating questions") from the given documents only: it parses
//   the question with the world's grammar and follows its chain through the facts those documents state.
//   The judge itself is exact match with the answer's aliases (the world's answers are unique).
// - TemplateDistiller turns a failure record into a card by the question's shape (its chain of relations) and
//   the failure mode (answered an intermediate entity of the chain, answered an entity off the chain, or an
//   answer that names no entity), as one JSON card in the format the bank parses.
// Both implement TextGenerator (src/llm/types.ts), so a real judge or distiller endpoint replaces them by
// configuration alone. See docs/world.md.
import type { Relation } from '../corpus/questions.js';
import type { ChatMessage, CompleteOptions, TextGenerator } from '../llm/types.js';
import { normalizeAnswer } from '../selfplay/judge.js';
import { RELATION_NOUN } from './experts.js';
import type { World } from './world.js';

function userText(messages: readonly ChatMessage[]): string {
  return messages.filter((m) => m.role === 'user').map((m) => m.content).join('\n');
}

/** The value of a `Label: value` line (first match), or undefined. */
function field(text: string, label: string): string | undefined {
  const m = new RegExp(`^${label}: (.*)$`, 'm').exec(text);
  return m ? (m[1] as string).trim() : undefined;
}

export class WorldRagReader implements TextGenerator {
  readonly name = 'world RAG reader (scripted, no LLM)';

  constructor(private readonly world: World) {}

  async complete(messages: ChatMessage[], _opts?: CompleteOptions): Promise<string> {
    const text = userText(messages);
    const question = text.slice(text.lastIndexOf('Question: ') + 'Question: '.length).trim();
    // Documents are rendered `Doc i(Title: "…") text`; titles are unique in a world, so they name passages.
    const ids = new Set<string>();
    for (const m of text.matchAll(/^Doc \d+\(Title: "((?:[^"]|"")*)"\)/gm)) {
      const title = (m[1] as string).replaceAll('""', '"');
      const p = this.world.passages.find((x) => x.title === title);
      if (p) ids.add(p.id);
    }
    const parsed = this.world.parseQuestion(question);
    const chain = parsed ? this.world.follow(parsed, ids) : undefined;
    const answer = chain ? this.world.entity(chain[chain.length - 1] as string).name : '';
    return `<answer>${answer}</answer>`;
  }
}

type FailureMode = 'stopped-early' | 'wrong-entity' | 'no-entity';

export class TemplateDistiller implements TextGenerator {
  readonly name = 'template distiller (scripted, no LLM)';

  constructor(private readonly world: World) {}

  async complete(messages: ChatMessage[], _opts?: CompleteOptions): Promise<string> {
    const text = userText(messages);
    const question = field(text, 'Question') ?? '';
    const prediction = field(text, "Agent's answer") ?? '';
    const parsed = this.world.parseQuestion(question);
    if (!parsed) return 'no card: the question is not of this world\'s grammar';
    const chain = this.world.follow(parsed) ?? [parsed.start];
    const names = (id: string): string[] => this.world.golden(id).map(normalizeAnswer);
    const p = normalizeAnswer(prediction);
    const bridgeAt = chain.slice(0, -1).findIndex((id) => names(id).includes(p));
    const named = this.world.synth.entities.some((e) => normalizeAnswer(e.name) === p);
    const mode: FailureMode = bridgeAt >= 0 ? 'stopped-early' : named ? 'wrong-entity' : 'no-entity';
    return JSON.stringify(cardFor(parsed.relations, mode, this.world.entity(parsed.start).kind));
  }
}

/** The card for a question shape and failure mode. Names of the question never enter it: only its shape. */
export function cardFor(relations: readonly Relation[], mode: FailureMode, startKind: string): Record<string, unknown> {
  const nouns = relations.map((r) => RELATION_NOUN[r]);
  const shape = [...nouns].reverse().map((n) => `the ${n} of`).join(' ') + ` [${startKind}]`;
  const steps = nouns.map((n, i) => (i === 0 ? `search [${startKind}] and read its ${n}` : `search that entity and read its ${n}`)).join(', then ');
  const triggers = [`questions of the shape: ${shape}`, ...[...new Set(nouns)].map((n) => `the ${n} of`)];
  if (mode === 'stopped-early') {
    return {
      category: 'decomposition',
      description: `A question asking for ${shape} has ${relations.length} links: ${steps}; answer only after the last link, never with an entity found on the way.`,
      triggers,
      avoid: [`answering with the ${nouns[0]} (an intermediate entity) instead of following every link`],
      queries: [`[${startKind}]`, '[entity found at the previous link]'],
    };
  }
  if (mode === 'wrong-entity') {
    return {
      category: 'relations',
      description: `For ${shape}, read each link in the passage titled by the entity just searched, and take the name that passage gives for the ${nouns[nouns.length - 1]}, not another name in the results.`,
      triggers,
      avoid: ['taking a name from a different passage of the results'],
      queries: [`[${startKind}]`, '[entity] ' + (nouns[nouns.length - 1] ?? '')],
    };
  }
  return {
    category: 'search-strategy',
    description: `For ${shape}, search the entity named in the question by its exact name and answer with a name copied from the passage, not with other words.`,
    triggers,
    avoid: ['an answer that is not a name from the passages'],
    queries: [`[${startKind}]`],
  };
}
