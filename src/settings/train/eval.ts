// The held-out evaluation group: the solver is evaluated, greedily and with skills on and off, at step 0, every
// K steps and at the end of the run (docs/evaluation.md).
import { bool, int, optionalStr } from '../setting.js';
import { renamedValueProblem } from '../table.js';
import { RENAMED_DATA, RENAMED_DATA_WHY } from './search.js';

export const EVAL_SETTINGS = {
  evalEvery: int(0, { min: 0, help: 'evaluate the solver on held-out questions every K steps (and at step 0 and the end); 0 = off' }),
  evalData: optionalStr({
    help: "held-out questions: a FlashRAG JSONL file, a benchmark name (found in $SESA_DATA), 'encyclopedia' (the embedded encyclopedia's), or with --corpus world: 'world' (the run's own world's held-out questions), 'training-worlds' (those of every world the run trains in, --training-worlds) or 'eval-worlds' (the evaluation worlds'), each world's in its own corpus (docs/world.md)",
    check: (v) => renamedValueProblem('eval-data', v, RENAMED_DATA, RENAMED_DATA_WHY),
  }),
  evalLimit: int(100, { help: 'held-out questions per evaluation (a seeded sample); per world with a world eval set' }),
  evalCache: bool(true, {
    help: 'reuse the step-0 held-out eval of an earlier run in the same parent folder whose eval inputs (program, model, adapter, bank, questions, search tools, eval settings, backend, machine) are identical, from <parent>/.held-out-cache (docs/evaluation.md, "The step-0 cache"); --no-eval-cache computes it',
  }),
  evalBatchSize: int(8, { help: 'held-out questions generated together (the same eval with another batch size may differ in the last bits of padding)' }),
};
