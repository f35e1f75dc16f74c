// The project's own hand-written seed cards for search question answering (docs/method.md, "The skill bank": memory priming).
// Written for this project; loaded into every new bank unless asked not to, marked `seed`, never evicted.
import type { CardContent, SkillCard } from './card.js';
import { emptyStats, validateContent } from './card.js';

const SEEDS: Array<CardContent & { key: string }> = [
  {
    key: 'attribute-disambiguation',
    category: 'disambiguation',
    description:
      'When a question pins down a person or thing by several attributes (birthplace, year, parents, title, team), search with two or three of them together and accept only a candidate that satisfies every attribute, not just the most famous one.',
    triggers: ['born in', 'son of', 'daughter of', 'younger', 'which member of', 'who was the'],
    avoid: ['answering with the best-known person of that name or family', 'checking only one attribute'],
    queries: ['born [place] [year] son of [parents]', '[title] [organization] [year] [distinctive attribute]'],
  },
  {
    key: 'multi-hop-decomposition',
    category: 'decomposition',
    description:
      'Split a nested question into single-hop sub-questions, answer the innermost one first, and put its answer (an exact name) into the next search instead of searching the whole question at once.',
    triggers: ['of the', 'whose', 'the person who', 'the film that', 'nested clauses', 'two or more entities'],
    avoid: ['searching the full multi-clause question verbatim', 'guessing the bridge entity without a search'],
    queries: ['[inner entity] [relation]', '[bridge answer] [next relation]'],
  },
  {
    key: 'bridge-entity-verification',
    category: 'decomposition',
    description:
      'After resolving an intermediate (bridge) entity, confirm it with a second passage before building on it; a wrong bridge makes every later hop wrong.',
    triggers: ['director of the film', 'author of the book', 'founder of', 'capital of the country where'],
    avoid: ['trusting a bridge entity that appears in only one snippet', 'mixing two entities with similar names'],
    queries: ['[bridge entity] [property from the question]'],
  },
  {
    key: 'dates-and-ordering',
    category: 'dates-numbers',
    description:
      'For which-came-first, older, younger or how-many-years questions, look up the exact date of each entity separately, write both dates down, and compare them explicitly before answering.',
    triggers: ['first', 'earlier', 'older', 'younger', 'born first', 'released first', 'how many years'],
    avoid: ['comparing from memory', 'confusing founding, release and premiere dates'],
    queries: ['[entity A] date of birth', '[entity B] release date', '[entity] founded year'],
  },
  {
    key: 'numeric-answers',
    category: 'dates-numbers',
    description:
      'For how-many, population, height or distance questions, find the number stated in a passage for the exact quantity asked, keep its unit, and prefer the figure tied to the date or census the question names.',
    triggers: ['how many', 'how much', 'population', 'number of', 'length', 'height'],
    avoid: ['doing arithmetic on guessed numbers', 'dropping the unit', 'using a figure for the wrong year'],
    queries: ['[entity] population [year] census', '[entity] number of [thing]'],
  },
  {
    key: 'aliases-and-names',
    category: 'aliases',
    description:
      'People, places and works often have several names (stage names, maiden names, former names, translated titles). Search the alias too, and answer with the name form the question expects.',
    triggers: ['also known as', 'stage name', 'formerly', 'real name', 'original title', 'nickname'],
    avoid: ['concluding an entity does not exist because one spelling found nothing'],
    queries: ['[name] also known as', '[name] real name', '[translated title] original title'],
  },
  {
    key: 'verify-final-entity',
    category: 'verification',
    description:
      'Before answering, reread the question and check that the candidate answer has the asked type (person, year, country) and satisfies every constraint; if one constraint is unverified, run one more targeted search.',
    triggers: ['final answer', 'which', 'what', 'who', 'unique answer'],
    avoid: ['answering with an intermediate entity', 'answering a different property than the one asked'],
    queries: ['[candidate] [unverified constraint]'],
  },
  {
    key: 'answer-type-match',
    category: 'verification',
    description:
      'Answer with exactly what is asked and nothing else: a name for who, a place for where, a date or year for when, a number for how many. Do not answer with a related entity from the same passage.',
    triggers: ['who', 'where', 'when', 'what year', 'which country'],
    avoid: ['returning the film when the director was asked', 'returning a city when the country was asked'],
    queries: [],
  },
  {
    key: 'reformulate-empty-search',
    category: 'search-strategy',
    description:
      'If a search returns nothing relevant, do not repeat it: shorten it to the distinctive entity names, drop filler words, or switch to a synonym or a related entity before trying again.',
    triggers: ['no relevant results', 'irrelevant passages', 'repeated query', 'search failed'],
    avoid: ['issuing the same query twice', 'long natural-language queries'],
    queries: ['[distinctive name] [key relation]', '[synonym] [entity]'],
  },
  {
    key: 'comparison-questions',
    category: 'comparison',
    description:
      'For questions comparing two named entities (same nationality? which is larger? both directors?), retrieve the relevant attribute for each entity with its own search, then compare the two values.',
    triggers: ['both', 'same', 'which of', 'larger', 'more', 'or'],
    avoid: ['answering after looking up only one side', 'answering yes/no for a which-one question'],
    queries: ['[entity A] [attribute]', '[entity B] [attribute]'],
  },
  {
    key: 'yes-no-questions',
    category: 'comparison',
    description:
      'A question that starts with is, are, was, did or do expects yes or no. Establish the fact for each entity involved, then answer with yes or no, not with the entity.',
    triggers: ['are both', 'is the', 'did', 'were', 'was', 'do they'],
    avoid: ['answering with a name when yes or no was asked'],
    queries: ['[entity A] [property]', '[entity B] [property]'],
  },
  {
    key: 'role-relations',
    category: 'relations',
    description:
      'Relations are directional: the performer of a song is not its writer, the producer is not the director, a spouse is not a sibling. Search for the exact role the question names.',
    triggers: ['performer', 'composer', 'producer', 'director', 'spouse', 'father', 'mother'],
    avoid: ['taking any person named in the passage as the answer', 'swapping parent and child'],
    queries: ['[work] [exact role]', '[person] [exact relation]'],
  },
  {
    key: 'passage-grounding',
    category: 'evidence',
    description:
      'Ground the answer in the retrieved passages: quote or paraphrase the sentence that states the fact. When passages disagree with memory, prefer the passage; when passages disagree with each other, search again.',
    triggers: ['conflicting passages', 'uncertain', 'memory says otherwise', 'evidence'],
    avoid: ['answering from prior belief when a passage states otherwise'],
    queries: ['[entity] [fact] [year]'],
  },
  {
    key: 'ambiguous-titles',
    category: 'disambiguation',
    description:
      'Titles of films, songs, novels and albums are often shared by several works. Add the year, the medium or a creator to the query so the passage is about the intended work.',
    triggers: ['film', 'song', 'album', 'novel', 'series', 'title'],
    avoid: ['mixing the remake with the original', 'mixing a film with the book it adapts'],
    queries: ['[title] [year] film', '[title] song by [artist]', '[title] novel [author]'],
  },
  {
    key: 'place-hierarchy',
    category: 'geography',
    description:
      'Places nest (neighbourhood, city, county, state, country). Check which level the question asks for and climb the hierarchy with a search if the passage names only a lower level.',
    triggers: ['which country', 'which state', 'located in', 'county', 'province', 'city'],
    avoid: ['answering with the city when the country is asked', 'confusing places with the same name in different countries'],
    queries: ['[place] located in which country', '[place] [state] county seat'],
  },
  {
    key: 'superlatives-and-time-scope',
    category: 'dates-numbers',
    description:
      'Superlatives and "current" facts depend on time: the tallest, the first, the current holder. Anchor the question to the time it implies and look for the passage that states the fact for that time.',
    triggers: ['first', 'last', 'tallest', 'largest', 'current', 'as of', 'at the time'],
    avoid: ['using a record that was later broken', 'mixing the holder at two different times'],
    queries: ['[superlative] [category] [year]', '[office] holder in [year]'],
  },
  {
    key: 'organizations-and-affiliations',
    category: 'relations',
    description:
      'For questions about teams, bands, companies or parties a person belonged to, check the period of membership; people move between organizations, and the question usually fixes a time or event.',
    triggers: ['played for', 'member of', 'founded', 'worked for', 'party', 'band'],
    avoid: ['answering with the most recent affiliation when an earlier one is asked'],
    queries: ['[person] [organization type] [year]', '[person] career [event]'],
  },
  {
    key: 'stop-when-sufficient',
    category: 'search-strategy',
    description:
      'Once every hop is supported by a passage, answer instead of searching more; extra searches can pull in distracting entities. Conversely, never answer before the last hop is supported.',
    triggers: ['enough evidence', 'all hops resolved', 'many searches', 'turn limit'],
    avoid: ['using up the turn budget on redundant searches', 'answering with an unsupported last hop'],
    queries: [],
  },
];

/** The seed cards as they enter a new bank (version 0, step 0, zero stats). */
export function seedCards(): SkillCard[] {
  return SEEDS.map((s, i) => {
    const { key, ...content } = s;
    validateContent(content, `seed ${key}`);
    return {
      id: `seed-${String(i + 1).padStart(2, '0')}-${key}`,
      source: 'seed' as const,
      ...content,
      triggers: [...content.triggers],
      avoid: [...content.avoid],
      queries: [...content.queries],
      stats: emptyStats(),
      createdStep: 0,
      bankVersion: 0,
    };
  });
}
