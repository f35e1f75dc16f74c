// The data a generated world is made of, as the rest of the project sees it: entities and facts (the graph behind
// the text), corpus rows (wiki-18 format), answer seeds for the proposer, held-out questions with their
// supporting chains, and the summary stats. Types only; ./index.ts builds them.
import type { Relation } from '../questions.js';

export type EntityKind =
  | 'person' | 'town' | 'region' | 'water' | 'mountain' | 'river' | 'organization'
  | 'novel' | 'composition' | 'painting' | 'bridge' | 'festival';

export interface SynthEntity {
  id: string;
  kind: EntityKind;
  /** Finer type: occupation for people, opera/symphony/... for compositions, lake/sea/gulf, university/... */
  type: string;
  name: string;
  /** Alternate name stated in the entity's passage; also a golden answer. */
  alias?: string;
  /** Passage title, unique across the corpus (namesakes get a qualifier, as on Wikipedia). */
  title: string;
  /** Shares its name with another entity on purpose; always referred to with its disambiguator. */
  namesake: boolean;
  /** Birth, founding, publication, completion or first-ascent year. */
  year: number;
  /** Death year for people. */
  endYear?: number;
  passageIds: string[];
}

export interface SynthFact {
  subject: string;
  relation: Relation;
  object: string;
  /** The passage (of the subject) that states the fact and names the object. */
  passageId: string;
}

export interface CorpusRow {
  id: string;
  contents: string;
}

/**
 * An answer the generator picked for the proposer: an entity (its id and kind) and the hop count of a chain
 * that reaches it. The trainer's answer seed (src/agent/roles.ts, AnswerSeed) is made from it, with the
 * entity's other names as aliases.
 */
export interface SynthAnswerSeed {
  answer: string;
  hops: 1 | 2 | 3;
  entityId: string;
  kind: string;
}

/** How a question names its start entity: enough to single it out among namesakes. */
export interface StartRef {
  name: string;
  kind: EntityKind;
  /** Present for namesake people (occupation) and compositions. */
  type?: string;
  /** Present for namesake towns: the province's name. */
  region?: string;
}

export interface HeldOutQuestion {
  id: string;
  question: string;
  golden_answers: string[];
  hops: 1 | 2 | 3;
  /** One passage per hop, in order: each names the next entity of the chain; the last names the answer. */
  supporting_ids: string[];
  /** Entity ids from the start entity to the answer (hops + 1 of them). */
  chain: string[];
  relations: Relation[];
  start: StartRef;
}

export interface SyntheticCorpusStats {
  seed: number;
  passages: number;
  entities: number;
  byKind: Record<string, number>;
  facts: number;
  aliases: number;
  namesakeGroups: number;
  meanWordsPerPassage: number;
  seeds: { total: number; byHops: Record<'1' | '2' | '3', number> };
  heldOut: { total: number; byHops: Record<'1' | '2' | '3', number> };
}

export interface SyntheticCorpus {
  corpus: CorpusRow[];
  seeds: SynthAnswerSeed[];
  heldOut: HeldOutQuestion[];
  stats: SyntheticCorpusStats;
  /** The fact graph behind the text, for checks and debugging. */
  entities: SynthEntity[];
  facts: SynthFact[];
}

export interface SyntheticCorpusOptions {
  seed: number;
  /** Number of passages (default 2,400; at least 300). */
  passages?: number;
  /** Held-out questions per hop count (default passages / 16). */
  heldOutPerHop?: number;
}
