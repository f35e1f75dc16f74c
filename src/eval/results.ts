// Aggregating scored predictions (docs/evaluation.md): a row per dataset (EM, F1, judged accuracy when judged)
// plus the equal-weight average over datasets, as results.json and a results.md table.

/** The fields of a prediction record that aggregation reads (predictions.jsonl lines and --score inputs). */
export interface ScoredRecord {
  dataset: string;
  em: number;
  f1: number;
  judged?: boolean | null;
  prediction?: string | null;
  turns?: number;
  queries?: readonly string[];
}

export interface DatasetResult {
  dataset: string;
  questions: number;
  /** Means over the dataset's questions, in [0, 1]. */
  em: number;
  f1: number;
  /** Judged accuracy; null when no question was judged. */
  judged: number | null;
  /** Share of questions with a non-empty answer. */
  answered: number;
  meanTurns: number | null;
  meanQueries: number | null;
}

export interface EvalResults {
  datasets: DatasetResult[];
  /** Equal-weight mean of the dataset rows (the paper's average). */
  average: { em: number; f1: number; judged: number | null; datasets: number; questions: number };
}

const mean = (xs: readonly number[]): number => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);

export function aggregateResults(records: readonly ScoredRecord[]): EvalResults {
  const byDataset = new Map<string, ScoredRecord[]>();
  for (const r of records) {
    const list = byDataset.get(r.dataset) ?? [];
    list.push(r);
    byDataset.set(r.dataset, list);
  }
  const datasets = [...byDataset.entries()].map(([dataset, rs]): DatasetResult => {
    const judged = rs.filter((r) => r.judged !== undefined && r.judged !== null);
    const turns = rs.filter((r) => typeof r.turns === 'number').map((r) => r.turns as number);
    const queries = rs.filter((r) => Array.isArray(r.queries)).map((r) => (r.queries as string[]).length);
    return {
      dataset,
      questions: rs.length,
      em: mean(rs.map((r) => r.em)),
      f1: mean(rs.map((r) => r.f1)),
      judged: judged.length === 0 ? null : mean(judged.map((r) => (r.judged ? 1 : 0))),
      answered: mean(rs.map((r) => (typeof r.prediction === 'string' && r.prediction.trim() !== '' ? 1 : 0))),
      meanTurns: turns.length === 0 ? null : mean(turns),
      meanQueries: queries.length === 0 ? null : mean(queries),
    };
  });
  const judgedRows = datasets.filter((d) => d.judged !== null);
  return {
    datasets,
    average: {
      em: mean(datasets.map((d) => d.em)),
      f1: mean(datasets.map((d) => d.f1)),
      judged: judgedRows.length === datasets.length && datasets.length > 0 ? mean(judgedRows.map((d) => d.judged as number)) : null,
      datasets: datasets.length,
      questions: records.length,
    },
  };
}

const pct = (x: number | null): string => (x === null ? '–' : (100 * x).toFixed(1));

/** A Markdown table: a row per dataset and the equal-weight average, scores in percent. */
export function resultsMarkdown(results: EvalResults, title: string): string {
  const judged = results.datasets.some((d) => d.judged !== null);
  const head = ['dataset', 'questions', 'EM', 'F1', ...(judged ? ['judged'] : []), 'answered', 'turns', 'queries'];
  const lines = [`# ${title}`, '', `| ${head.join(' | ')} |`, `|${head.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`];
  for (const d of results.datasets) {
    lines.push(
      `| ${[d.dataset, String(d.questions), pct(d.em), pct(d.f1), ...(judged ? [pct(d.judged)] : []), pct(d.answered), d.meanTurns === null ? '–' : d.meanTurns.toFixed(2), d.meanQueries === null ? '–' : d.meanQueries.toFixed(2)].join(' | ')} |`,
    );
  }
  const a = results.average;
  lines.push(`| **average (${a.datasets} datasets, equal weight)** | ${a.questions} | **${pct(a.em)}** | **${pct(a.f1)}** | ${judged ? `**${pct(a.judged)}** | ` : ''} | | |`);
  lines.push('', 'Scores in percent. EM and F1 use FlashRAG normalization; see docs/evaluation.md.', '');
  return lines.join('\n');
}
