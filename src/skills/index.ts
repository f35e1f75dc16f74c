// The skill bank's public surface (docs/method.md, "The skill bank"): what the trainer and the CLI import.
export { SkillBank, BankFileError, readBankFile, bankStats, cardsFromJsonl, cardsToJsonl, topKScored } from './bank.js';
export type { BankFile, BankStats, BankCounters, CommitReport, ConsolidationJob, OpenOptions, Outcome, Retrieval } from './bank.js';
export type { CardContent, SkillCard, SkillSource, SkillStats } from './card.js';
export { SkillSchemaError, cardEmbeddingText, cardScore, validateCard, validateContent } from './card.js';
export { DEFAULT_SKILL_BANK_CONFIG, DEDUP_THRESHOLDS, resolveConfig } from './config.js';
export type { SkillBankConfig } from './config.js';
export type { AdmissionDecision, Eviction, PendingChange } from './consolidate.js';
export { DISTILL_SYSTEM, distillationPrompt, parseDistilledCard } from './consolidate.js';
export type { EmbedKind, Embedder, EmbedderInfo } from './embedder.js';
export { E5Embedder } from './e5.js';
export type { E5Options } from './e5.js';
export { LexicalEmbedder } from './lexical.js';
export type { FailureInput, FailureRecord } from './queue.js';
export { approxTokens, renderCards } from './render.js';
export type { Rendered, RenderOptions, TokenCounter } from './render.js';
export { seedCards } from './seeds.js';
