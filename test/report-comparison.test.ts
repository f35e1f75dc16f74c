// The report (issue 48, finding 7): "modes compared" shows how many questions each eval scored; evals over
// different datasets are warned about and their averages labelled as each one's own, last on the chart's x
// axis; an update metric leaves a gap at a step without an update of that role instead of a straight line;
// the p̂ heat map's legend shows whole counts.
import { describe, expect, it } from 'vitest';
import { comparisonChart, pHatHeatmap, updateCharts } from '../src/report/charts.js';
import { renderReport } from '../src/report/html.js';
import type { EvalFolderData, RunData, StepRow } from '../src/report/run-data.js';

function folder(label: string, datasets: Array<[string, number, number]>): EvalFolderData {
  const ds = datasets.map(([dataset, questions, em]) => ({ dataset, questions, em, f1: em, judged: null, answered: 1, meanTurns: 2, meanQueries: 1 }));
  const average = { em: ds.reduce((a, d) => a + d.em, 0) / ds.length, f1: 0, judged: null, datasets: ds.length, questions: ds.reduce((a, d) => a + d.questions, 0) };
  return { dir: `/evals/${label}`, label, settings: { model: 'demo', adapter: null, skills: 'off' }, results: { datasets: ds, average } as EvalFolderData['results'] };
}

const emptyRun: RunData = { dir: '/runs/x', config: {}, steps: [], evals: [], cards: [] };

describe('modes compared', () => {
  it('each cell and each mode say how many questions they scored', () => {
    const { html } = renderReport({ run: emptyRun, evals: [folder('small', [['nq', 5, 0.2]]), folder('full', [['nq', 342, 0.3]])], generatedAt: 't' });
    const table = /<table data-table="eval-comparison">(.*?)<\/table>/s.exec(html)?.[1] ?? '';
    expect(table).toContain('<div class="sub">n = 5</div>');
    expect(table).toContain('<div class="sub">n = 342</div>');
    expect(table).toContain('5 questions in 1 dataset');
    expect(html).not.toContain('data-warning="datasets-differ"');
  });

  it('evals over different datasets: a warning, the average labelled as its own and put last on the x axis', () => {
    const evals = [folder('a', [['bamboogle', 10, 0.1], ['nq', 10, 0.2]]), folder('b', [['musique', 10, 0.3], ['nq', 10, 0.4]])];
    const { html } = renderReport({ run: emptyRun, evals, generatedAt: 't' });
    expect(html).toContain('data-warning="datasets-differ"');
    expect(html).toContain('the averages are not comparable');
    expect(html).toContain('<th class="num">average (of its own datasets)</th>');
    const svg = (comparisonChart(evals) as { svg: string }).svg;
    // The facets' labels, left to right: the datasets in order of first appearance, the averages last.
    const labels = svg.slice(svg.indexOf('aria-label="fx-axis tick label"'), svg.indexOf('aria-label="y-grid"'));
    const facets = [...labels.matchAll(/>([^<]+)<\/text>/g)].map((t) => t[1]);
    expect(facets).toEqual(['bamboogle', 'nq', 'musique', 'average (own datasets)']);
  });
});

describe('update charts', () => {
  it('a step without a solver update leaves a gap in the solver line, not a straight line across it', () => {
    const update = { loss: 0.1, kl: 0.1, clipFrac: 0.1, entropy: 1, gradNorm: 1, lr: 1e-3, tokensPerSecond: 1, sequences: 4 };
    const steps = [1, 2, 3].map((s) => ({ step: s, ...(s === 2 ? {} : { solver: { ...update, kl: 0.1 * s } }), proposer: update })) as unknown as StepRow[];
    const kl = updateCharts(steps).find((c) => c.id === 'update-kl') as { svg: string; caption: string };
    const lines = [...(/aria-label="line"[^>]*>(.*?)<\/g>/s.exec(kl.svg)?.[1] ?? '').matchAll(/<path d="([^"]*)" stroke="([^"]*)"/g)];
    const solver = lines.find((l) => l[2] === '#4e79a7')?.[1] as string;
    const proposer = lines.find((l) => l[2] === '#f28e2b')?.[1] as string;
    expect(solver).not.toContain('L');
    expect(proposer.match(/L/g)).toHaveLength(2);
    expect(kl.caption).toContain('A gap: no update of that role at that step.');
  });
});

describe('the p̂ heat map', () => {
  it('its legend shows whole numbers of questions', () => {
    const steps = [1, 2, 3].map((s) => ({ step: s, pHatHistogram: { '0.00': 1, '0.40': s, '1.00': 0 } })) as unknown as StepRow[];
    const svg = (pHatHeatmap(steps) as { svg: string }).svg;
    const legend = /class="[^"]*-ramp"(.*?)<\/svg>/s.exec(svg)?.[1] ?? '';
    const ticks = [...legend.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]).filter((t) => t !== 'questions');
    expect(ticks).toEqual(['1', '2', '3']);
    const many = [1, 2].map((s) => ({ step: s, pHatHistogram: { '0.40': 17 * s } })) as unknown as StepRow[];
    const manyTicks = [...(/class="[^"]*-ramp"(.*?)<\/svg>/s.exec((pHatHeatmap(many) as { svg: string }).svg)?.[1] ?? '').matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]).filter((t) => t !== 'questions');
    expect(manyTicks.length).toBeGreaterThan(1);
    expect(manyTicks.every((t) => /^\d+$/.test(t as string))).toBe(true);
  });
});
