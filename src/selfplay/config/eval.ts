// The held-out evaluation group: the solver is evaluated, greedily and with skills on and off, at step 0, every
// K steps and at the end of the run (docs/evaluation.md).
import { int, optionalStr } from './setting.js';

export const EVAL_SETTINGS = {
  evalEvery: int(0, { min: 0, help: 'evaluate the solver on held-out questions every K steps (and at step 0 and the end); 0 = off' }),
  evalData: optionalStr({ help: 'held-out questions: a FlashRAG JSONL file, a benchmark name (found in $SESA_DATA) or demo' }),
  evalLimit: int(100, { help: 'held-out questions per evaluation (a seeded sample)' }),
};
