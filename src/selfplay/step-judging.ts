// Who judges a step's answers (docs/method.md, "Judging answers" and "Validating questions"; docs/scale-out.md,
// "The step over N workers"): this process, or the worker that holds the seed. The step builds every item in
// global-index order (the RAG check's distractor blocks, drawn from the step's random stream, included) and
// reads the verdicts back in that order, so which process judged an item changes nothing.
import type { ChatMessage, TextGenerator } from '../llm/types.js';
import { type AnswerJudge, isEndpointFailure, type Judgement } from '../agent/judge.js';
import type { CallCounts } from './role-health.js';
import { lastTagContent } from '../agent/rollout.js';
import type { TaskPool } from './rollout-runner.js';
import { yieldToEventLoop } from '../util/yield.js';

/** One answer to judge against its gold answers. */
export interface JudgeItem {
  /** The step's seed index (the item is judged where the seed's rollouts ran). */
  shard: number;
  question: string;
  golds: string[];
  prediction: string | undefined;
}

/** One RAG check: a reader answers the question from the documents, and the answer is judged. */
export interface RagItem {
  shard: number;
  messages: ChatMessage[];
  question: string;
  golds: string[];
  /** The corpus the question was proposed in: its reader answers (docs/method.md, "Training corpora"); default 0. */
  corpus?: number;
}

/** The RAG reader of an item's corpus: one of `readers` by index, else `reader` (one reader for every corpus). */
export function readerOf(reader: TextGenerator, readers: readonly TextGenerator[] | undefined, corpus: number | undefined): TextGenerator {
  if (!readers) return reader;
  const r = readers[corpus ?? 0];
  if (!r) throw new Error(`a RAG check asks for corpus ${corpus ?? 0}, but there are ${readers.length} readers`);
  return r;
}

export interface StepJudging {
  /** Verdicts in item order. */
  judge(items: readonly JudgeItem[]): Promise<Judgement[]>;
  /** Whether each check's reader reached a gold answer, in item order; `maxTokens`: the reader's answer budget. */
  ragCheck(items: readonly RagItem[], maxTokens: number): Promise<boolean[]>;
}

/**
 * The RAG check of one item: the reader's <answer> (or its whole reply), judged against the golds. A reader
 * call that failed at its endpoint fails the check (counted as a failed call by the role watch).
 */
export async function ragVerdict(reader: TextGenerator, judge: AnswerJudge, item: RagItem, maxTokens: number): Promise<boolean> {
  let reply: string;
  try {
    reply = await reader.complete(item.messages, { maxTokens, temperature: 0 });
  } catch (err) {
    if (isEndpointFailure(err)) return false;
    throw err;
  }
  const answer = lastTagContent(reply, 'answer') ?? reply.trim();
  return (await judge.judge(item.question, item.golds, answer)).correct;
}

/**
 * Judging in this process, one item after another; an in-process judge computes synchronously, so signal
 * handlers (Ctrl-C) are let in before each item. `readers`: one RAG reader per corpus, where they differ.
 */
export function localJudging(judge: AnswerJudge, reader: TextGenerator, readers?: readonly TextGenerator[]): StepJudging {
  return {
    async judge(items) {
      const out: Judgement[] = [];
      for (const it of items) {
        await yieldToEventLoop();
        out.push(await judge.judge(it.question, it.golds, it.prediction));
      }
      return out;
    },
    async ragCheck(items, maxTokens) {
      const out: boolean[] = [];
      for (const it of items) {
        await yieldToEventLoop();
        out.push(await ragVerdict(readerOf(reader, readers, it.corpus), judge, it, maxTokens));
      }
      return out;
    },
  };
}

/** What a step worker is asked to judge (./step-worker.ts). */
export type JudgeTask = { kind: 'judge'; items: JudgeItem[] } | { kind: 'rag'; items: RagItem[]; maxTokens: number };

export interface JudgeTaskResult {
  verdicts: Judgement[] | boolean[];
  /** The worker's judge calls (an endpoint or its in-process model), to be counted with the trainer's. */
  calls: CallCounts;
  /** Replies with no verdict, counted by the worker's AnswerJudge. */
  unparsed: number;
}

/**
 * Items of seed k are judged by worker k mod N. The workers' call counts and unparsed replies are added to
 * this process's (`onCounts`), so metrics and the role watch see every call.
 */
export class ShardedJudging implements StepJudging {
  constructor(
    private readonly pool: TaskPool,
    private readonly onCounts: (calls: CallCounts, unparsed: number) => void,
  ) {}

  judge(items: readonly JudgeItem[]): Promise<Judgement[]> {
    return this.run(items, (mine) => ({ kind: 'judge', items: mine })) as Promise<Judgement[]>;
  }

  ragCheck(items: readonly RagItem[], maxTokens: number): Promise<boolean[]> {
    return this.run(items, (mine) => ({ kind: 'rag', items: mine, maxTokens })) as Promise<boolean[]>;
  }

  private async run<T extends { shard: number }>(items: readonly T[], task: (mine: T[]) => JudgeTask): Promise<Array<Judgement | boolean>> {
    if (items.length === 0) return [];
    const n = this.pool.size;
    const byRank: Array<Array<{ index: number; item: T }>> = Array.from({ length: n }, () => []);
    items.forEach((item, index) => {
      if (!Number.isInteger(item.shard) || item.shard < 0) throw new Error(`judging: an item without its seed index (shard ${item.shard})`);
      (byRank[item.shard % n] as Array<{ index: number; item: T }>).push({ index, item });
    });
    const results = await this.pool.tasks((rank) => task((byRank[rank] ?? []).map((x) => x.item)));
    const out: Array<Judgement | boolean> = new Array(items.length);
    results.forEach((raw, rank) => {
      const r = raw as JudgeTaskResult;
      const mine = byRank[rank] ?? [];
      if (!r || !Array.isArray(r.verdicts) || r.verdicts.length !== mine.length) {
        throw new Error(`judging: worker ${rank} returned ${Array.isArray(r?.verdicts) ? r.verdicts.length : 'no'} verdicts for ${mine.length} items`);
      }
      r.verdicts.forEach((v, k) => {
        out[(mine[k] as { index: number }).index] = v;
      });
      this.onCounts(r.calls, r.unparsed);
    });
    return out;
  }
}
