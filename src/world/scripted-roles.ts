// The world's LLM-free text roles, named as scripted in code and in their `name` (which the run log prints):
// - WorldRagReader answers the RAG validity check (docs/method.md, "Validating questions") from the given documents only: it parses
//   the question with the world's grammar and follows its chain through the facts those documents state.
//   The judge itself is exact match with the answer's aliases (the world's answers are unique).
// - TemplateDistiller turns a failure into a card from what a distiller LLM is shown (the question, the answers,
//   the searches and the passages): by the question's wording and the failure mode visible in the passages, as
//   one JSON card in the format the bank parses. It knows nothing of the world's facts or grammar.
// Both implement TextGenerator (src/llm/types.ts), so a real judge or distiller endpoint replaces them by
// configuration alone. See docs/world.md.
import type { Relation } from '../corpus/questions.js';
import type { ChatMessage, CompleteOptions, TextGenerator } from '../llm/types.js';
import { normalizeAnswer } from '../agent/judge.js';
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

/** The text after a `Label:` line up to the next blank line (a multi-line field of the prompt). */
function block(text: string, label: string): string {
  const at = text.indexOf(`${label}:`);
  if (at < 0) return '';
  const rest = text.slice(at + label.length + 1);
  const end = rest.indexOf('\n\n');
  return (end < 0 ? rest : rest.slice(0, end)).trim();
}

/** Whether `name` occurs in `text` as a whole phrase (normalized as answers are). */
function mentions(text: string, name: string): boolean {
  const n = normalizeAnswer(name);
  return n.length > 0 && ` ${normalizeAnswer(text)} `.includes(` ${n} `);
}

/**
 * What a reader takes from a question's wording alone, with no knowledge of the world: the names it mentions
 * (runs of capitalized words after the first word) replaced by [entity], its relation cues ("the author of",
 * one per nested "the … of" phrase, and the question's own verb phrase when it is not "who/what/which … is"),
 * and so how many links it chains.
 */
export function questionShape(question: string): { shape: string; cues: string[]; links: number } {
  // A preamble that frames the question ("According to the documents in the collection, …") asks nothing.
  const asked = question.replace(/^according to [^,?]*,\s*/i, '');
  const words = (asked.charAt(0).toUpperCase() + asked.slice(1)).replace(/\?\s*$/, '').split(/\s+/);
  const out: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i] as string;
    const cap = i > 0 && /^[A-Z]/.test(w);
    if (cap) {
      // A name: capitalized words, with lowercase joiners inside it ("Lake of Ashes", "The Hall of Ner").
      if (out[out.length - 1] === 'the') out.pop();
      while (i + 1 < words.length && (/^[A-Z]/.test(words[i + 1] as string) || (/^(of|the|and|de|van|von)$/.test(words[i + 1] as string) && /^[A-Z]/.test(words[i + 2] ?? '')))) i++;
      out.push('[entity]');
    } else out.push(w.toLowerCase());
  }
  const shape = out.join(' ').replace(/\[entity\]( \[entity\])+/g, '[entity]');
  // A nested link is a noun phrase with "of" ("the author of") or with a relative clause ("the person who
  // founded", "the town where … was born", "the novel on which … is based"), in the order they appear.
  const nested = [...shape.matchAll(/\bthe ((?:[a-z-]+ ){0,2}?[a-z-]+) (of|who|where|that|(?:on|in|at|by|into|under) (?:which|whom))\b/g)].map((m) => `the ${m[1]} ${m[2]}`);
  const copular = /^(who|what|which(?: [a-z-]+){0,3}) (is|was) the\b/.test(shape);
  const head = copular ? undefined : (/^(.*?)(?= the |\s\[entity\])/.exec(shape)?.[1] ?? '').trim();
  const cues = [...(head ? [head] : []), ...nested];
  return { shape: `${shape}?`, cues, links: Math.max(1, cues.length) };
}

/**
 * The scripted distiller (docs/world.md, "LLM-free roles"): it reads only what a distiller LLM is shown — the
 * question, the correct answer, the agent's answer, its searches and the passages it retrieved — and writes one
 * card by the question's wording and the failure mode it can see there:
 * - the agent's answer is named in its passages but the correct answer is in none of them: it answered with an
 *   entity met on the way and stopped searching (a `decomposition` card: follow every link);
 * - the correct answer is in its passages but it answered another name: it misread which name answers the
 *   question (a `relations` card);
 * - its answer is in none of its passages: it did not copy a name from the results (a `search-strategy` card).
 * It never reads the world's facts or its question grammar. Cards name no entity: names become [entity].
 */
export class TemplateDistiller implements TextGenerator {
  readonly name = 'template distiller (scripted, no LLM)';

  async complete(messages: ChatMessage[], _opts?: CompleteOptions): Promise<string> {
    const text = userText(messages);
    const question = field(text, 'Question') ?? '';
    const target = field(text, 'Correct answer') ?? '';
    const prediction = field(text, "Agent's answer") ?? '';
    const passages = block(text, 'Retrieved passages');
    const searches = (field(text, 'Searches the agent made') ?? '').match(/"(?:[^"\\]|\\.)*"/g)?.length ?? 0;
    if (question === '' || target === '') return 'no card: the prompt has no question or correct answer';
    const mode: FailureMode = mentions(passages, target) ? 'wrong-entity' : mentions(passages, prediction) ? 'stopped-early' : 'no-entity';
    return JSON.stringify(shapeCard(questionShape(question), mode, searches));
  }
}

/** Words that cannot name the kind of the entity that follows them ("the opera [entity]": an opera). */
const NOT_A_KIND = new Set(['the', 'a', 'an', 'of', 'by', 'in', 'on', 'at', 'to', 'from', 'into', 'that', 'which', 'who', 'whom', 'where', 'did', 'does', 'do', 'is', 'was', 'are', 'were', 'and', 'holds', 'spans', 'crosses', 'painted', 'wrote', 'founded', 'designed', 'composed', 'climbed']);

/** What the card calls a link: the noun of "the <noun> of" / "the <noun> who …"; the question's own verb phrase ("who painted") is its answer. */
function linkNoun(cue: string): string {
  const m = /^the ((?:[a-z-]+ ){0,2}?[a-z-]+) (?:of|who|where|that|(?:on|in|at|by|into|under) (?:which|whom))$/.exec(cue);
  return m ? (m[1] as string) : 'answer';
}

/**
 * The card for a question's wording and what went wrong, naming no entity (./scripted-roles.ts header), in the
 * wording of the cards the warm start's transcripts carry (cardFor below): the question asked "for the <link>
 * of the <link> of [kind]", its links searched innermost first. The kind of the named entity is the word the
 * question puts before its name ("the opera [entity]" → [opera]), else [entity].
 */
export function shapeCard(q: { shape: string; cues: string[]; links: number }, mode: FailureMode, searches: number): Record<string, unknown> {
  const { kind, nouns, shape } = cardShape(q);
  const steps = nouns.map((n, i) => (i === 0 ? `search [${kind}] and read its ${n}` : `search that entity and read its ${n}`)).join(', then ');
  const triggers = [`questions of the shape: ${shape}`, `questions like: ${q.shape}`, ...[...new Set(nouns)].map((n) => `the ${n} of`)];
  if (mode === 'stopped-early') {
    return {
      category: 'decomposition',
      description: `A question asking for ${shape} has ${nouns.length} link${nouns.length === 1 ? '' : 's'}: ${steps}; answer only after the last link, never with an entity found on the way.${searches > 0 && searches < nouns.length ? ` One search per link: ${searches} of ${nouns.length} were made.` : ''}`,
      triggers,
      avoid: [`answering with the ${nouns[0]} (an intermediate entity) instead of following every link`],
      queries: [`[${kind}]`, '[entity found at the previous link]'],
    };
  }
  if (mode === 'wrong-entity') {
    return {
      category: 'relations',
      description: `For ${shape}, read each link in the passage titled by the entity just searched, and take the name that passage gives for the ${nouns[nouns.length - 1]}, not another name in the results.`,
      triggers,
      avoid: ['taking a name from a different passage of the results'],
      queries: [`[${kind}]`, `[entity] ${nouns[nouns.length - 1]}`],
    };
  }
  return {
    category: 'search-strategy',
    description: `For ${shape}, search the entity named in the question by its exact name and answer with a name copied from the passage, not with other words.`,
    triggers,
    avoid: ['an answer that is not a name from the passages'],
    queries: [`[${kind}]`],
  };
}

/**
 * What a card written for a question (shapeCard) calls its shape: the kind of the named entity (the word the
 * question puts before its name, "the opera [entity]" → opera, else entity), the links innermost first, and the
 * shape text "the <link> of the <link> of [kind]" that the card's description opens with.
 */
export function cardShape(q: { shape: string; cues: string[] }): { kind: string; nouns: string[]; shape: string } {
  const before = /(\S+) \[entity\]/.exec(q.shape)?.[1];
  const kind = before !== undefined && /^[a-z-]+$/.test(before) && !NOT_A_KIND.has(before) ? before : 'entity';
  // Links innermost first; a question whose wording shows fewer links than it counts repeats none.
  const nouns = (q.cues.length > 0 ? [...q.cues].reverse() : ['answer']).map(linkNoun);
  return { kind, nouns, shape: `${[...nouns].reverse().map((n) => `the ${n} of`).join(' ')} [${kind}]` };
}

/** A rendered card line of the solver prompt (src/skills/render.ts): `N. [category] description`. */
const RENDERED_CARD = /^\d+\. \[([a-z-]+)\] (.*)$/gm;

/** A card's shape with its kind left open: "the founder of the museum of [" + any kind + "]". */
function linkPattern(nouns: readonly string[]): string {
  return `${[...nouns].reverse().map((n) => `the ${n} of`).join(' ')} [`;
}

/**
 * The categories of the cards in a rendered card block that were written for this question's links: a card's
 * description opens with its shape ("A question asking for <shape> has …", "For <shape>, …", as shapeCard
 * writes them), and a card fits when its links are the ones shapeCard would write for the question, whatever
 * kind it names for the start entity ("the teacher of the teacher of [scholar]" fits "Who was the teacher of
 * the teacher of Velora Dalcott?"). What a reader of the block can check: the card's own words against the
 * question's, no fact of the world.
 */
export function fittingCards(question: string, block: string): Set<string> {
  const links = linkPattern(cardShape(questionShape(question)).nouns);
  const out = new Set<string>();
  for (const m of block.matchAll(RENDERED_CARD)) {
    const desc = m[2] as string;
    const shape = /^(?:A question asking for (.*?\]) has |For (.*?\]), )/.exec(desc);
    const cardShapeText = shape?.[1] ?? shape?.[2];
    if (cardShapeText !== undefined && cardShapeText.startsWith(links) && /^\[[a-z-]+\]$/.test(cardShapeText.slice(links.length - 1))) out.add(m[1] as string);
  }
  return out;
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
