// `sesa-train lora-init`: write a fresh LoRA adapter (PEFT format) for a model.
import type { Argv, CommandModule } from 'yargs';
import { savePeftAdapter } from '../checkpoint/peft.js';
import { loadModelConfig } from '../model/config.js';
import { LORA_DEFAULTS, LoraAdapter } from '../model/lora.js';
import { PROJECTIONS, type ProjectionName } from '../model/qwen3.js';
import { peftBaseModel, resolveModelName } from '../checkpoint/model-name.js';
import { type CommonArgs, emit, startBackend, withCommonOptions } from './common.js';

interface LoraInitArgs extends CommonArgs {
  model: string;
  out: string;
  r: number;
  alpha: number;
  dropout: number;
  targets: string[];
  'random-b': boolean;
  seed: number;
}

export const command: CommandModule<object, LoraInitArgs> = {
  command: 'lora-init',
  describe: 'write a fresh LoRA adapter (PEFT format) for a model',
  builder: (y: Argv) =>
    withCommonOptions(y)
      .option('model', { type: 'string', demandOption: true, describe: 'model folder or name (only its config.json is read)' })
      .option('out', { type: 'string', demandOption: true, describe: 'adapter folder to write' })
      .option('r', { type: 'number', default: LORA_DEFAULTS.r, describe: 'LoRA rank' })
      .option('alpha', { type: 'number', default: LORA_DEFAULTS.alpha, describe: 'LoRA alpha (scale = alpha / r)' })
      .option('dropout', { type: 'number', default: LORA_DEFAULTS.dropout })
      .option('targets', { type: 'string', array: true, default: [...LORA_DEFAULTS.targets], choices: [...PROJECTIONS], describe: 'projections to adapt' })
      .option('random-b', { type: 'boolean', default: false, describe: 'non-zero B matrices (so the adapter changes outputs; for tests and checks)' })
      .option('seed', { type: 'number', default: 0 }) as unknown as Argv<LoraInitArgs>,
  handler: async (args) => {
    await startBackend(args);
    const resolved = await resolveModelName(args.model, { log: (line) => process.stderr.write(`${line}\n`) });
    const modelConfig = loadModelConfig(resolved.dir);
    const adapter = LoraAdapter.create(
      'adapter',
      modelConfig,
      { r: args.r, alpha: args.alpha, dropout: args.dropout, targets: args.targets as ProjectionName[] },
      { seed: args.seed, randomB: args['random-b'] },
    );
    await savePeftAdapter(adapter, args.out, { baseModel: peftBaseModel(resolved) });
    const params = adapter.parameterCount();
    adapter.dispose();
    emit(
      args,
      { out: args.out, r: args.r, alpha: args.alpha, targets: args.targets, randomB: args['random-b'], parameters: params },
      `wrote ${args.out} (PEFT LoRA, r=${args.r}, alpha=${args.alpha}, ${args.targets.length} target modules, ${params} parameters${args['random-b'] ? ', random B' : ''})`,
    );
  },
};
