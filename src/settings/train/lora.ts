// The LoRA group: the two adapters' shape (docs/method.md, "Adapters").
import { PROJECTIONS } from '../../model/qwen3.js';
import { fixedForRun, int, list, num } from '../setting.js';

const SHAPE = fixedForRun("the run's adapters already have this shape");

export const LORA_SETTINGS = {
  loraR: int(16, { help: 'r, the LoRA rank', resume: SHAPE }),
  loraAlpha: num(32, { above: 0, help: 'α, the LoRA scale is α / r', resume: SHAPE }),
  loraDropout: num(0, { min: 0, below: 1, help: 'dropout on the LoRA input during updates (above 0 a resumed run no longer replays bit for bit)', resume: SHAPE }),
  loraTargets: list(PROJECTIONS, PROJECTIONS, { help: 'projections that get an adapter', resume: SHAPE }),
};
