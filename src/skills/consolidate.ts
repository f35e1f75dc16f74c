// Consolidation (docs/method.md, "The skill bank"): the schedule, the distillation prompt, robust parsing of the distiller's
// JSON, admission by cosine against the bank and the same round, and maintenance (eviction and the cap).
// The pieces are pure functions; bank.ts runs them as one asynchronous job and commits the result.
import type { ChatMessage, TextGenerator } from '../llm/types.js';
import type { CardContent, SkillCard } from './card.js';
import { CARD_LIMITS, SkillSchemaError, cardEmbeddingText, cardScore, contentId, validateContent } from './card.js';
import type { SkillBankConfig } from './config.js';
import type { EmbeddingCache } from './embedder.js';
import { VectorIndex, dot } from './embedder.js';
import type { FailureRecord } from './queue.js';
import { renderCards } from './render.js';
import { yieldToEventLoop } from '../util/yield.js';

/** docs/method.md, "The skill bank": every `consolidateEvery` steps, when at least `minPending` records wait. */
export function consolidationDue(step: number, pending: number, cfg: SkillBankConfig): boolean {
  return step > 0 && step % cfg.consolidateEvery === 0 && pending >= cfg.minPending;
}

// ---------------------------------------------------------------------------------------------------------
// The distillation prompt (ours). It asks for what the retrieved guidance missed, as one JSON card.

export const DISTILL_SYSTEM = `You maintain a library of search strategies for a question-answering agent that uses a search tool.
You are shown one question the agent failed, with the correct answer, the agent's wrong answer, the searches it made, the passages it retrieved and the strategy cards it was given.
Write ONE new strategy card that would have prevented this failure on similar questions. Focus on what the given cards missed; do not restate them.
The card must be general: no names, dates or answers specific to this question; use placeholders like [person], [year], [place] in query templates.
Reply with a single JSON object and nothing else, with these fields:
{"category": "lowercase-slug such as disambiguation, decomposition, dates-numbers, aliases, verification, comparison, relations, search-strategy",
 "description": "one or two sentences: the strategy",
 "triggers": ["question cues that signal the strategy applies"],
 "avoid": ["the mistake to avoid"],
 "queries": ["query template with [placeholders]"]}`;

export function distillationPrompt(rec: FailureRecord, retrieved: readonly SkillCard[], cfg: SkillBankConfig): ChatMessage[] {
  const evidence = rec.evidence.length > cfg.distillEvidenceChars ? `${rec.evidence.slice(0, cfg.distillEvidenceChars)}…` : rec.evidence;
  const cards = retrieved.length > 0 ? renderCards(retrieved, { tokenBudget: 100_000, header: '' }).text.trim() : '(none)';
  const user = [
    `Question: ${rec.question}`,
    `Correct answer: ${rec.target}`,
    `Agent's answer: ${rec.prediction}`,
    rec.count > 1 ? `The agent failed this question ${rec.count} times.` : '',
    rec.queries !== undefined ? `Searches the agent made: ${rec.queries.length > 0 ? rec.queries.map((q) => JSON.stringify(q)).join(', ') : '(none)'}` : '',
    `Retrieved passages:\n${evidence || '(none)'}`,
    `Strategy cards the agent was given:\n${cards}`,
    'What did the given guidance miss? Reply with the JSON card only.',
  ]
    .filter((s) => s.length > 0)
    .join('\n\n');
  return [
    { role: 'system', content: DISTILL_SYSTEM },
    { role: 'user', content: user },
  ];
}

// ---------------------------------------------------------------------------------------------------------
// Parsing: models wrap JSON in prose, code fences or <think> blocks, use strings where lists are expected,
// or stop mid-object. Accept the first complete JSON object, coerce only what is unambiguous, validate the
// rest strictly; anything else is invalid and is dropped whole.

export type ParseResult = { ok: true; content: CardContent } | { ok: false; error: string };

export function parseDistilledCard(text: string): ParseResult {
  const cleaned = text.replace(/<think>[\s\S]*?<\/think>/g, '');
  const obj = firstJsonObject(cleaned);
  if (obj === undefined) return { ok: false, error: 'no complete JSON object in the reply' };
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return { ok: false, error: 'the JSON is not an object' };
  const o = obj as Record<string, unknown>;
  const content = {
    category: normCategory(o.category),
    description: typeof o.description === 'string' ? o.description.replace(/\s+/g, ' ').trim() : o.description,
    triggers: normList(o.triggers ?? o.trigger),
    avoid: normList(o.avoid ?? o.anti_patterns ?? []),
    queries: normList(o.queries ?? o.query_templates ?? []),
  };
  try {
    return { ok: true, content: validateContent(content, 'distilled card') };
  } catch (err) {
    return { ok: false, error: err instanceof SkillSchemaError ? err.problems.join('; ') : (err as Error).message };
  }
}

/** Scans for balanced {...} spans (string-aware) and returns the first that parses. */
export function firstJsonObject(text: string): unknown {
  for (let start = text.indexOf('{'); start >= 0; start = text.indexOf('{', start + 1)) {
    let depth = 0;
    let inStr = false;
    let esc = false;
    for (let i = start; i < text.length; i++) {
      const ch = text[i];
      if (inStr) {
        if (esc) esc = false;
        else if (ch === '\\') esc = true;
        else if (ch === '"') inStr = false;
        continue;
      }
      if (ch === '"') inStr = true;
      else if (ch === '{') depth++;
      else if (ch === '}') {
        depth--;
        if (depth === 0) {
          try {
            return JSON.parse(text.slice(start, i + 1));
          } catch {
            break;
          }
        }
      }
    }
  }
  return undefined;
}

function normCategory(v: unknown): unknown {
  if (typeof v !== 'string') return v === undefined ? 'general' : v;
  const slug = v.toLowerCase().trim().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40);
  return /^[a-z]/.test(slug) ? slug : 'general';
}

function normList(v: unknown): unknown {
  // A single string where a list is expected: split on semicolons or newlines, not commas (templates use them).
  const arr = typeof v === 'string' ? v.split(/[;\n]/) : v;
  if (!Array.isArray(arr)) return arr;
  const out: string[] = [];
  for (const x of arr) {
    if (typeof x !== 'string') return arr; // leave it for validation to reject
    const t = x.replace(/\s+/g, ' ').trim();
    if (t.length > 0 && !out.includes(t)) out.push(t.slice(0, CARD_LIMITS.itemMax));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Admission (docs/method.md, "The skill bank"; paper eq. 10): max cosine against bank ∪ admitted-this-round ≤ threshold.

export interface Candidate {
  /** The failure record it came from. */
  fromKey: string;
  content: CardContent;
  vector: Float32Array;
}

export interface AdmissionDecision {
  fromKey: string;
  content: CardContent;
  admitted: boolean;
  /** The highest cosine found, and against which card: a bank id, or `candidate:<fromKey>` for one admitted earlier this round. */
  maxCosine: number;
  nearest: string | null;
}

export function admit(
  candidates: readonly Candidate[],
  bank: ReadonlyArray<{ id: string; vector: Float32Array }>,
  threshold: number,
): AdmissionDecision[] {
  const index = new VectorIndex(bank.map((b) => b.vector), candidates[0]?.vector.length ?? bank[0]?.vector.length);
  const admittedSoFar: Array<{ id: string; vector: Float32Array }> = [];
  return candidates.map((c) => {
    let maxCosine = -Infinity;
    let nearest: string | null = null;
    if (bank.length > 0) {
      const s = index.scores(c.vector);
      for (let i = 0; i < s.length; i++) {
        if ((s[i] as number) > maxCosine) {
          maxCosine = s[i] as number;
          nearest = (bank[i] as { id: string }).id;
        }
      }
    }
    for (const b of admittedSoFar) {
      const s = dot(c.vector, b.vector);
      if (s > maxCosine) {
        maxCosine = s;
        nearest = b.id;
      }
    }
    const ok = maxCosine <= threshold;
    if (ok) admittedSoFar.push({ id: `candidate:${c.fromKey}`, vector: c.vector });
    return { fromKey: c.fromKey, content: c.content, admitted: ok, maxCosine: nearest === null ? 0 : maxCosine, nearest };
  });
}

// ---------------------------------------------------------------------------------------------------------
// Maintenance (docs/method.md, "The skill bank"): evict negative-utility non-seed cards, then enforce the cap.

export interface Eviction {
  id: string;
  reason: 'negative-utility' | 'over-cap';
}

export function maintain(cards: readonly SkillCard[], cfg: SkillBankConfig): { kept: SkillCard[]; evicted: Eviction[] } {
  const evicted: Eviction[] = [];
  let kept = cards.filter((c) => {
    const bad = c.source !== 'seed' && c.stats.retrieved >= cfg.evictMinRetrieved && c.stats.helpful - c.stats.hurt < 0;
    if (bad) evicted.push({ id: c.id, reason: 'negative-utility' });
    return !bad;
  });
  const over = kept.length - cfg.maxCards;
  if (over > 0) {
    // Lowest score first (card.ts cardScore); among equals, the most-retrieved (proven neutral) before the
    // unproven, then the oldest, then by id (ours).
    const order = kept
      .filter((c) => c.source !== 'seed')
      .sort((a, b) => cardScore(a.stats) - cardScore(b.stats) || b.stats.retrieved - a.stats.retrieved || a.createdStep - b.createdStep || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const gone = new Set(order.slice(0, over).map((c) => c.id));
    for (const c of order.slice(0, over)) evicted.push({ id: c.id, reason: 'over-cap' });
    kept = kept.filter((c) => !gone.has(c.id));
  }
  return { kept, evicted };
}

// ---------------------------------------------------------------------------------------------------------
// The job: distill each selected failure, embed the valid candidates, decide admission against a snapshot.

export type DistillOutcome =
  | { fromKey: string; status: 'candidate'; content: CardContent }
  | { fromKey: string; status: 'invalid'; error: string; reply: string }
  | { fromKey: string; status: 'failed'; error: string };

export interface PendingChange {
  /** The step at which the job started. */
  startedStep: number;
  /** The bank's card revision the admission was computed against (re-checked at commit). */
  baseRevision: number;
  selectedKeys: string[];
  /** Records whose distillation produced a reply (valid or not) leave the queue at commit; endpoint failures stay. */
  consumedKeys: string[];
  outcomes: DistillOutcome[];
  candidates: Candidate[];
  decisions: AdmissionDecision[];
}

export interface ConsolidationInput {
  step: number;
  baseRevision: number;
  selected: FailureRecord[];
  /** The committed cards at the start, with their vectors. */
  bank: ReadonlyArray<{ card: SkillCard; vector: Float32Array }>;
  cache: EmbeddingCache;
  distiller: TextGenerator;
  threshold: number;
  cfg: SkillBankConfig;
}

export async function runConsolidation(inp: ConsolidationInput): Promise<PendingChange> {
  const byId = new Map(inp.bank.map((b) => [b.card.id, b.card]));
  const outcomes: DistillOutcome[] = new Array(inp.selected.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < inp.selected.length) {
      const i = next++;
      const rec = inp.selected[i] as FailureRecord;
      const retrieved = rec.retrievedSkillIds.map((id) => byId.get(id)).filter((c): c is SkillCard => c !== undefined);
      let reply: string;
      // An in-process distiller computes synchronously: let signal handlers (Ctrl-C) in before each call.
      await yieldToEventLoop();
      try {
        reply = await inp.distiller.complete(distillationPrompt(rec, retrieved, inp.cfg), { maxTokens: inp.cfg.distillMaxTokens, temperature: 0 });
      } catch (err) {
        outcomes[i] = { fromKey: rec.key, status: 'failed', error: (err as Error).message };
        continue;
      }
      const parsed = parseDistilledCard(reply);
      outcomes[i] = parsed.ok
        ? { fromKey: rec.key, status: 'candidate', content: parsed.content }
        : { fromKey: rec.key, status: 'invalid', error: parsed.error, reply: reply.slice(0, 500) };
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(inp.cfg.distillConcurrency, inp.selected.length)) }, worker));

  // Candidates keep the selection order, whatever order the distiller answered in: admission is deterministic.
  const valid = outcomes.filter((o): o is Extract<DistillOutcome, { status: 'candidate' }> => o.status === 'candidate');
  const vectors = await inp.cache.get(valid.map((o) => cardEmbeddingText(o.content)), 'query');
  const candidates: Candidate[] = valid.map((o, i) => ({ fromKey: o.fromKey, content: o.content, vector: vectors[i] as Float32Array }));
  const decisions = admit(candidates, inp.bank.map((b) => ({ id: b.card.id, vector: b.vector })), inp.threshold);
  return {
    startedStep: inp.step,
    baseRevision: inp.baseRevision,
    selectedKeys: inp.selected.map((r) => r.key),
    consumedKeys: outcomes.filter((o) => o.status !== 'failed').map((o) => o.fromKey),
    outcomes,
    candidates,
    decisions,
  };
}

export function distilledCardId(content: CardContent, taken: ReadonlySet<string>): string {
  const base = contentId('d', content);
  let id = base;
  for (let n = 2; taken.has(id); n++) id = `${base}-${n}`;
  return id;
}
