// `sesa-train skills init|list|show|search|stats|export|import --bank FILE`: what a skill bank holds,
// what a question would retrieve, and which cards help or hurt. No tensor backend is needed.
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { parseSavedConfig, TRAIN_DEFAULTS } from '../settings/train.js';
import type { Argv, CommandModule } from 'yargs';
import { writeFileAtomic } from '../util/atomic.js';
import type { BankFile } from '../skills/bank-file.js';
import type { BankStats } from '../skills/bank-stats.js';
import { SkillBank } from '../skills/bank.js';
import { bankStats } from '../skills/bank-stats.js';
import { authoredCards, cardsFromJsonl, cardsToJsonl, readBankFile } from '../skills/bank-file.js';
import type { SkillCard } from '../skills/card.js';
import { cardScore } from '../skills/card.js';
import { DEFAULT_SKILL_BANK_CONFIG } from '../skills/config.js';
import { E5Embedder } from '../skills/e5.js';
import type { Embedder } from '../skills/embedder.js';
import { LexicalEmbedder } from '../skills/lexical.js';
import { refuseRenamedFlags, type RenamedSettings } from '../settings/table.js';
import { type CommonArgs, emit, withCommonOptions } from './common.js';
import { readTextFile } from '../util/text-file.js';

export const SKILLS_ACTIONS = ['init', 'list', 'show', 'search', 'stats', 'export', 'import'] as const;
export type SkillsAction = (typeof SKILLS_ACTIONS)[number];
const SORTS = ['id', 'score', 'helpful', 'hurt', 'retrieved'] as const;

export interface SkillsArgs {
  action: SkillsAction;
  arg?: string;
  bank: string;
  json: boolean;
  embedder?: 'lexical' | 'e5';
  e5Model?: string;
  allowDownload: boolean;
  reembed: boolean;
  k: number;
  sort: (typeof SORTS)[number];
  source?: 'seed' | 'mined' | 'distilled';
  out?: string;
  replace: boolean;
  seedCards: boolean;
  renderTokenBudget?: number;
}

/**
 * Flags renamed: `--seeds` meant the seed cards, while train's `--seeds FILE` is an answer-seeds file; the seed
 * cards are `--seed-cards` here as in train. The old name is refused naming the new one.
 */
export const SKILLS_RENAMED: RenamedSettings = { seeds: 'seedCards' };
const SKILLS_RENAMED_WHY = "the hand-written seed cards, as train's --seed-cards; train's --seeds FILE is answer seeds";

// Typed loosely so it fits main.ts's `CommandModule` list; the handler recovers the parsed shape.
export const command: CommandModule = {
  command: 'skills <action> [arg]',
  describe: 'inspect or edit a skill bank: init, list, show ID, search "question", stats, export, import FILE',
  builder: (y: Argv) =>
    withCommonOptions(y)
      .positional('action', { choices: SKILLS_ACTIONS, describe: 'what to do' })
      .positional('arg', { type: 'string', describe: 'card id (show), question (search) or JSONL file (import)' })
      .option('bank', { type: 'string', demandOption: true, describe: 'the skill bank JSON file' })
      .option('embedder', { choices: ['lexical', 'e5'] as const, describe: 'embedder (default: the one the bank records; lexical for init)' })
      .option('e5-model', { type: 'string', describe: 'e5 model folder or Hugging Face name (default: the one the bank records)' })
      .option('allow-download', { type: 'boolean', default: false, describe: 'allow downloading the e5 model from the Hugging Face Hub' })
      .option('reembed', { type: 'boolean', default: false, describe: 'accept a bank recorded with another embedder and re-embed it' })
      .option('k', { type: 'number', default: DEFAULT_SKILL_BANK_CONFIG.topK, describe: 'cards to retrieve (search)' })
      .option('sort', { choices: SORTS, default: 'id' as const, describe: 'list order' })
      .option('source', { choices: ['seed', 'mined', 'distilled'] as const, describe: 'list only cards of this source' })
      .option('out', { type: 'string', describe: 'export: write JSONL here instead of stdout' })
      .option('replace', { type: 'boolean', default: false, describe: 'import: overwrite cards with the same id' })
      .option('render-token-budget', { type: 'number', describe: `search: tokens of rendered cards in the solver prompt block shown (default: the run's --render-token-budget when the bank is a run's, else ${TRAIN_DEFAULTS.renderTokenBudget})` })
      .option('seed-cards', { type: 'boolean', default: true, describe: 'init: start from the hand-written seed cards (--no-seed-cards for an empty bank)' })
      // The old name, hidden, so that using it is refused with the new name rather than taken as unknown.
      .option('seeds', { type: 'boolean', hidden: true })
      .check((a) => {
        refuseRenamedFlags(SKILLS_RENAMED, a, SKILLS_RENAMED_WHY);
        if ((a.action === 'show' || a.action === 'search' || a.action === 'import') && (a.arg === undefined || a.arg === '')) {
          throw new Error(`skills ${a.action} needs ${a.action === 'show' ? 'a card id' : a.action === 'search' ? 'a question' : 'a JSONL file'}`);
        }
        if (!Number.isInteger(a.k) || a.k < 1) throw new Error('--k must be a positive integer');
        const budget = a.renderTokenBudget as number | undefined;
        if (budget !== undefined && (!Number.isInteger(budget) || budget < 1)) throw new Error(`--render-token-budget must be a positive integer, got ${budget}`);
        return true;
      }),
  handler: async (argv) => {
    const args = argv as unknown as SkillsArgs & CommonArgs;
    const r = await runSkills(args);
    if (r.raw !== undefined && !args.json) process.stdout.write(r.raw);
    else emit(args, r.value, r.human);
  },
};

export interface SkillsResult {
  value: unknown;
  human: string;
  /** Output written as is (export to stdout). */
  raw?: string;
}

/** The command's work, separated from printing so tests can call it in-process. */
export async function runSkills(a: SkillsArgs): Promise<SkillsResult> {
  if (a.action !== 'init' && !existsSync(a.bank)) {
    throw new Error(`no skill bank at ${a.bank}; create one with \`sesa-train skills init --bank ${a.bank}\``);
  }
  switch (a.action) {
    case 'list': {
      const d = readBankFile(a.bank);
      const cards = sortCards(d.cards.filter((c) => a.source === undefined || c.source === a.source), a.sort);
      return { value: { version: d.version, cards: cards.map(cardRow) }, human: formatList(d, cards) };
    }
    case 'show': {
      const d = readBankFile(a.bank);
      const card = d.cards.find((c) => c.id === a.arg);
      if (!card) throw new Error(`no card '${a.arg}' in ${a.bank} (${d.cards.length} cards; \`skills list\` shows their ids)`);
      return { value: card, human: formatCard(card) };
    }
    case 'stats': {
      const s = bankStats(readBankFile(a.bank), a.bank, DEFAULT_SKILL_BANK_CONFIG.queueCapacity);
      return { value: s, human: formatStats(s) };
    }
    case 'export': {
      const d = readBankFile(a.bank);
      const jsonl = cardsToJsonl(d.cards);
      if (a.out) {
        writeFileAtomic(a.out, jsonl);
        return { value: { exported: d.cards.length, out: a.out, version: d.version }, human: `exported ${d.cards.length} cards (bank version ${d.version}) to ${a.out}` };
      }
      return { value: { cards: d.cards }, human: jsonl.trimEnd(), raw: jsonl };
    }
    case 'search': {
      const bank = await openBank(a, false, false);
      try {
        // A card that scores 0 shares nothing with the question: it is left out of the list and counted, so
        // the list holds only cards that matched (or says that none did).
        const retrieved = await bank.retrieve(a.arg as string, a.k);
        const hits = retrieved.filter((h) => h.score > 0);
        const unmatched = retrieved.length - hits.length;
        // The block as the run's solver would get it: within the run's card budget, not the bank's default.
        const budget = promptBudget(a);
        const rendered = bank.render(hits, { tokenBudget: budget.tokens });
        const value = { version: bank.version, question: a.arg, hits: hits.map((h) => ({ id: h.card.id, score: h.score, category: h.card.category, source: h.card.source })), unmatched, prompt: rendered.text, promptTokens: rendered.tokens, renderTokenBudget: budget.tokens };
        const lines = hits.map((h, i) => `${i + 1}. ${h.score.toFixed(4)}  ${h.card.id}  [${h.card.category}, ${h.card.source}]`);
        const head = `bank version ${bank.version}, embedder ${bank.embedderInfo.name}; top ${a.k} for: ${a.arg}`;
        if (hits.length === 0) return { value, human: [head, `no card matched: all ${bank.cards.length} cards score 0 for this question`].join('\n') };
        return {
          value,
          human: [head, ...lines, ...(unmatched > 0 ? [`(${unmatched} more of the top ${a.k} scored 0, matching nothing: left out)`] : []), '', `solver prompt block (~${rendered.tokens} tokens; card budget ${budget.tokens} tokens, ${budget.from}):`, rendered.text].join('\n'),
        };
      } finally {
        await bank.dispose();
      }
    }
    case 'import': {
      const file = a.arg as string;
      const text = readTextFile(file);
      const bank = await openBank(a, false);
      try {
        // Hand-written cards (no stats, createdStep, bankVersion) enter as new cards of this import's commit.
        const fill = { createdStep: bank.toFileData().lastCommitStep, bankVersion: bank.version + 1 };
        const cards = cardsFromJsonl(text, file, fill);
        const authored = authoredCards(text);
        const there = cards.filter((c) => bank.card(c.id) !== undefined).map((c) => c.id);
        if (!a.replace && there.length > 0) {
          throw new Error(`${file}: card${there.length === 1 ? '' : 's'} ${there.slice(0, 5).join(', ')}${there.length > 5 ? ', …' : ''} already in ${a.bank}: give --replace to overwrite ${there.length === 1 ? 'it' : 'them'}, or change the id${there.length === 1 ? '' : 's'}`);
        }
        const r = await bank.importCards(cards, { replace: a.replace });
        const note = authored > 0 ? `; ${authored} hand-written card${authored === 1 ? '' : 's'} (no stats, createdStep, bankVersion) entered with zero stats at step ${fill.createdStep}, bank version ${fill.bankVersion}` : '';
        return { value: { ...r, file, authored }, human: `imported ${cards.length} cards from ${file} (${r.added} new, ${r.replaced} replaced); bank version ${r.version}${note}` };
      } finally {
        await bank.dispose();
      }
    }
    case 'init': {
      const bank = await openBank(a, true);
      try {
        const i = bank.embedderInfo;
        return {
          value: { bank: a.bank, version: bank.version, cards: bank.cards.length, embedder: i },
          human: `created ${a.bank}: ${bank.cards.length} cards, embedder ${i.name} (${i.model}), dedup threshold ${i.dedupThreshold}`,
        };
      } finally {
        await bank.dispose();
      }
    }
  }
}

/**
 * The card budget of `skills search`'s prompt block, and where it comes from: --render-token-budget; else the
 * run's, when the bank is a run's (RUN/skills.json or RUN/checkpoints/step-N/skills.json beside RUN/config.json);
 * else the trainer's default for a real model.
 */
export function promptBudget(a: Pick<SkillsArgs, 'bank' | 'renderTokenBudget'>): { tokens: number; from: string } {
  if (a.renderTokenBudget !== undefined) return { tokens: a.renderTokenBudget, from: '--render-token-budget' };
  const bankDir = dirname(resolve(a.bank));
  const checkpoints = dirname(bankDir);
  const runDir = /^step-\d+$/.test(basename(bankDir)) && basename(checkpoints) === 'checkpoints' ? dirname(checkpoints) : bankDir;
  const configPath = join(runDir, 'config.json');
  if (existsSync(configPath)) {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(configPath, 'utf8'));
    } catch (err) {
      throw new Error(`${configPath}: not valid JSON (${(err as Error).message}); give --render-token-budget to search without it`);
    }
    return { tokens: parseSavedConfig(raw, configPath).renderTokenBudget, from: `the run's, ${configPath}` };
  }
  return { tokens: TRAIN_DEFAULTS.renderTokenBudget, from: 'the default for a real model; --render-token-budget sets another' };
}

/** Opens the bank; `lock` (default) holds its exclusive lock until dispose, for commands that write. */
async function openBank(a: SkillsArgs, create: boolean, lock = true): Promise<SkillBank> {
  let recorded: BankFile['embedder'] | undefined;
  try {
    recorded = readBankFile(a.bank).embedder;
    if (create) throw new Error(`${a.bank} already exists; init only creates new banks`);
  } catch (err) {
    if (!create || (err as Error).message.includes('already exists')) throw err;
  }
  const name = a.embedder ?? recorded?.name ?? 'lexical';
  let embedder: Embedder;
  if (name === 'lexical') {
    embedder = new LexicalEmbedder(recorded?.name === 'lexical' ? { dim: recorded.dim } : {});
  } else {
    const model = a.e5Model ?? (recorded?.name === 'e5' ? recorded.model : undefined);
    if (!model) throw new Error('the e5 embedder needs --e5-model FOLDER_OR_NAME');
    embedder = await E5Embedder.load({ model, allowRemote: a.allowDownload });
  }
  return SkillBank.open(a.bank, { embedder, create, seedCards: a.seedCards, reembed: a.reembed, lock, onStaleLock: (m) => process.stderr.write(`warning: ${m}\n`) });
}

function sortCards(cards: SkillCard[], by: SkillsArgs['sort']): SkillCard[] {
  const key = (c: SkillCard): number =>
    by === 'score' ? cardScore(c.stats) : by === 'helpful' ? c.stats.helpful : by === 'hurt' ? c.stats.hurt : by === 'retrieved' ? c.stats.retrieved : 0;
  return [...cards].sort((x, y) => key(y) - key(x) || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
}

function cardRow(c: SkillCard): Record<string, unknown> {
  return { id: c.id, source: c.source, category: c.category, ...c.stats, score: Math.round(cardScore(c.stats) * 1000) / 1000, createdStep: c.createdStep, description: c.description };
}

function formatList(d: BankFile, cards: SkillCard[]): string {
  const w = Math.max(4, ...cards.map((c) => c.id.length));
  const head = `${'id'.padEnd(w)}  source     category          retr  help  hurt   score  description`;
  const rows = cards.map((c) => {
    const desc = c.description.length > 60 ? `${c.description.slice(0, 59)}…` : c.description;
    return `${c.id.padEnd(w)}  ${c.source.padEnd(9)}  ${c.category.slice(0, 16).padEnd(16)}  ${pad(c.stats.retrieved)}  ${pad(c.stats.helpful)}  ${pad(c.stats.hurt)}  ${cardScore(c.stats).toFixed(3).padStart(6)}  ${desc}`;
  });
  return [`bank version ${d.version}: ${cards.length} of ${d.cards.length} cards`, head, ...rows].join('\n');
}

function pad(n: number): string {
  return String(n).padStart(4);
}

function formatCard(c: SkillCard): string {
  const list = (xs: string[]): string => (xs.length === 0 ? '  (none)' : xs.map((x) => `  - ${x}`).join('\n'));
  return [
    `${c.id}  [${c.category}, ${c.source}, created at step ${c.createdStep}, bank version ${c.bankVersion}]`,
    `stats: retrieved ${c.stats.retrieved}, helpful ${c.stats.helpful}, hurt ${c.stats.hurt}, score ${cardScore(c.stats).toFixed(3)}`,
    '',
    c.description,
    '',
    'triggers:',
    list(c.triggers),
    'avoid:',
    list(c.avoid),
    'query templates:',
    list(c.queries),
  ].join('\n');
}

export function formatStats(s: BankStats): string {
  const e = s.embedder;
  const row = (r: BankStats['mostHelpful'][number]): string => `  ${r.id}  net ${r.helpful - r.hurt >= 0 ? '+' : ''}${r.helpful - r.hurt} (helpful ${r.helpful}, hurt ${r.hurt}, retrieved ${r.retrieved}, score ${r.score})`;
  const c = s.counters;
  return [
    `skill bank ${s.file}`,
    `version ${s.version}; last commit at step ${s.lastCommitStep}; last consolidation started at step ${s.lastConsolidationStep ?? '-'}`,
    `embedder ${e.name} (${e.model}, dim ${e.dim}); dedup threshold ${e.dedupThreshold}`,
    `cards ${s.cards.total}: seed ${s.cards.seed}, mined ${s.cards.mined}, distilled ${s.cards.distilled}; never retrieved ${s.cards.neverRetrieved}`,
    `categories: ${Object.entries(s.categories).map(([k, v]) => `${k} ${v}`).join(', ')}`,
    `usage: retrieved ${s.usage.retrieved}, helpful ${s.usage.helpful}, hurt ${s.usage.hurt}`,
    'most helpful:',
    ...(s.mostHelpful.length > 0 ? s.mostHelpful.map(row) : ['  (none yet)']),
    'most hurtful:',
    ...(s.mostHurtful.length > 0 ? s.mostHurtful.map(row) : ['  (none)']),
    `failure queue: ${s.queue.pending} pending of ${s.queue.capacity} (${s.queue.repeated} repeated, ${s.queue.despiteSkills} despite skills)`,
    `lifetime: ${c.commits} commits, ${c.consolidations} consolidations; distilled ${c.distilled}, invalid ${c.invalid}, failed ${c.failed}; admitted ${c.admitted}, duplicates ${c.duplicates}; evicted ${c.evictedNegative} (negative utility) + ${c.evictedCap} (cap); imported ${c.imported}; queue drops ${c.queueDropped}`,
  ].join('\n');
}
