// The skill card (docs/method.md, "The skill bank"): s = (u, c, a, z, m) = description, triggers, avoid, queries, stats, plus id,
// category, source, createdStep and bankVersion. Validation names the exact field that is wrong, because
// cards come from files people edit and from LLM output.
import { createHash } from 'node:crypto';
import { cut, echo } from '../util/text-file.js';

export type SkillSource = 'seed' | 'mined' | 'distilled';
export const SKILL_SOURCES: readonly SkillSource[] = ['seed', 'mined', 'distilled'];

export interface SkillStats {
  /** Times the card was in a rollout's retrieved set (docs/method.md, "The skill bank"). */
  retrieved: number;
  /** Rollouts with the card retrieved that answered correctly. */
  helpful: number;
  /** Rollouts with the card retrieved that gave a well-formed wrong answer. */
  hurt: number;
}

export interface SkillCard {
  id: string;
  category: string;
  source: SkillSource;
  /** u: what the strategy is. */
  description: string;
  /** c: when it applies. */
  triggers: string[];
  /** a: anti-patterns and common confusions. */
  avoid: string[];
  /** z: reusable query templates, e.g. `born [place] [year] son of [parents]`. */
  queries: string[];
  /** m */
  stats: SkillStats;
  createdStep: number;
  /** The bank version whose commit admitted the card. */
  bankVersion: number;
}

/** The part of a card an author or the distiller writes; the bank fills in the rest. */
export interface CardContent {
  category: string;
  description: string;
  triggers: string[];
  avoid: string[];
  queries: string[];
}

export const CARD_LIMITS = Object.freeze({
  descriptionMin: 10,
  descriptionMax: 1000,
  itemMax: 300,
  triggersMax: 16,
  avoidMax: 16,
  queriesMax: 16,
});

const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const CATEGORY_RE = /^[a-z][a-z0-9-]{0,39}$/;

export class SkillSchemaError extends Error {
  constructor(
    readonly where: string,
    readonly problems: string[],
  ) {
    super(`${where}: ${problems.join('; ')}`);
    this.name = 'SkillSchemaError';
  }
}

/** The text a card is embedded as (docs/method.md, "The skill bank": description + triggers; the embedder adds `query: `). */
export function cardEmbeddingText(card: Pick<CardContent, 'description' | 'triggers'>): string {
  return `${card.description} ${card.triggers.join(', ')}`.trim();
}

export function emptyStats(): SkillStats {
  return { retrieved: 0, helpful: 0, hurt: 0 };
}

/** A stable id for a distilled card: its content hash, so re-distilling the same text gives the same id. */
export function contentId(prefix: string, content: CardContent): string {
  const h = createHash('sha256').update(JSON.stringify([content.category, content.description, content.triggers])).digest('hex');
  return `${prefix}-${h.slice(0, 12)}`;
}

/** Checks a full card (from a bank file or a JSONL import). Throws SkillSchemaError naming each bad field. */
export function validateCard(value: unknown, where: string): SkillCard {
  const p: string[] = [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new SkillSchemaError(where, ['not an object']);
  const o = value as Record<string, unknown>;
  if (typeof o.id !== 'string' || !ID_RE.test(o.id)) p.push(`id must match ${ID_RE}, got ${echo(o.id)}`);
  if (typeof o.source !== 'string' || !SKILL_SOURCES.includes(o.source as SkillSource)) {
    p.push(`source must be one of ${SKILL_SOURCES.join('|')}, got ${echo(o.source)}`);
  }
  checkContent(o, p);
  const stats = o.stats;
  if (typeof stats !== 'object' || stats === null) p.push('stats must be an object {retrieved, helpful, hurt}');
  else {
    for (const k of ['retrieved', 'helpful', 'hurt'] as const) {
      const v = (stats as Record<string, unknown>)[k];
      if (!isCount(v)) p.push(`stats.${k} must be a non-negative integer, got ${echo(v)}`);
    }
  }
  if (!isCount(o.createdStep)) p.push(`createdStep must be a non-negative integer, got ${echo(o.createdStep)}`);
  if (!isCount(o.bankVersion)) p.push(`bankVersion must be a non-negative integer, got ${echo(o.bankVersion)}`);
  if (p.length > 0) throw new SkillSchemaError(typeof o.id === 'string' ? `${where} (card ${cut(o.id)})` : where, p);
  const s = stats as SkillStats;
  return {
    id: o.id as string,
    category: o.category as string,
    source: o.source as SkillSource,
    description: o.description as string,
    triggers: [...(o.triggers as string[])],
    avoid: [...(o.avoid as string[])],
    queries: [...(o.queries as string[])],
    stats: { retrieved: s.retrieved, helpful: s.helpful, hurt: s.hurt },
    createdStep: o.createdStep as number,
    bankVersion: o.bankVersion as number,
  };
}

/** Checks the authored part of a card (seeds, distiller output after normalization). */
export function validateContent(value: unknown, where: string): CardContent {
  const p: string[] = [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new SkillSchemaError(where, ['not an object']);
  const o = value as Record<string, unknown>;
  checkContent(o, p);
  if (p.length > 0) throw new SkillSchemaError(where, p);
  return {
    category: o.category as string,
    description: o.description as string,
    triggers: [...(o.triggers as string[])],
    avoid: [...(o.avoid as string[])],
    queries: [...(o.queries as string[])],
  };
}

function checkContent(o: Record<string, unknown>, p: string[]): void {
  if (typeof o.category !== 'string' || !CATEGORY_RE.test(o.category)) {
    p.push(`category must be a lowercase slug (${CATEGORY_RE}), got ${echo(o.category)}`);
  }
  const d = o.description;
  if (typeof d !== 'string' || d.trim().length < CARD_LIMITS.descriptionMin || d.length > CARD_LIMITS.descriptionMax) {
    p.push(`description must be a string of ${CARD_LIMITS.descriptionMin}–${CARD_LIMITS.descriptionMax} characters`);
  }
  checkList(o, 'triggers', 1, CARD_LIMITS.triggersMax, p);
  checkList(o, 'avoid', 0, CARD_LIMITS.avoidMax, p);
  checkList(o, 'queries', 0, CARD_LIMITS.queriesMax, p);
}

function checkList(o: Record<string, unknown>, field: string, min: number, max: number, p: string[]): void {
  const v = o[field];
  if (!Array.isArray(v)) {
    p.push(`${field} must be an array of strings`);
    return;
  }
  if (v.length < min || v.length > max) p.push(`${field} must have ${min}–${max} entries, got ${v.length}`);
  v.forEach((x, i) => {
    if (typeof x !== 'string' || x.trim().length === 0 || x.length > CARD_LIMITS.itemMax) {
      p.push(`${field}[${i}] must be a non-empty string of at most ${CARD_LIMITS.itemMax} characters`);
    }
  });
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0;
}

/** The utility score used to rank cards for the cap (ours): net helpfulness per retrieval, Laplace-damped. */
export function cardScore(s: SkillStats): number {
  return (s.helpful - s.hurt) / (s.retrieved + 1);
}
