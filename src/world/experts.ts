// The scripted experts of the world: a proposer and a solver written as plain code, used ONLY to make the
// warm-start transcripts (see docs/world.md). They never act during training or evaluation: there, only the
// model (with its adapter and, for SESA-On, its bank) and the search tool run.
//
// Both search the world's BM25 index for real and read only what the search returned, and both are
// imperfect on purpose, with tunable rates, so that the warm-started model leaves headroom that rewards can
// find:
// - the solver answers one hop early, with the bridge entity, at `prematureRate` after a hop whose answer is a
//   person ("the author of X is Y" and stop) and at `baseEarlyRate` after other hops; it misreads a passage
//   (takes another entity of the same kind that the results name) at `misreadRate`. When its prompt carries a
//   card written for the question's shape (fittingCards in ./scripted-roles.ts), it follows it: a decomposition
//   card, and it never stops early; a relations card, and it never misreads. Cards of another shape, or drawn at
//   random, it ignores: cards carry usable information only where they apply;
// - the proposer skips the confirming second search of a one-hop question at `oneSearchRate` and forgets the
//   long form of a short question (under ten words) at `shortFormRate`; both make the question invalid.
// Each transcript records which errors it made, so tests can check that an error-free one is right.
import type { SynthFact } from '../corpus/synthetic/index.js';
import type { Relation } from '../corpus/questions.js';
import { proposerMessages, solverMessages } from '../agent/prompts.js';
import type { Passage, Searcher } from '../search/types.js';
import { renderResults, SEARCH_TOP_K } from '../search/types.js';
import type { Rng } from '../util/rng.js';
import { fittingCards } from './scripted-roles.js';
import { LONG_FORM_PREFIX, type ParsedQuestion, type World } from './world.js';

/** A chat transcript for supervised fine-tuning: tool turns follow the assistant turn they belong to. */
export interface TranscriptMessage {
  role: 'user' | 'assistant' | 'tool';
  content: string;
}

/** How the expert proposer chooses among the facts it found and words its question (see expertPropose). */
export type ProposerStyle = 'varied' | 'canonical';

export type ExpertError = 'premature' | 'misread' | 'one-search' | 'short-form';

export interface Transcript {
  messages: TranscriptMessage[];
  meta: {
    role: 'solver' | 'proposer';
    world: number;
    hops: number;
    /** The gold answer (solver) or the target answer (proposer). */
    answer: string;
    /** The solver's final answer, or the proposer's question. */
    final: string;
    /** Solver: the final answer matches the gold. Proposer: the question is valid and resolves to the target. */
    correct: boolean;
    errors: ExpertError[];
    /**
     * Solver: the prompt carried no cards, cards none of which fit the question's shape (ignored), or a fitting
     * decomposition card (followed: no early answer) or fitting relations card only (followed: no misreading).
     */
    cards?: 'none' | 'other' | 'decomposition' | 'relations';
    /** Solver: how the card block was drawn (./card-blocks.ts), when it was. */
    cardBlock?: string;
    /** A copy exercise cut from or added to the solver transcripts (./exercises.ts), not a whole episode. */
    exercise?: 'window' | 'first-turn' | 'reading';
  };
}

export interface ExpertRates {
  prematureRate: number;
  baseEarlyRate: number;
  misreadRate: number;
  oneSearchRate: number;
  shortFormRate: number;
}

/** Defaults chosen so the warm start solves about half of the held-out questions (see docs/world.md). */
export const DEFAULT_EXPERT_RATES: ExpertRates = {
  prematureRate: 0.6,
  baseEarlyRate: 0.1,
  misreadRate: 0.1,
  oneSearchRate: 0.3,
  shortFormRate: 0.35,
};

/** A short noun for each relation, used in the experts' reasoning lines. */
export const RELATION_NOUN: Record<Relation, string> = {
  born_in: 'birthplace', educated_at: 'alma mater', teacher: 'teacher', in_region: 'province', located_on: 'river',
  founded_by: 'founder', capital: 'capital', flows_into: 'outflow', rises_on: 'source', charted_by: 'first charter',
  first_climbed_by: 'first climber', author: 'author', set_in: 'setting', composer: 'composer', based_on: 'source novel',
  premiered_in: 'premiere town', painter: 'painter', held_by: 'museum', crosses: 'river crossed', designer: 'designer',
  located_in: 'town', headquartered_in: 'seat', held_in: 'host town', honours: 'honoree', spouse: 'spouse',
  best_known_for: 'best-known work',
};

/** Relations whose object is a person: the hops after which the solver is tempted to stop early. */
export const PERSON_RELATIONS: ReadonlySet<Relation> = new Set<Relation>([
  'teacher', 'founded_by', 'charted_by', 'first_climbed_by', 'author', 'composer', 'painter', 'designer', 'honours', 'spouse',
]);

function searchTurn(think: string, query: string): string {
  return `<think> ${think} </think>\n<search> ${query} </search>`;
}

async function searchOnce(searcher: Searcher, query: string): Promise<Passage[]> {
  const [results] = await searcher.search([query], SEARCH_TOP_K);
  return results ?? [];
}

/** The solver's first thought: the first relation of the question's chain and its start entity. */
function firstThink(world: World, parsed: ParsedQuestion): string {
  return `find the ${RELATION_NOUN[parsed.relations[0] as Relation]} of ${world.searchQuery(world.entity(parsed.start))}`;
}

/** The expert solver's first assistant turn on a question (think, then the search for its start entity). */
export function expertFirstTurn(world: World, question: string): string | undefined {
  const parsed = world.parseQuestion(question);
  return parsed ? searchTurn(firstThink(world, parsed), world.searchQuery(world.entity(parsed.start))) : undefined;
}

/**
 * The expert solver on one question of the world. `cardsText` is the rendered skill block of its prompt (as
 * the solver role renders retrieved cards), or undefined for a prompt without cards. Undefined when the
 * question is not of the world's grammar or a needed passage is not retrieved (no transcript then).
 */
export async function expertSolve(
  world: World,
  searcher: Searcher,
  question: string,
  golds: readonly string[],
  rates: ExpertRates,
  rng: Rng,
  cardsText?: string,
): Promise<Transcript | undefined> {
  const parsed: ParsedQuestion | undefined = world.parseQuestion(question);
  if (!parsed) return undefined;
  const fits = cardsText !== undefined ? fittingCards(question, cardsText) : new Set<string>();
  const followsCard = fits.has('decomposition');
  const readsCarefully = fits.has('relations');
  const messages: TranscriptMessage[] = [{ role: 'user', content: solverMessages(question, cardsText)[0]?.content ?? '' }];
  const errors: ExpertError[] = [];
  let cur = parsed.start;
  let think = firstThink(world, parsed);
  let final: string | undefined;
  for (let i = 0; i < parsed.relations.length; i++) {
    const relation = parsed.relations[i] as Relation;
    const query = world.searchQuery(world.entity(cur));
    messages.push({ role: 'assistant', content: searchTurn(think, query) });
    const results = await searchOnce(searcher, query);
    messages.push({ role: 'tool', content: renderResults(results) });
    const fact = world.fact(cur, relation);
    const shown = new Set(results.map((p) => p.id));
    if (!fact || !shown.has(fact.passageId)) return undefined;
    let next = fact.object;
    if (!readsCarefully && rng.next() < rates.misreadRate) {
      // Another entity of the same kind that the retrieved passages name: the passage read carelessly.
      const kind = world.entity(next).kind;
      const others = [...new Set(world.synth.facts.filter((f) => shown.has(f.passageId) && f.object !== next && world.entity(f.object).kind === kind).map((f) => f.object))];
      if (others.length > 0) {
        next = others[rng.int(others.length)] as string;
        errors.push('misread');
      }
    }
    const said = `the ${RELATION_NOUN[relation]} of ${world.entity(cur).name} is ${world.entity(next).name}`;
    const last = i === parsed.relations.length - 1;
    const earlyRate = PERSON_RELATIONS.has(relation) ? rates.prematureRate : rates.baseEarlyRate;
    if (last || (!followsCard && rng.next() < earlyRate)) {
      if (!last) errors.push('premature');
      final = world.entity(next).name;
      messages.push({ role: 'assistant', content: `<think> ${said} </think>\n<answer> ${final} </answer>` });
      break;
    }
    cur = next;
    think = `${said}; now find the ${RELATION_NOUN[parsed.relations[i + 1] as Relation]} of ${world.entity(cur).name}`;
  }
  if (final === undefined) return undefined;
  const norm = (s: string): string => s.toLowerCase().trim();
  return {
    messages: mergeAssistantTurns(messages),
    meta: {
      role: 'solver', world: world.options.seed, hops: parsed.relations.length, answer: golds[0] ?? '', final,
      correct: golds.some((g) => norm(g) === norm(final as string)), errors,
      cards: cardsText === undefined ? 'none' : followsCard ? 'decomposition' : readsCarefully ? 'relations' : 'other',
    },
  };
}

/**
 * The expert proposer for an answer entity and hop count: searches the answer, picks a fact of a retrieved
 * passage that names it, walks back hop by hop (searching each new entity), confirms a one-hop chain with a
 * second search, and writes the question with the world's wording. `style` 'varied' picks a random fact among
 * those the results state and a random wording; 'canonical' takes the fact of the highest-ranked passage and
 * the chain's one canonical wording (World.phrase), a policy with fewer choices for a small model to imitate.
 * Undefined when no chain of that length can be built from what the searches return.
 */
export async function expertPropose(
  world: World,
  searcher: Searcher,
  answerId: string,
  hops: number,
  rates: ExpertRates,
  rng: Rng,
  style: ProposerStyle = 'varied',
): Promise<Transcript | undefined> {
  const answer = world.entity(answerId);
  const messages: TranscriptMessage[] = [{ role: 'user', content: proposerMessages(answer.name, hops)[0]?.content ?? '' }];
  const errors: ExpertError[] = [];
  const path: SynthFact[] = [];
  const seen = new Set([answerId]);
  let cur = answerId;
  let think = `find a passage that names ${answer.name}`;
  for (let k = 0; k < hops; k++) {
    const query = world.searchQuery(world.entity(cur));
    messages.push({ role: 'assistant', content: searchTurn(think, query) });
    const results = await searchOnce(searcher, query);
    messages.push({ role: 'tool', content: renderResults(results) });
    const shown = new Set(results.map((p) => p.id));
    const options = world.factsInto(cur).filter((f) => shown.has(f.passageId) && !seen.has(f.subject));
    if (options.length === 0) return undefined;
    const rank = (f: SynthFact): number => results.findIndex((p) => p.id === f.passageId);
    const f = (style === 'canonical' ? [...options].sort((a, b) => rank(a) - rank(b))[0] : options[rng.int(options.length)]) as SynthFact;
    path.unshift(f);
    seen.add(f.subject);
    const said = `the ${RELATION_NOUN[f.relation]} of ${world.entity(f.subject).name} is ${world.entity(cur).name}`;
    cur = f.subject;
    think = k + 1 < hops ? `${said}; now find a passage that names ${world.entity(cur).name}` : said;
  }
  // A one-hop chain is confirmed by searching its start entity (two distinct searches, docs/method.md "Validating questions").
  if (hops === 1) {
    if (rng.next() < rates.oneSearchRate) errors.push('one-search');
    else {
      const query = world.searchQuery(world.entity(cur));
      messages.push({ role: 'assistant', content: searchTurn(`${think}; confirm it in the passage of ${world.entity(cur).name}`, query) });
      messages.push({ role: 'tool', content: renderResults(await searchOnce(searcher, query)) });
      think = `confirmed: ${think}`;
    }
  }
  const golden = world.golden(answerId).map((g) => g.toLowerCase());
  let question: string | undefined;
  // A random wording may name the answer: try a few. The canonical wording is one string: try it once.
  const attempts = style === 'canonical' ? 1 : 4;
  for (let attempt = 0; attempt < attempts && question === undefined; attempt++) {
    const q = world.phrase(path, style === 'canonical' ? 'canonical' : rng);
    if (!golden.some((g) => q.toLowerCase().includes(g))) question = q;
  }
  if (question === undefined) return undefined;
  if (question.split(/\s+/).length < 10) {
    if (rng.next() < rates.shortFormRate) errors.push('short-form');
    else question = LONG_FORM_PREFIX + question.charAt(0).toLowerCase() + question.slice(1);
  }
  messages.push({ role: 'assistant', content: `<think> ${think} </think>\n<question> ${question} </question>` });
  const parsed = world.parseQuestion(question);
  const resolves = parsed !== undefined && world.follow(parsed)?.at(-1) === answerId;
  return {
    messages: mergeAssistantTurns(messages),
    meta: { role: 'proposer', world: world.options.seed, hops, answer: answer.name, final: question, correct: resolves && errors.length === 0, errors },
  };
}

/**
 * Consecutive assistant messages (an answer right after a tool turn has none between) stay separate turns in
 * the transcript format only when a tool turn separates them; two assistant turns in a row are joined.
 */
function mergeAssistantTurns(messages: TranscriptMessage[]): TranscriptMessage[] {
  const out: TranscriptMessage[] = [];
  for (const m of messages) {
    const prev = out[out.length - 1];
    if (prev && prev.role === 'assistant' && m.role === 'assistant') prev.content += m.content;
    else out.push({ ...m });
  }
  return out;
}

/**
 * The accuracy an exact imitator of the expert solver would reach on a question without a decomposition card:
 * `greedy` takes the likelier action at every choice (never misreads while misreadRate < 0.5, stops early
 * where the early rate is over 0.5), else the expected accuracy of sampling the expert's own rates. The
 * design check of the world's headroom (docs/world.md).
 */
export function imitatorAccuracy(relations: readonly Relation[], rates: ExpertRates, greedy: boolean): number {
  const inner = relations.slice(0, -1);
  const early = (r: Relation): number => (PERSON_RELATIONS.has(r) ? rates.prematureRate : rates.baseEarlyRate);
  if (greedy) return rates.misreadRate < 0.5 && inner.every((r) => early(r) <= 0.5) ? 1 : 0;
  return inner.reduce((p, r) => p * (1 - early(r)), (1 - rates.misreadRate) ** relations.length);
}
