// Self-play costs on the wasm backend, for the tiny and the ~100M configurations:
// - rollout throughput (generated tokens/s) of the multi-turn engine without search turns (one turn) and with
//   search turns. A random model never writes `</search>` by itself, so the "with search" case wraps the
//   model in a bench harness (SearchTurnsPolicy, below) that lets the model generate each turn and then
//   appends a search call: every turn then pays generation, a BM25 search over the demo corpus, the spliced
//   observation and the re-prefill of the longer context, as a real search turn does.
// - one SESA step with the real components (BM25 demo corpus, lexical skill bank, in-process judge, GRPO
//   updates of both adapters), split by phase. With random weights every proposal is invalid, so the solve
//   and judge phases are near zero and the update trains the proposer only: the note says so.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTinyCheckpoint, type MakeTinyOptions } from '../src/checkpoint/make-tiny.js';
import { generateSyntheticCorpus } from '../src/corpus/synthetic/index.js';
import type { Generation, SessionRow } from '../src/model/generate.js';
import { LORA_DEFAULTS, LoraAdapter } from '../src/model/lora.js';
import { ModelPolicy, type Policy, type PolicyGenerateOptions, type PolicySession, replaySession } from '../src/model/policy.js';
import { CausalLM } from '../src/model/qwen3.js';
import { PolicyTextGenerator } from '../src/model/text-generator.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { AdamW } from '../src/rl/optimizer.js';
import { Bm25Index } from '../src/search/bm25-index.js';
import { parseContents } from '../src/search/corpus.js';
import { AnswerJudge } from '../src/agent/judge.js';
import { ProposerRole, SolverRole } from '../src/agent/roles.js';
import { type RolloutConfig, runRollouts } from '../src/agent/rollout.js';
import { TRAIN_DEFAULTS } from '../src/settings/train.js';
import { sesaStep } from '../src/selfplay/step.js';
import { stepSettingsOf } from '../src/selfplay/step-settings.js';
import { GrpoPolicyUpdater, type TrainedRole } from '../src/selfplay/updater.js';
import { SkillBank } from '../src/skills/bank.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { initBackend, tf } from '../src/tensor/backend.js';
import { isWasmAbort } from './run.js';
import type { BenchContext, BenchRow, BenchSuite } from './types.js';

/**
 * Bench harness: the model generates each turn, then a search call is appended until the last turn. It runs
 * on the inner policy's session, so the KV cache is kept across turns exactly as for a model that wrote the
 * call itself.
 */
export class SearchTurnsPolicy implements Policy {
  readonly name = 'search-turns-harness';
  generatedTokens = 0;
  constructor(
    private readonly inner: Policy,
    private readonly turns: number,
  ) {}
  renderChat = (m: Parameters<Policy['renderChat']>[0]): number[] => this.inner.renderChat(m);
  encode = (t: string): number[] => this.inner.encode(t);
  decode = (ids: readonly number[]): string => this.inner.decode(ids);
  generate(): Promise<Generation[]> {
    throw new Error('SearchTurnsPolicy runs through its session only');
  }
  openSession(): PolicySession {
    const inner = this.inner.openSession?.() ?? replaySession(this.inner);
    let calls = 0;
    return {
      generate: async (rows: readonly SessionRow[], opts: PolicyGenerateOptions): Promise<Generation[]> => {
        const turn = calls++;
        const tail = turn + 1 < this.turns ? ' <search> river town founded </search>' : ' <answer> Grimane </answer>';
        const extra = this.inner.encode(tail);
        // The appended action counts against the turn's budget, as the model's own tokens would.
        const budget = (r: SessionRow): number => Math.max(1, Math.min(opts.maxNewTokens, r.maxNewTokens ?? opts.maxNewTokens) - extra.length);
        const gens = await inner.generate(
          rows.map((r) => ({ ...r, maxNewTokens: budget(r) })),
          { ...opts, maxNewTokens: Math.max(...rows.map(budget)), stopStrings: [] },
        );
        return gens.map((g) => {
          this.generatedTokens += g.ids.length;
          return { ids: [...g.ids, ...extra], logprobs: [...g.logprobs, ...extra.map(() => 0)], finishReason: 'stop', stopString: turn + 1 < this.turns ? '</search>' : '</answer>' };
        });
      },
      release: (key) => inner.release(key),
      close: () => inner.close(),
    };
  }
}

/** The wasm heap's size: it only grows, so it is the high-water mark of the process so far. */
function wasmHeapBytes(): number {
  const backend = tf.backend() as unknown as { wasm?: { HEAPU8?: Uint8Array } };
  return backend.wasm?.HEAPU8?.buffer.byteLength ?? Number.NaN;
}

/**
 * Wraps an object so that every async method call records, under `label`, the largest live tensor bytes seen
 * at its end and the heap's high-water mark.
 */
function probed<T extends object>(obj: T, label: string, peaks: Map<string, { live: number; heap: number }>): T {
  return new Proxy(obj, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const out = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (!(out instanceof Promise)) return out;
        return out.then((r) => {
          const prev = peaks.get(label) ?? { live: 0, heap: 0 };
          peaks.set(label, { live: Math.max(prev.live, tf.memory().numBytes), heap: Math.max(prev.heap, wasmHeapBytes()) });
          return r;
        });
      };
    },
  });
}

interface Case {
  key: string;
  make: Omit<MakeTinyOptions, 'out'>;
  batch: number;
  tokensPerTurn: number;
  /** The measured step: seeds × proposals, turns and response budget (the ~100M one is kept small). */
  step: { seeds: number; proposals: number; turns: number; responseTokens: number; microBatch: number };
}

const CASES: Case[] = [
  { key: 'tiny', make: { arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, headDim: 16, intermediate: 128, vocab: 2000, seed: 1 }, batch: 8, tokensPerTurn: 32, step: { seeds: 2, proposals: 4, turns: 3, responseTokens: 512, microBatch: 4 } },
  { key: '100m', make: { arch: 'qwen3', layers: 12, hidden: 768, heads: 12, kvHeads: 4, headDim: 64, intermediate: 2048, vocab: 32000, seed: 2 }, batch: 4, tokensPerTurn: 16, step: { seeds: 2, proposals: 4, turns: 3, responseTokens: 192, microBatch: 4 } },
];

export const suite: BenchSuite = {
  name: 'selfplay',
  async run(ctx: BenchContext): Promise<BenchRow[]> {
    const rows: BenchRow[] = [];
    const root = mkdtempSync(join(tmpdir(), 'sesa-bench-selfplay-'));
    try {
      await initBackend('wasm');
      const synth = generateSyntheticCorpus({ seed: 0 });
      const searcher = await Bm25Index.fromPassages(
        synth.corpus.map((r) => ({ id: r.id, ...parseContents(r.contents) })),
        { cacheDir: null, warn: ctx.log },
        'demo corpus',
      );
      for (const c of CASES) {
        if (ctx.quick && c.key === '100m') continue;
        const dir = makeTinyCheckpoint({ ...c.make, out: join(root, c.key) }).dir;
        const model = await CausalLM.load(dir);
        const tokenizer = await loadTokenizer(dir);
        const policy = new ModelPolicy('solver', model, tokenizer, undefined);
        const requests = Array.from({ length: c.batch }, (_, i) => ({ id: `r${i}`, promptIds: policy.renderChat([{ role: 'user', content: `Question ${i}: which river flows past the town where the composer was born?` }]) }));
        const base: Omit<RolloutConfig, 'maxTurns'> = { maxTokensPerTurn: c.tokensPerTurn, maxResponseTokens: 4096, temperature: 1, passagesPerQuery: 3, finalTag: 'answer', seed: 1 };
        await runRollouts(policy, searcher, requests.slice(0, 2), { ...base, maxTurns: 1, maxTokensPerTurn: 4 }); // warm-up

        ctx.log(`selfplay: ${c.key} rollouts without search`);
        let t = performance.now();
        const plain = await runRollouts(policy, searcher, requests, { ...base, maxTurns: 1 });
        const plainTokens = plain.reduce((a, r) => a + r.responseMask.filter((m) => m === 1).length, 0);
        const plainRate = plainTokens / ((performance.now() - t) / 1000);
        rows.push({ case: `rollouts ${c.key} b${c.batch}, 1 turn`, engine: 'sesa/wasm', metric: 'generated', value: plainRate, unit: 'tok/s' });

        ctx.log(`selfplay: ${c.key} rollouts with 3 search turns`);
        const harness = new SearchTurnsPolicy(policy, 4);
        t = performance.now();
        const searched = await runRollouts(harness, searcher, requests, { ...base, maxTurns: 4 });
        const s = (performance.now() - t) / 1000;
        const queries = searched.reduce((a, r) => a + r.queries.length, 0);
        const searchedRate = harness.generatedTokens / s;
        rows.push({
          case: `rollouts ${c.key} b${c.batch}, 3 search turns + answer`,
          engine: 'sesa/wasm',
          metric: 'generated',
          value: searchedRate,
          unit: 'tok/s',
          notes: `${queries} searches, ${(searched.reduce((a, r) => a + r.responseIds.length, 0) / c.batch).toFixed(0)} response tokens per rollout incl. observations; model tokens only in the rate; the KV cache is kept across turns`,
        });
        rows.push({ case: `rollouts ${c.key} b${c.batch}`, engine: 'sesa/wasm', metric: '3 search turns / 1 turn', value: searchedRate / plainRate, unit: '×', notes: 'goal ≥ 0.6' });

        ctx.log(`selfplay: ${c.key} one SESA step`);
        const bank = await SkillBank.open(join(root, `${c.key}-skills.json`), { embedder: new LexicalEmbedder() });
        const adapters = {
          proposer: LoraAdapter.create('proposer', model.config, LORA_DEFAULTS, { seed: 1 }),
          solver: LoraAdapter.create('solver', model.config, LORA_DEFAULTS, { seed: 2 }),
        };
        const role = (a: LoraAdapter): TrainedRole => {
          const params = Object.fromEntries(a.variables());
          return { adapter: a, optimizer: new AdamW(params, { lr: 1e-5 }), params };
        };
        const roles = { proposer: role(adapters.proposer), solver: role(adapters.solver) };
        const settings = { maxTurns: c.step.turns, maxTokensPerTurn: c.tokensPerTurn, maxResponseTokens: c.step.responseTokens, temperature: 1, passagesPerQuery: 3 };
        const judgeText = new PolicyTextGenerator(new ModelPolicy('base', model, tokenizer, undefined));
        const stepCase = `sesa step ${c.key} (${c.step.seeds} seeds × ${c.step.proposals} proposals, ${c.step.turns} turns, G 5)`;
        const peaks = new Map<string, { live: number; heap: number }>();
        try {
          const step = await sesaStep(
            1,
            synth.seeds,
            {
              proposer: probed(new ProposerRole(new ModelPolicy('proposer', model, tokenizer, adapters.proposer), searcher, settings), 'propose', peaks),
              solver: probed(new SolverRole(new ModelPolicy('solver', model, tokenizer, adapters.solver), searcher, bank, settings), 'solve', peaks),
              skills: bank,
              judge: new AnswerJudge(judgeText),
              ragJudge: judgeText,
              // Layers recomputed in the backward and passes cut to a memory budget: the ~100M step fits the
              // 4 GiB wasm heap.
              updater: probed(
                new GrpoPolicyUpdater(model, roles, { microBatchSize: c.step.microBatch, padTokenId: tokenizer.padTokenId, memoryBudgetBytes: 1.5 * 2 ** 30 }),
                'update',
                peaks,
              ),
              distiller: judgeText,
            },
            stepSettingsOf({ ...TRAIN_DEFAULTS, seedsPerStep: c.step.seeds, proposalsPerSeed: c.step.proposals, groupSize: 5, seed: 0 }),
          );
          const sec = step.metrics.seconds;
          for (const phase of ['propose', 'validate', 'solve', 'judge', 'update', 'consolidate', 'total'] as const) {
            rows.push({
              case: stepCase,
              engine: 'sesa/wasm',
              metric: phase,
              value: sec[phase],
              unit: 's',
              ...(phase === 'total' ? { notes: `random weights: ${step.metrics.validQuestions} valid questions of ${step.metrics.proposals}, so solve/judge ≈ 0 and only the proposer is updated` } : {}),
            });
          }
          for (const [phase, p] of peaks) {
            rows.push({ case: stepCase, engine: 'sesa/wasm', metric: `${phase}: live tensors`, value: p.live / 2 ** 20, unit: 'MiB', notes: 'largest live tensor bytes at the end of a call of the phase' });
            rows.push({ case: stepCase, engine: 'sesa/wasm', metric: `${phase}: heap high-water`, value: p.heap / 2 ** 20, unit: 'MiB', notes: 'wasm heap size after the phase (it only grows: the peak of the process so far; the cap is 4096 MiB)' });
          }
        } catch (err) {
          // A planned refusal (MemoryBudgetError) is reported as a row and the suite goes on; a wasm abort
          // (out of heap) leaves the module dead, so it ends the suite (the runner reports it).
          if (isWasmAbort(err)) throw err;
          const msg = (err as Error).message.split('\n')[0] ?? String(err);
          ctx.log(`selfplay: ${stepCase} failed: ${msg}`);
          rows.push({ case: stepCase, engine: 'sesa/wasm', metric: 'failed', value: Number.NaN, unit: '', notes: `failed: ${msg}` });
        }
        for (const r of Object.values(roles)) {
          r.optimizer.dispose();
          r.adapter.dispose();
        }
        await bank.dispose();
        model.dispose();
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
    return rows;
  },
};
