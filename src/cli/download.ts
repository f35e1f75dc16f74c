// `sesa-train download NAME`: fetch a model into the standard Hugging Face cache, where `--model NAME` then
// finds it. Needs no tensor backend, so it does not start one.
import type { CommandModule } from 'yargs';
import { lookupModel, MODEL_REGISTRY } from '../../models/registry.js';
import { downloadModel, findCachedSnapshot, hubCacheDir, repoIdFor } from '../model/resolve.js';
import { type CommonArgs, emit, withCommonOptions } from './common.js';

interface DownloadArgs extends CommonArgs {
  name: string;
  revision: string;
  force: boolean;
}

export const command: CommandModule<object, DownloadArgs> = {
  command: 'download <name>',
  describe: 'Download a model (registry name or Hub repo id) into the Hugging Face cache',
  builder: (y) =>
    withCommonOptions(y)
      .positional('name', {
        type: 'string',
        demandOption: true,
        describe: `a registry name (${MODEL_REGISTRY.map((e) => e.name).join(', ')}) or a Hub repo id Org/Name`,
      })
      .option('revision', { type: 'string', default: 'main', describe: 'branch, tag or commit to fetch' })
      .option('force', { type: 'boolean', default: false, describe: 'fetch even when the cache already has a snapshot' })
      .epilog('Gated repos (Llama) need an accepted licence on huggingface.co and HF_TOKEN. The cache is HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub.'),
  handler: async (args) => {
    const repoId = repoIdFor(args.name);
    if (repoId === undefined) {
      throw new Error(`unknown model '${args.name}': use a registry name (${MODEL_REGISTRY.map((e) => e.name).join(', ')}) or a Hub repo id Org/Name`);
    }
    const cacheDir = hubCacheDir();
    const cached = args.force ? undefined : findCachedSnapshot(repoId, cacheDir, args.revision);
    const dir = cached ?? (await downloadModel(repoId, { cacheDir, revision: args.revision, ...(args.json ? { progress: () => {} } : {}) }));
    const entry = lookupModel(repoId);
    emit(
      args,
      { name: entry?.name ?? repoId, repoId, dir, source: cached ? 'hf-cache' : 'download' },
      cached ? `${repoId} is already in the cache: ${dir} (--force fetches again)` : `${repoId}: ${dir}`,
    );
  },
};
