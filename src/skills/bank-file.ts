// The skill bank's file (docs/method.md, "The skill bank"): its format (cards, utility stats, counters, the
// failure queue, the embedder that made the vectors), strict validation naming the file and field, the
// canonical serialization (the same content gives the same bytes), and the JSONL card exports. The live bank
// that owns such a file is ./bank.ts.
import { readFileSync } from 'node:fs';
import type { SkillCard } from './card.js';
import { validateCard } from './card.js';
import type { EmbedderInfo } from './embedder.js';
import type { FailureRecord } from './queue.js';
import { validateFailureRecord } from './queue.js';
import { echo } from '../util/text-file.js';

export const BANK_FORMAT = 'sesa-skill-bank';

export const BANK_FORMAT_VERSION = 1;

export interface BankCounters {
  commits: number;
  consolidations: number;
  /** Distiller replies that parsed into a valid card. */
  distilled: number;
  /** Distiller replies dropped as invalid. */
  invalid: number;
  /** Distiller calls that failed (endpoint errors); their records stay queued. */
  failed: number;
  admitted: number;
  duplicates: number;
  evictedNegative: number;
  evictedCap: number;
  imported: number;
  /** Failure records displaced because the queue was full. */
  queueDropped: number;
}

export interface BankFile {
  format: typeof BANK_FORMAT;
  formatVersion: number;
  version: number;
  embedder: EmbedderInfo;
  lastCommitStep: number;
  lastConsolidationStep: number | null;
  counters: BankCounters;
  cards: SkillCard[];
  queue: FailureRecord[];
}

export class BankFileError extends Error {
  constructor(
    readonly file: string,
    readonly field: string,
    problem: string,
  ) {
    super(`skill bank ${file}: ${field}: ${problem}`);
    this.name = 'BankFileError';
  }
}

export function zeroCounters(): BankCounters {
  return { commits: 0, consolidations: 0, distilled: 0, invalid: 0, failed: 0, admitted: 0, duplicates: 0, evictedNegative: 0, evictedCap: 0, imported: 0, queueDropped: 0 };
}

/** Reads and validates a bank file without loading an embedder (for inspection). Never repairs anything. */
export function readBankFile(path: string): BankFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new BankFileError(path, '(file)', `cannot read: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new BankFileError(path, '(file)', `not valid JSON, the file is damaged (${(err as Error).message}); it was left as it is`);
  }
  return validateBankFile(raw, path);
}

export function validateBankFile(raw: unknown, path: string): BankFile {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new BankFileError(path, '(root)', 'not a JSON object');
  const o = raw as Record<string, unknown>;
  if (o.format !== BANK_FORMAT) throw new BankFileError(path, 'format', `expected "${BANK_FORMAT}", got ${echo(o.format)}`);
  if (o.formatVersion !== BANK_FORMAT_VERSION) throw new BankFileError(path, 'formatVersion', `expected ${BANK_FORMAT_VERSION}, got ${echo(o.formatVersion)}`);
  const count = (field: string, v: unknown): number => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new BankFileError(path, field, `must be a non-negative integer, got ${echo(v)}`);
    return v;
  };
  count('version', o.version);
  count('lastCommitStep', o.lastCommitStep);
  if (o.lastConsolidationStep !== null) count('lastConsolidationStep', o.lastConsolidationStep);
  const e = o.embedder as Record<string, unknown> | undefined;
  if (typeof e !== 'object' || e === null) throw new BankFileError(path, 'embedder', 'missing');
  if (e.name !== 'e5' && e.name !== 'lexical') throw new BankFileError(path, 'embedder.name', `must be e5 or lexical, got ${echo(e.name)}`);
  if (typeof e.model !== 'string' || e.model.length === 0) throw new BankFileError(path, 'embedder.model', 'must be a non-empty string');
  count('embedder.dim', e.dim);
  if (typeof e.dedupThreshold !== 'number' || !(e.dedupThreshold > -1 && e.dedupThreshold <= 1)) {
    throw new BankFileError(path, 'embedder.dedupThreshold', `must be a number in (-1, 1], got ${echo(e.dedupThreshold)}`);
  }
  const counters = zeroCounters();
  if (typeof o.counters !== 'object' || o.counters === null) throw new BankFileError(path, 'counters', 'missing');
  for (const k of Object.keys(counters) as Array<keyof BankCounters>) counters[k] = count(`counters.${k}`, (o.counters as Record<string, unknown>)[k]);
  if (!Array.isArray(o.cards)) throw new BankFileError(path, 'cards', 'must be an array');
  const ids = new Set<string>();
  const cards = o.cards.map((c, i) => {
    let card: SkillCard;
    try {
      card = validateCard(c, `cards[${i}]`);
    } catch (err) {
      throw new BankFileError(path, `cards[${i}]`, (err as Error).message.replace(/^cards\[\d+\]( \(card [^)]*\))?: /, ''));
    }
    if (ids.has(card.id)) throw new BankFileError(path, `cards[${i}].id`, `duplicate id ${card.id}`);
    ids.add(card.id);
    return card;
  });
  if (!Array.isArray(o.queue)) throw new BankFileError(path, 'queue', 'must be an array');
  const keys = new Set<string>();
  const queue = o.queue.map((r, i) => {
    let rec: FailureRecord;
    try {
      rec = validateFailureRecord(r, `queue[${i}]`);
    } catch (err) {
      throw new BankFileError(path, `queue[${i}]`, (err as Error).message.replace(/^queue\[\d+\]: /, ''));
    }
    if (keys.has(rec.key)) throw new BankFileError(path, `queue[${i}].key`, `duplicate question key ${echo(rec.key)}`);
    keys.add(rec.key);
    return rec;
  });
  return {
    format: BANK_FORMAT,
    formatVersion: BANK_FORMAT_VERSION,
    version: o.version as number,
    embedder: { name: e.name, model: e.model, dim: e.dim as number, dedupThreshold: e.dedupThreshold },
    lastCommitStep: o.lastCommitStep as number,
    lastConsolidationStep: (o.lastConsolidationStep as number | null) ?? null,
    counters,
    cards,
    queue,
  };
}

/** One card per line; the stats travel with it, so an export/import round trip is lossless. */
export function cardsToJsonl(cards: readonly SkillCard[]): string {
  return cards.map((c) => JSON.stringify(c)).join('\n') + (cards.length > 0 ? '\n' : '');
}

/**
 * What a hand-written card (one that gives none of `stats`, `createdStep`, `bankVersion`: the bank's own record,
 * not the author's) is given on import: zero stats, and the step and bank version of the import.
 */
export interface AuthoredCardFill {
  createdStep: number;
  bankVersion: number;
}

/** Hand-written cards (isAuthored) among the valid JSON lines of `text`. */
export function authoredCards(text: string): number {
  return text.split('\n').filter((line) => {
    if (line.trim().length === 0) return false;
    try {
      return isAuthored(JSON.parse(line));
    } catch {
      return false;
    }
  }).length;
}

/** Whether a card line leaves out all three of the bank's own fields (a hand-written card). */
function isAuthored(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !('stats' in v) && !('createdStep' in v) && !('bankVersion' in v);
}

/**
 * Parses JSONL cards; a bad line is an error naming the file and the line. With `fill`, a hand-written card
 * (AuthoredCardFill) gets those fields; a card that gives some of them but not all is still refused, naming them.
 */
export function cardsFromJsonl(text: string, source: string, fill?: AuthoredCardFill): SkillCard[] {
  const out: SkillCard[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim().length === 0) return;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (err) {
      throw new Error(`${source}:${i + 1}: not valid JSON (${(err as Error).message})`);
    }
    const filled = fill && isAuthored(v) ? { ...v, stats: { retrieved: 0, helpful: 0, hurt: 0 }, createdStep: fill.createdStep, bankVersion: fill.bankVersion } : v;
    out.push(validateCard(filled, `${source}:${i + 1}`));
  });
  return out;
}

/**
 * The bank as its file holds it: a fresh copy with every object's keys in one fixed order (the schema's), so
 * the same content always gives the same bytes, whether a card was built in this process, primed from the seed
 * cards or read back from a file on --resume (docs/method.md, "The run folder, checkpoints and resume").
 */
export function serialize(d: BankFile): BankFile {
  const counters = zeroCounters();
  for (const k of Object.keys(counters) as Array<keyof BankCounters>) counters[k] = d.counters[k];
  return {
    format: d.format,
    formatVersion: d.formatVersion,
    version: d.version,
    embedder: { name: d.embedder.name, model: d.embedder.model, dim: d.embedder.dim, dedupThreshold: d.embedder.dedupThreshold },
    lastCommitStep: d.lastCommitStep,
    lastConsolidationStep: d.lastConsolidationStep,
    counters,
    cards: d.cards.map(canonicalCard),
    queue: d.queue.map(canonicalRecord),
  };
}

function canonicalCard(c: SkillCard): SkillCard {
  return {
    id: c.id,
    category: c.category,
    source: c.source,
    description: c.description,
    triggers: [...c.triggers],
    avoid: [...c.avoid],
    queries: [...c.queries],
    stats: { retrieved: c.stats.retrieved, helpful: c.stats.helpful, hurt: c.stats.hurt },
    createdStep: c.createdStep,
    bankVersion: c.bankVersion,
  };
}

function canonicalRecord(r: FailureRecord): FailureRecord {
  return {
    key: r.key,
    question: r.question,
    target: r.target,
    evidence: r.evidence,
    prediction: r.prediction,
    retrievedSkillIds: [...r.retrievedSkillIds],
    count: r.count,
    firstStep: r.firstStep,
    lastStep: r.lastStep,
  };
}

