// Memory priming beyond the seed cards (docs/method.md, "The skill bank"): a JSONL file of cards that a new
// bank starts with after the project's seed cards. A model can ship its own (`priming-cards.jsonl` in its
// folder; for the world, scripts/make-priming-cards.ts writes the shape cards its warm start's transcripts
// carried, docs/world.md); --priming-cards FILE names another.
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SkillBank } from '../skills/bank.js';
import { cardsFromJsonl } from '../skills/bank-file.js';
import { LexicalEmbedder } from '../skills/lexical.js';
import type { SkillCard } from '../skills/card.js';
import { readTextFile } from '../util/text-file.js';

/** The file name a model folder's own priming cards go under. */
export const MODEL_PRIMING_FILE = 'priming-cards.jsonl';

/**
 * What a new bank of a run is primed with (SkillBank.open's `seedCards` and `primingCards`): the seed cards and
 * the extra priming cards with --priming (the default), nothing with --no-priming.
 */
export function primedBankOptions(config: { priming: boolean; seedCards: boolean; primingCards?: string | undefined }, modelDir: string, log: (line: string) => void): { seedCards: boolean; primingCards: SkillCard[] } {
  return { seedCards: config.priming && config.seedCards, primingCards: config.priming ? loadPrimingCards(config.primingCards, modelDir, log, config.seedCards) : [] };
}

/**
 * Writes `path` afresh as the bank a new run starts with (lexical embedder, as the world run's), so that a
 * solver can be evaluated with the step-0 cards alone: base-On, or a trained solver without what its run distilled.
 */
export async function writePrimedBank(path: string, config: { priming: boolean; seedCards: boolean; primingCards?: string | undefined; renderTokenBudget: number }, modelDir: string, log: (line: string) => void): Promise<void> {
  rmSync(path, { force: true });
  await (await SkillBank.open(path, { embedder: new LexicalEmbedder(), ...primedBankOptions(config, modelDir, log), config: { renderTokenBudget: config.renderTokenBudget } })).dispose();
}

/**
 * The extra priming cards of a run: `file` when given (it must exist), else the model folder's
 * priming-cards.jsonl when it has one, else none. Says which in the log.
 */
export function loadPrimingCards(file: string | undefined, modelDir: string, log: (line: string) => void, seedCards = true): SkillCard[] {
  const path = file ?? join(modelDir, MODEL_PRIMING_FILE);
  if (!existsSync(path)) {
    if (file !== undefined) throw new Error(`--priming-cards ${file}: no such file`);
    log(seedCards ? 'memory priming: the seed cards' : 'memory priming: none (--no-seed-cards, and no priming cards): the bank starts empty');
    return [];
  }
  const cards = cardsFromJsonl(readTextFile(path), path);
  log(`memory priming: ${seedCards ? 'the seed cards and ' : ''}${cards.length} cards from ${path}${file === undefined ? " (the model folder's own)" : ''}`);
  return cards;
}
