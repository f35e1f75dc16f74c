// What `sesa-train skills stats` prints of a bank file: card counts by source and category, utility, the most
// and least useful cards, the queue (src/cli/skills.ts).
import type { BankCounters, BankFile } from './bank-file.js';
import { cardScore, type SkillCard } from './card.js';
import type { EmbedderInfo } from './embedder.js';
import { priorityTier } from './queue.js';

export interface BankStats {
  file: string;
  version: number;
  embedder: EmbedderInfo;
  lastCommitStep: number;
  lastConsolidationStep: number | null;
  cards: { total: number; seed: number; mined: number; distilled: number; neverRetrieved: number };
  categories: Record<string, number>;
  usage: { retrieved: number; helpful: number; hurt: number };
  mostHelpful: Array<{ id: string; helpful: number; hurt: number; retrieved: number; score: number }>;
  mostHurtful: Array<{ id: string; helpful: number; hurt: number; retrieved: number; score: number }>;
  queue: { pending: number; repeated: number; despiteSkills: number; capacity: number };
  counters: BankCounters;
}

export function bankStats(d: BankFile, file: string, queueCapacity: number, top = 5): BankStats {
  const by = (s: SkillCard['source']): number => d.cards.filter((c) => c.source === s).length;
  // A Map: a category is any slug, `constructor` included.
  const categories = new Map<string, number>();
  for (const c of d.cards) categories.set(c.category, (categories.get(c.category) ?? 0) + 1);
  const row = (c: SkillCard): BankStats['mostHelpful'][number] => ({ id: c.id, helpful: c.stats.helpful, hurt: c.stats.hurt, retrieved: c.stats.retrieved, score: round(cardScore(c.stats)) });
  const used = d.cards.filter((c) => c.stats.retrieved > 0);
  const net = (c: SkillCard): number => c.stats.helpful - c.stats.hurt;
  const idCmp = (a: SkillCard, b: SkillCard): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  return {
    file,
    version: d.version,
    embedder: d.embedder,
    lastCommitStep: d.lastCommitStep,
    lastConsolidationStep: d.lastConsolidationStep,
    cards: { total: d.cards.length, seed: by('seed'), mined: by('mined'), distilled: by('distilled'), neverRetrieved: d.cards.length - used.length },
    categories: Object.fromEntries([...categories.entries()].sort(([a], [b]) => (a < b ? -1 : 1))),
    usage: {
      retrieved: d.cards.reduce((s, c) => s + c.stats.retrieved, 0),
      helpful: d.cards.reduce((s, c) => s + c.stats.helpful, 0),
      hurt: d.cards.reduce((s, c) => s + c.stats.hurt, 0),
    },
    mostHelpful: [...used].filter((c) => net(c) > 0).sort((a, b) => net(b) - net(a) || idCmp(a, b)).slice(0, top).map(row),
    mostHurtful: [...used].filter((c) => net(c) < 0).sort((a, b) => net(a) - net(b) || idCmp(a, b)).slice(0, top).map(row),
    queue: {
      pending: d.queue.length,
      repeated: d.queue.filter((r) => r.count >= 2).length,
      despiteSkills: d.queue.filter((r) => priorityTier(r) % 2 === 1).length,
      capacity: queueCapacity,
    },
    counters: d.counters,
  };
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}

