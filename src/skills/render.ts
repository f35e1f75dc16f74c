// The compact rendering of retrieved cards for the solver prompt (docs/method.md, "The skill bank"), within a token budget.
// Tokens are counted by a function the caller passes (the policy's tokenizer), or approximated as
// characters / 4. Over budget, detail is shed from the lowest-ranked card upward (query templates, then
// anti-patterns and triggers), then whole cards from the end; the best card is kept, truncated if need be.
import type { SkillCard } from './card.js';

export type TokenCounter = (text: string) => number;
export const approxTokens: TokenCounter = (text) => Math.ceil(text.length / 4);

export interface RenderOptions {
  tokenBudget: number;
  countTokens?: TokenCounter;
  header?: string;
}

export interface Rendered {
  text: string;
  /** The cards that made it into the text, in order. */
  cardIds: string[];
  tokens: number;
}

export const DEFAULT_RENDER_HEADER = 'Strategies from past search experience (use them if they apply):';

// 0 = full, 1 = without query templates, 2 = description only.
type Level = 0 | 1 | 2;

function renderCard(card: SkillCard, n: number, level: Level, maxDescChars?: number): string {
  const desc = maxDescChars !== undefined && card.description.length > maxDescChars ? `${card.description.slice(0, Math.max(0, maxDescChars - 1))}…` : card.description;
  const lines = [`${n}. [${card.category}] ${desc}`];
  if (level <= 1) {
    if (card.triggers.length > 0) lines.push(`   When: ${card.triggers.join('; ')}`);
    if (card.avoid.length > 0) lines.push(`   Avoid: ${card.avoid.join('; ')}`);
  }
  if (level === 0 && card.queries.length > 0) lines.push(`   Queries: ${card.queries.join(' | ')}`);
  return lines.join('\n');
}

export function renderCards(cards: readonly SkillCard[], opts: RenderOptions): Rendered {
  const count = opts.countTokens ?? approxTokens;
  const header = opts.header ?? DEFAULT_RENDER_HEADER;
  const levels: Level[] = cards.map(() => 0);
  let shown = cards.length;
  const build = (descLimit?: number): string =>
    [header, ...cards.slice(0, shown).map((c, i) => renderCard(c, i + 1, levels[i] as Level, i === 0 ? descLimit : undefined))].join('\n');
  if (cards.length === 0) return { text: '', cardIds: [], tokens: 0 };

  let text = build();
  while (count(text) > opts.tokenBudget) {
    // Shed one level of detail from the last card that still has some; else drop the last card.
    let i = shown - 1;
    while (i >= 0 && levels[i] === 2) i--;
    if (i >= 0) levels[i] = (levels[i] as Level) + 1 as Level;
    else if (shown > 1) shown--;
    else break;
    text = build();
  }
  if (count(text) > opts.tokenBudget) {
    // One card, description only, still too long: cut the description (binary search on its length).
    let lo = 0;
    let hi = (cards[0] as SkillCard).description.length;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (count(build(mid)) <= opts.tokenBudget) lo = mid;
      else hi = mid - 1;
    }
    if (lo < 20) return { text: '', cardIds: [], tokens: 0 };
    text = build(lo);
  }
  return { text, cardIds: cards.slice(0, shown).map((c) => c.id), tokens: count(text) };
}
