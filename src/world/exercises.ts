// Copy exercises: short pieces of solver work, added to the warm-start transcripts (docs/world.md, "The
// warm-start model").
//
// A solver copies names: the question's start entity into its first query, each name a passage gives into
// the next thought, query or answer. In whole transcripts those tokens are a few percent of the text: the
// instruction prompt and three passages per search make up most of it. A small model trained from random init
// on whole transcripts learned the protocol and the relation words but never copied (docs/world.md,
// "Measured"). The exercises keep the copying and drop most of the rest:
//
//   window of turn k     = [user: "Question: q", (assistant: turn k−1, tool: its results,) assistant: turn k]
//   first-turn exercise  = [user: "Question: q", assistant: the expert's first turn]   for further questions
//
// Windows are cut from solver transcripts that are already clean of held-out strings; first-turn questions
// are drawn from the same training worlds and pass the same check (see ./transcripts.ts).
import type { SynthFact } from '../corpus/synthetic/index.js';
import type { Relation } from '../corpus/questions.js';
import { renderResults, SEARCH_TOP_K, type Searcher } from '../search/types.js';
import type { Rng } from '../util/rng.js';
import { expertFirstTurn, RELATION_NOUN, type Transcript, type TranscriptMessage } from './experts.js';
import type { World } from './world.js';

const QUESTION_MARK = 'Question: ';

/** The question of a solver prompt (its last "Question: " line). */
export function promptQuestion(prompt: string): string {
  const at = prompt.lastIndexOf(QUESTION_MARK);
  if (at < 0) throw new Error('copy exercises: a solver prompt without a "Question: " line');
  return prompt.slice(at + QUESTION_MARK.length).trim();
}

/** Where the solver prompt's own text starts, after the card block when there is one (src/agent/prompts.ts). */
const SOLVER_INSTRUCTION = 'Answer the question below.';

/** The card block a solver prompt opens with, or '' when it has none. */
export function promptCardBlock(prompt: string): string {
  const at = prompt.indexOf(SOLVER_INSTRUCTION);
  return at > 0 ? prompt.slice(0, at).trim() : '';
}

/**
 * One window per assistant turn of a solver transcript (none for a proposer's). With `keepCards`, a window of an
 * episode whose prompt carried a card block opens with that block before its question, so that copying is also
 * practised with a block in the context, as a run's prompts with cards have it.
 */
export function turnWindows(t: Transcript, keepCards = false): Transcript[] {
  if (t.meta.role !== 'solver') return [];
  const first = t.messages[0];
  if (first?.role !== 'user') throw new Error('copy exercises: a solver transcript must open with the user prompt');
  const block = keepCards ? promptCardBlock(first.content) : '';
  const user: TranscriptMessage = { role: 'user', content: `${block.length > 0 ? `${block}\n\n` : ''}${QUESTION_MARK}${promptQuestion(first.content)}` };
  const out: Transcript[] = [];
  for (let i = 1; i < t.messages.length; i++) {
    const m = t.messages[i] as TranscriptMessage;
    if (m.role !== 'assistant') continue;
    const before = i >= 3 ? t.messages.slice(i - 2, i) : [];
    out.push({ messages: [user, ...before, m], meta: { ...t.meta, exercise: 'window' } });
  }
  return out;
}

/**
 * `count` first-turn exercises from `world`: a random chain's question and the expert's first turn on it.
 * `chain` draws a chain (hop count included), `keep` rejects questions (held-out strings).
 */
export function firstTurnExercises(
  world: World,
  count: number,
  chain: (rng: Rng) => SynthFact[] | undefined,
  keep: (text: string) => boolean,
  rng: Rng,
): Transcript[] {
  const out: Transcript[] = [];
  for (let tries = 0; out.length < count && tries < count * 4; tries++) {
    const path = chain(rng);
    if (!path) continue;
    const question = world.phrase(path, rng);
    const turn = expertFirstTurn(world, question);
    if (turn === undefined || !keep(`${question}\n${turn}`)) continue;
    const answer = world.golden((path[path.length - 1] as SynthFact).object)[0] ?? '';
    out.push({
      messages: [{ role: 'user', content: `${QUESTION_MARK}${question}` }, { role: 'assistant', content: turn }],
      meta: { role: 'solver', world: world.options.seed, hops: path.length, answer, final: '', correct: true, errors: [], exercise: 'first-turn' },
    });
  }
  return out;
}

/** The instruction of a reading drill: not a solver prompt, so the model can tell a drill from an episode. */
export const READING_DRILL_PROMPT = 'State the facts that the search results give.';

/**
 * `count` reading drills from `world`: a search for a random entity, its results, and every fact those
 * results state (at most `maxFacts`, in random order) as the solver's own reading line, "<think> the <noun> of
 * S is O </think>". A solver episode reads one fact per search; a drill reads several from one result block,
 * so most of its trained tokens are names copied out of a passage chosen by its subject and relation — the
 * step that the models trained on episodes and windows alone learned least (docs/world.md, "The warm-start
 * model"). `keep` rejects drills (held-out strings).
 */
export async function readingDrills(
  world: World,
  searcher: Searcher,
  count: number,
  maxFacts: number,
  keep: (text: string) => boolean,
  rng: Rng,
): Promise<Transcript[]> {
  const out: Transcript[] = [];
  const ents = world.synth.entities;
  for (let tries = 0; out.length < count && tries < count * 4; tries++) {
    const e = ents[rng.int(ents.length)];
    if (!e) continue;
    const query = world.searchQuery(e);
    const [results = []] = await searcher.search([query], SEARCH_TOP_K);
    const shown = new Set(results.map((p) => p.id));
    const facts = world.synth.facts.filter((f) => shown.has(f.passageId));
    if (facts.length === 0) continue;
    for (let i = facts.length - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      [facts[i], facts[j]] = [facts[j] as SynthFact, facts[i] as SynthFact];
    }
    const lines = facts.slice(0, maxFacts).map((f) => `<think> the ${RELATION_NOUN[f.relation as Relation]} of ${world.entity(f.subject).name} is ${world.entity(f.object).name} </think>`);
    const messages: TranscriptMessage[] = [
      { role: 'user', content: READING_DRILL_PROMPT },
      { role: 'assistant', content: `<search> ${query} </search>` },
      { role: 'tool', content: renderResults(results) },
      { role: 'assistant', content: lines.join('\n') },
    ];
    if (!keep(messages.map((m) => m.content).join('\n'))) continue;
    out.push({ messages, meta: { role: 'solver', world: world.options.seed, hops: 1, answer: '', final: '', correct: true, errors: [], exercise: 'reading' } });
  }
  return out;
}
