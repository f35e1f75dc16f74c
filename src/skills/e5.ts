// The e5 embedder: @huggingface/transformers feature extraction on onnxruntime-node, with the E5
// conventions (docs/method.md, "The skill bank"): `query: ` / `passage: ` prefixes, mean pooling of
// last_hidden_state over the attention mask, L2 normalization (so cosine = dot product).
// Offline by default: remote downloads happen only when `allowRemote` is set explicitly.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { resolve, join } from 'node:path';
import type { EmbedKind, Embedder, EmbedderInfo } from './embedder.js';
import { DEDUP_THRESHOLDS } from './config.js';

export interface E5Options {
  /** A local model folder (config.json, tokenizer.json, tokenizer_config.json, onnx/model.onnx) or a HF name. */
  model: string;
  /** Allow downloading from the Hugging Face Hub (off unless asked). */
  allowRemote?: boolean;
  /** Download cache for HF names. */
  cacheDir?: string;
  /** Texts per forward pass. */
  batchSize?: number;
  /** ONNX file variant: fp32 loads onnx/model.onnx, q8 onnx/model_quantized.onnx. */
  dtype?: 'fp32' | 'fp16' | 'q8' | 'int8' | 'uint8' | 'q4';
  /** Overrides the recorded admission threshold (default 0.93, the paper's for E5-base-v2). */
  dedupThreshold?: number;
  /** onnxruntime intra-op threads (default: its own choice). */
  threads?: number;
}

export const E5_PREFIX: Record<EmbedKind, string> = { query: 'query: ', passage: 'passage: ' };

interface PoolingTensor {
  data: Float32Array;
  dims: number[];
}
type Extractor = ((texts: string[], opts: { pooling: 'mean'; normalize: boolean }) => Promise<PoolingTensor>) & {
  dispose?: () => Promise<void>;
};

export class E5Embedder implements Embedder {
  readonly info: EmbedderInfo;
  private constructor(
    info: EmbedderInfo,
    private readonly extractor: Extractor,
    private readonly batchSize: number,
  ) {
    this.info = info;
  }

  static async load(opts: E5Options): Promise<E5Embedder> {
    const local = isLocalFolder(opts.model);
    const ref = local ? resolve(opts.model) : opts.model;
    if (local) {
      for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json']) {
        if (!existsSync(join(ref, f))) throw new Error(`e5 model folder ${ref} lacks ${f}`);
      }
    } else if (opts.model.startsWith('.') || opts.model.startsWith('/')) {
      throw new Error(`e5 model folder ${ref} does not exist`);
    }
    const tf = await import('@huggingface/transformers');
    // env is global to the library: set it for this load only (offline unless the caller allowed downloads).
    tf.env.allowRemoteModels = opts.allowRemote === true;
    tf.env.allowLocalModels = true;
    if (opts.cacheDir) tf.env.cacheDir = opts.cacheDir;
    let extractor: Extractor;
    try {
      extractor = (await tf.pipeline('feature-extraction', ref, {
        device: 'cpu',
        dtype: opts.dtype ?? 'fp32',
        local_files_only: !opts.allowRemote,
        ...(opts.threads ? { session_options: { intraOpNumThreads: opts.threads, interOpNumThreads: 1 } } : {}),
      })) as unknown as Extractor;
    } catch (err) {
      if (local || opts.allowRemote) throw new Error(`e5 model ${ref}: ${(err as Error).message}`);
      // A Hugging Face name is usable offline only if it is already in the cache.
      throw new Error(
        `e5 model '${opts.model}' is not a local folder and is not in the cache (${tf.env.cacheDir}), and downloads are off; pass a folder, or allow the download explicitly (${(err as Error).message})`,
      );
    }
    // The dimension comes from the model itself, so a bank records the real one.
    const probe = await extractor([E5_PREFIX.query + 'probe'], { pooling: 'mean', normalize: true });
    const dim = probe.dims[probe.dims.length - 1] as number;
    const hidden = local ? readHiddenSize(ref) : undefined;
    if (hidden !== undefined && hidden !== dim) throw new Error(`e5 model ${ref}: config hidden_size ${hidden} but output dim ${dim}`);
    return new E5Embedder(
      { name: 'e5', model: ref, dim, dedupThreshold: opts.dedupThreshold ?? DEDUP_THRESHOLDS.e5 },
      extractor,
      opts.batchSize ?? 32,
    );
  }

  async embed(texts: string[], kind: EmbedKind): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.batchSize) {
      const batch = texts.slice(i, i + this.batchSize).map((t) => E5_PREFIX[kind] + t);
      const t = await this.extractor(batch, { pooling: 'mean', normalize: true });
      const dim = this.info.dim;
      for (let r = 0; r < batch.length; r++) out.push(Float32Array.from(t.data.subarray(r * dim, (r + 1) * dim)));
    }
    return out;
  }

  async dispose(): Promise<void> {
    await this.extractor.dispose?.();
  }
}

function isLocalFolder(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function readHiddenSize(dir: string): number | undefined {
  try {
    const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { hidden_size?: unknown };
    return typeof cfg.hidden_size === 'number' ? cfg.hidden_size : undefined;
  } catch {
    return undefined;
  }
}
