// Question wording for the fact graph. Every relation is functional from its subject, so a question that
// names a start entity unambiguously and walks relations forward has exactly one answer. A chain is
// phrased as nested noun phrases ("the birthplace of the author of the novel X"), which never names the
// bridging entities, and the last relation becomes the question itself.

export const RELATIONS = [
  'born_in', 'educated_at', 'teacher', 'in_region', 'located_on', 'founded_by', 'capital', 'flows_into', 'rises_on',
  'charted_by', 'first_climbed_by', 'author', 'set_in', 'composer', 'based_on', 'premiered_in', 'painter', 'held_by',
  'crosses', 'designer', 'located_in', 'headquartered_in', 'held_in', 'honours', 'spouse', 'best_known_for',
] as const;
export type Relation = (typeof RELATIONS)[number];

interface Wording {
  /** Noun phrases for "the object of this relation for {x}". */
  np: readonly string[];
  /** Questions asking for the object of this relation for {x}. */
  q: readonly string[];
}

export const WORDING: Record<Relation, Wording> = {
  born_in: {
    np: ['the birthplace of {x}', 'the town where {x} was born'],
    q: ['In which town was {x} born?', 'What is the birthplace of {x}?', 'Where was {x} born?'],
  },
  educated_at: {
    np: ['the institution where {x} studied', 'the alma mater of {x}'],
    q: ['At which institution did {x} study?', 'Where was {x} educated?', 'What is the alma mater of {x}?'],
  },
  teacher: {
    np: ['the teacher of {x}', 'the mentor under whom {x} trained'],
    q: ['Who was the teacher of {x}?', 'Under whom did {x} train?'],
  },
  in_region: {
    np: ['the province in which {x} lies', 'the province that contains {x}'],
    q: ['In which province does {x} lie?', 'Which province contains {x}?'],
  },
  located_on: {
    np: ['the river on which {x} stands', 'the river that flows through {x}'],
    q: ['On which river does {x} stand?', 'Which river flows through {x}?'],
  },
  founded_by: {
    np: ['the founder of {x}', 'the person who founded {x}'],
    q: ['Who founded {x}?', 'Who was the founder of {x}?'],
  },
  capital: {
    np: ['the capital of {x}', 'the provincial capital of {x}'],
    q: ['What is the capital of {x}?', 'Which town is the capital of {x}?'],
  },
  flows_into: {
    np: ['the body of water into which {x} flows', 'the body of water that receives {x}'],
    q: ['Into which body of water does {x} flow?', 'Where does {x} empty?', 'Which body of water receives {x}?'],
  },
  rises_on: {
    np: ['the mountain on which {x} rises', 'the mountain at the source of {x}'],
    q: ['On which mountain does {x} rise?', 'Where does {x} have its source?', 'Which mountain is the source of {x}?'],
  },
  charted_by: {
    np: ['the explorer who first charted {x}', 'the person who first mapped the course of {x}'],
    q: ['Who first charted {x}?', 'Which explorer first mapped the course of {x}?'],
  },
  first_climbed_by: {
    np: ['the first person to climb {x}', 'the climber who made the first ascent of {x}'],
    q: ['Who made the first ascent of {x}?', 'Who first climbed {x}?'],
  },
  author: {
    np: ['the author of {x}', 'the writer of {x}'],
    q: ['Who wrote {x}?', 'Who is the author of {x}?'],
  },
  set_in: {
    np: ['the town in which {x} is set', 'the setting of {x}'],
    q: ['In which town is {x} set?', 'Where does {x} take place?', 'What is the setting of {x}?'],
  },
  composer: {
    np: ['the composer of {x}', 'the person who composed {x}'],
    q: ['Who composed {x}?', 'Who wrote the music of {x}?'],
  },
  based_on: {
    np: ['the novel on which {x} is based', 'the source novel of {x}'],
    q: ['Which novel is {x} based on?', 'On which novel is {x} based?', 'Which novel was adapted into {x}?'],
  },
  premiered_in: {
    np: ['the town where {x} premiered', 'the town that hosted the premiere of {x}'],
    q: ['In which town did {x} premiere?', 'Where was {x} first performed?', 'Which town hosted the premiere of {x}?'],
  },
  painter: {
    np: ['the painter of {x}', 'the artist who painted {x}'],
    q: ['Who painted {x}?', 'Which artist painted {x}?'],
  },
  held_by: {
    np: ['the museum that holds {x}', 'the collection that owns {x}'],
    q: ['Which museum holds {x}?', 'In which collection is {x} kept?'],
  },
  crosses: {
    np: ['the river crossed by {x}', 'the river that {x} spans'],
    q: ['Which river does {x} cross?', 'What river is spanned by {x}?'],
  },
  designer: {
    np: ['the engineer who designed {x}', 'the designer of {x}'],
    q: ['Who designed {x}?', 'Which engineer designed {x}?'],
  },
  located_in: {
    np: ['the town where {x} stands', 'the town that is home to {x}'],
    q: ['In which town is {x} located?', 'In which town does {x} stand?', 'Which town is home to {x}?'],
  },
  headquartered_in: {
    np: ['the town where {x} is based', 'the seat of {x}'],
    q: ['Where is {x} based?', 'In which town is {x} headquartered?', 'Which town is the seat of {x}?'],
  },
  held_in: {
    np: ['the town that hosts {x}', 'the town where {x} takes place'],
    q: ['Where is {x} held?', 'Which town hosts {x}?'],
  },
  honours: {
    np: ['the person honoured by {x}', 'the person in whose memory {x} was established'],
    q: ['In whose honour was {x} established?', 'Whom does {x} commemorate?'],
  },
  spouse: {
    np: ['the spouse of {x}', 'the person who married {x}'],
    q: ['Who was the spouse of {x}?', 'Whom did {x} marry?'],
  },
  best_known_for: {
    np: ['the best-known work of {x}', 'the most famous work of {x}'],
    q: ['What is the best-known work of {x}?', 'Which work is {x} best known for?'],
  },
};

/** Templates for wrapping a long phrase: only those that end with it, so nested chains stay readable
 * ("the birthplace of the teacher of X", never "the town where the teacher of X was born"). */
export function wordings(relation: Relation, part: 'np' | 'q', nested: boolean): readonly string[] {
  const all = WORDING[relation][part];
  if (!nested) return all;
  const tail = part === 'np' ? '{x}' : '{x}?';
  const ok = all.filter((t) => t.endsWith(tail));
  if (ok.length === 0) throw new Error(`no nested ${part} wording for ${relation}`);
  return ok;
}

export function fill(template: string, x: string): string {
  return template.replace('{x}', x);
}

export function capitalize(s: string): string {
  return s.length === 0 ? s : (s[0] as string).toUpperCase() + s.slice(1);
}
