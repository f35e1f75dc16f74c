// `sesa-train score`: teacher-forced log-prob of every token after the first, and the greedy next id.
import type { Argv, CommandModule } from 'yargs';
import { contextProblem } from '../model/context.js';
import { scoreBatch } from '../model/score.js';
import { type CommonArgs, emit, parseIdList, startBackend, withCommonOptions } from './common.js';
import { loadModelFromArgs, type ModelArgs, requireTokenizer, withModelOptions } from './model-args.js';
import { backendLabel } from '../tensor/backend.js';

interface ScoreArgs extends CommonArgs, ModelArgs {
  text?: string;
  ids?: string;
}

export const command: CommandModule<object, ScoreArgs> = {
  command: 'score',
  describe: 'teacher-forced log-probs of a text or of token ids',
  builder: (y: Argv) =>
    withModelOptions(withCommonOptions(y))
      .option('text', { type: 'string', describe: 'text to score (tokenized without special tokens)' })
      .option('ids', { type: 'string', describe: 'comma-separated token ids to score' })
      .conflicts('text', 'ids')
      .check((a) => {
        if (a.text === undefined && a.ids === undefined) throw new Error('give --text TEXT or --ids 1,2,3');
        return true;
      }) as unknown as Argv<ScoreArgs>,
  handler: async (args) => {
    const backend = await startBackend(args);
    const loaded = await loadModelFromArgs(args);
    const ids = args.ids !== undefined ? parseIdList('ids', args.ids) : requireTokenizer(loaded, '--text').encode(args.text as string, { addSpecialTokens: true });
    if (ids.length < 2) throw new Error(`scoring needs at least 2 tokens, got ${ids.length}`);
    const tooLong = contextProblem(args.ids !== undefined ? '--ids' : '--text', ids.length, loaded.model.config, loaded.resolved.dir);
    if (tooLong !== undefined) throw new Error(tooLong);
    const [r] = await scoreBatch(loaded.model, [ids], {
      ...(loaded.tokenizer ? { padTokenId: loaded.tokenizer.padTokenId } : {}),
      ...(loaded.adapter ? { adapter: loaded.adapter } : {}),
    });
    if (!r) throw new Error('scoring returned nothing');
    const total = r.logprobs.reduce((a, b) => a + b, 0);
    const tok = loaded.tokenizer;
    const lines = r.logprobs.map((lp, i) => {
      const id = ids[i + 1] as number;
      const piece = tok ? JSON.stringify(tok.decode([id])) : '';
      return `${String(i + 1).padStart(5)}  ${String(id).padStart(7)} ${piece.padEnd(16)} ${lp.toFixed(5)}   greedy ${r.greedyNext[i]}`;
    });
    emit(
      args,
      { model: loaded.resolved.dir, backend: backendLabel(backend), ids, logprobs: r.logprobs, greedyNext: r.greedyNext, totalLogprob: total, meanLogprob: total / r.logprobs.length },
      [...lines, `total log-prob ${total.toFixed(4)} over ${r.logprobs.length} tokens (mean ${(total / r.logprobs.length).toFixed(4)})`].join('\n'),
    );
    loaded.adapter?.dispose();
    loaded.model.dispose();
  },
};
