// `sesa-train report RUN_DIR [--eval DIR ...] [--out report.html]`: one self-contained HTML page with the run's
// learning curves, GRPO and skill-bank charts, the most helpful and hurtful cards, and a comparison of
// evaluation folders (docs/report.md).
import { join } from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import { writeFileAtomic } from '../util/atomic.js';
import { renderReport } from '../report/html.js';
import { readEvalFolder, readRun } from '../report/run-data.js';
import { emit } from './common.js';

interface ReportArgs {
  run: string;
  eval?: string[];
  out?: string;
  json: boolean;
}

export const command: CommandModule<object, ReportArgs> = {
  command: 'report <run>',
  describe: 'a self-contained HTML report of a training run (and of eval folders, compared)',
  builder: (y: Argv) =>
    y
      .positional('run', { type: 'string', demandOption: true, describe: 'the run folder' })
      .option('eval', { type: 'string', array: true, describe: 'eval output folders to compare (one mode each)' })
      .option('out', { type: 'string', describe: 'the HTML file to write (default RUN/report.html)' })
      .option('json', { type: 'boolean', default: false, describe: 'print one JSON object for scripts' }) as unknown as Argv<ReportArgs>,
  handler: (args) => {
    const run = readRun(args.run);
    const evals = (args.eval ?? []).map(readEvalFolder);
    const { html, chartIds } = renderReport({ run, evals, generatedAt: new Date().toISOString() });
    const out = args.out ?? join(args.run, 'report.html');
    writeFileAtomic(out, html);
    emit(
      args,
      { out, charts: chartIds, steps: run.steps.length, evalRows: run.evals.length, evalFolders: evals.length, bytes: Buffer.byteLength(html) },
      `wrote ${out}: ${chartIds.length} charts, ${run.steps.length} steps${run.steps.length === 0 ? ' (no metrics yet)' : ''}${evals.length > 0 ? `, ${evals.length} eval folders compared` : ''}`,
    );
  },
};
