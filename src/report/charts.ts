// The report's charts (docs/report.md), drawn by Observable Plot into a server-side DOM (linkedom) and kept as
// SVG markup, so the HTML file needs no script and no network to show them. Each function returns undefined
// when the run has nothing to draw for it, and the page says so in place of the chart.
import * as Plot from '@observablehq/plot';
import { parseHTML } from 'linkedom';
import type { EvalFolderData, EvalRow, StepRow } from './run-data.js';

export interface Chart {
  /** Stable id, used as the section's data-chart attribute. */
  id: string;
  title: string;
  /** One sentence on how to read it. */
  caption: string;
  /** The figure or SVG markup. */
  svg: string;
}

const { document } = parseHTML('<!doctype html><html><head></head><body></body></html>');

const WIDE = 980;
const NARROW = 470;
const FONT = 'system-ui, -apple-system, "Segoe UI", sans-serif';

function render(options: Plot.PlotOptions): string {
  const el = Plot.plot({ document, style: { fontFamily: FONT, fontSize: '11px', overflow: 'visible' }, ...options } as Plot.PlotOptions & { document: unknown });
  return (el as unknown as { outerHTML: string }).outerHTML;
}

/** A band x scale over steps, with at most ~15 labelled ticks. */
function stepBand(steps: readonly StepRow[]): Plot.ScaleOptions {
  const every = Math.max(1, Math.ceil(steps.length / 15));
  return { label: 'step', type: 'band', ticks: steps.filter((_, i) => i % every === 0).map((s) => s.step) };
}

/** A linear step axis: every step labelled when there are few, else Plot's own integer ticks. */
function stepAxis(points: ReadonlyArray<{ step: number }>): Plot.ScaleOptions {
  const steps = [...new Set(points.map((p) => p.step))].sort((a, b) => a - b);
  return { label: 'step', tickFormat: 'd', ...(steps.length <= 12 ? { ticks: steps } : { nice: true }) };
}

/**
 * A y domain (in the axis's units: percent for percent axes) that stays readable when every value is the same (Plot would collapse it to a point): padded
 * around the value, and starting at 0 when asked.
 */
function yDomain(values: readonly number[], opts: { zero?: boolean; minSpan?: number } = {}): [number, number] | undefined {
  if (values.length === 0) return undefined;
  let lo = Math.min(...values, ...(opts.zero ? [0] : []));
  let hi = Math.max(...values, ...(opts.zero ? [0] : []));
  const minSpan = opts.minSpan ?? 0;
  if (hi - lo < minSpan) hi = lo + minSpan;
  if (hi - lo < 1e-12) {
    const pad = Math.abs(lo) > 0 ? Math.abs(lo) * 0.5 : 1;
    lo = opts.zero && lo >= 0 ? 0 : lo - pad;
    hi += pad;
  }
  return [lo, hi];
}

const num = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);

interface Point {
  step: number;
  value: number;
  series: string;
}

function series(steps: readonly StepRow[], pick: Record<string, (s: StepRow) => unknown>): Point[] {
  const out: Point[] = [];
  for (const s of steps) {
    for (const [name, f] of Object.entries(pick)) {
      const v = f(s);
      if (num(v)) out.push({ step: s.step, value: v, series: name });
    }
  }
  return out;
}

/** The same thing has the same colour in every chart: the solver blue, the proposer orange. */
const FIXED_COLOURS: Record<string, string> = {
  solver: '#4e79a7', 'solver accuracy': '#4e79a7', 'solver mean reward': '#4e79a7',
  proposer: '#f28e2b', 'proposer mean reward': '#f28e2b', 'proposer: question valid': '#f28e2b', 'proposer: question extracted': '#edc948',
  'skills on': '#59a14f', 'skills off': '#9c755f',
  'cards in the bank': '#4e79a7', 'active (retrieved) cards': '#59a14f', 'pending failures': '#bab0ac',
};
const SPARE_COLOURS = ['#76b7b2', '#b07aa1', '#edc948', '#ff9da7', '#bab0ac'];

function colourScale(names: readonly string[]): { domain: string[]; range: string[] } {
  const domain = [...new Set(names)];
  let spare = 0;
  return { domain, range: domain.map((n) => FIXED_COLOURS[n] ?? (SPARE_COLOURS[spare++ % SPARE_COLOURS.length] as string)) };
}

function lineChart(points: Point[], opts: { y: string; width?: number; height?: number; percent?: boolean; domain?: [number, number]; zero?: boolean }): string {
  // NaN values are gaps (withGaps): the line breaks there; no dot, tip or domain takes them.
  const all = points;
  points = all.filter((p) => num(p.value));
  const many = new Set(points.map((p) => p.step)).size > 40;
  return render({
    width: opts.width ?? WIDE,
    height: opts.height ?? 260,
    marginLeft: 48,
    x: stepAxis(points),
    y: { label: opts.y, grid: true, ...(opts.percent ? { percent: true } : {}), domain: opts.domain ?? yDomain(points.map((p) => (opts.percent ? 100 : 1) * p.value), { zero: opts.zero === true }), nice: opts.domain === undefined },
    color: { legend: true, ...colourScale(points.map((p) => p.series)) },
    marks: [
      ...(opts.zero ? [Plot.ruleY([0], { stroke: '#bbb' })] : []),
      // z: one line per series, said explicitly: Plot infers it from the stroke and warns (a ⚠ in the chart)
      // when a short run gives as many series as points.
      Plot.line(all, { x: 'step', y: 'value', z: 'series', stroke: 'series', strokeWidth: 2 }),
      ...(many ? [] : [Plot.dot(points, { x: 'step', y: 'value', fill: 'series', r: 2.5 })]),
      Plot.tip(points, Plot.pointerX({ x: 'step', y: 'value', stroke: 'series', title: (d: Point) => `${d.series}\nstep ${d.step}: ${d.value.toPrecision(3)}` })),
    ],
  });
}

export function accuracyChart(steps: readonly StepRow[]): Chart | undefined {
  const points = series(steps, {
    'solver accuracy': (s) => s.solverAccuracy,
    'proposer: question extracted': (s) => s.extractionRate,
    'proposer: question valid': (s) => s.validityRate,
  });
  if (points.length === 0) return undefined;
  return {
    id: 'training-accuracy',
    title: 'Solver accuracy and proposer validity',
    caption: 'Per step: the share of solver rollouts judged correct on the proposer’s valid questions, and the share of proposals that yielded a question / a valid one.',
    svg: lineChart(points, { y: 'share (%)', percent: true, domain: [0, 100] }),
  };
}

export function heldOutChart(evals: readonly EvalRow[]): Chart | undefined {
  const em: Point[] = [];
  const f1: Point[] = [];
  for (const e of evals) {
    if (num(e.em)) em.push({ step: e.step, value: e.em, series: `skills ${e.skills}` });
    if (num(e.f1)) f1.push({ step: e.step, value: e.f1, series: `skills ${e.skills}` });
  }
  if (em.length === 0 && f1.length === 0) return undefined;
  const n = evals[0]?.questions;
  const all = [...em, ...f1];
  const few = new Set(all.map((p) => p.step)).size <= 40;
  return {
    id: 'held-out',
    title: 'Held-out evaluation during training',
    caption: `Greedy, one rollout per question${n ? ` on ${n} held-out questions` : ''}, with the skill bank on and off (docs/evaluation.md). Solid: exact match; dashed: token F1.`,
    svg: render({
      width: WIDE,
      height: 280,
      marginLeft: 48,
      x: stepAxis(all),
      y: { label: 'score (%)', percent: true, grid: true, domain: yDomain(all.map((p) => 100 * p.value), { zero: true, minSpan: 10 }), nice: true },
      color: { legend: true, ...colourScale(all.map((p) => p.series)) },
      marks: [
        Plot.line(em, { x: 'step', y: 'value', z: 'series', stroke: 'series', strokeWidth: 2.5 }),
        Plot.line(f1, { x: 'step', y: 'value', z: 'series', stroke: 'series', strokeWidth: 1.5, strokeDasharray: '5,4' }),
        ...(few ? [Plot.dot(em, { x: 'step', y: 'value', fill: 'series', r: 3.5 }), Plot.dot(f1, { x: 'step', y: 'value', stroke: 'series', fill: 'white', r: 3 })] : []),
        Plot.tip(all, Plot.pointer({ x: 'step', y: 'value', title: (d: Point) => `${d.series}, step ${d.step}\n${em.includes(d) ? 'EM' : 'F1'} ${(100 * d.value).toFixed(1)}%` })),
      ],
    }),
  };
}

export function invalidReasonsChart(steps: readonly StepRow[]): Chart | undefined {
  const rows: Array<{ step: number; reason: string; count: number }> = [];
  for (const s of steps) for (const [reason, count] of Object.entries(s.invalidReasons ?? {})) if (num(count) && count > 0) rows.push({ step: s.step, reason, count });
  if (rows.length === 0) return undefined;
  return {
    id: 'invalid-reasons',
    title: 'Why proposals were rejected',
    caption: 'Invalid proposals per step, by the first check they failed.',
    svg: render({
      width: WIDE,
      height: 240,
      marginLeft: 48,
      x: stepBand(steps),
      y: { label: 'proposals', grid: true },
      color: { legend: true, scheme: 'set2' },
      marks: [Plot.barY(rows, { x: 'step', y: 'count', fill: 'reason', tip: true }), Plot.ruleY([0])],
    }),
  };
}

/** The most colours of a count scale (more would not be told apart). */
const COUNT_COLOURS = 6;

/**
 * A colour scale for counts of questions whose legend shows whole numbers: thresholds at integers (1, 2, 3, …
 * or every k-th count for larger maxima), never a quantize scale's fractional bounds (0.6, 1.2, …).
 */
function countColour(counts: readonly number[]): Plot.ScaleOptions {
  const max = Math.max(1, ...counts);
  const every = Math.ceil(max / COUNT_COLOURS);
  const thresholds = Array.from({ length: Math.floor(max / every) }, (_, i) => (i + 1) * every);
  return { type: 'threshold', domain: thresholds, scheme: 'blues', legend: true, label: 'questions', tickFormat: 'd' };
}

export function pHatHeatmap(steps: readonly StepRow[]): Chart | undefined {
  const rows: Array<{ step: number; pHat: string; count: number }> = [];
  const bins = new Set<string>();
  for (const s of steps) {
    for (const [pHat, count] of Object.entries(s.pHatHistogram ?? {})) {
      if (!num(count)) continue;
      bins.add(pHat);
      rows.push({ step: s.step, pHat, count });
    }
  }
  if (rows.length === 0) return undefined;
  const showText = steps.length <= 40;
  return {
    id: 'p-hat-heatmap',
    title: 'Solver success rate p̂ of the valid questions',
    caption: 'Questions per step (column) and p̂ value (row). Mass in the middle rows means the proposer is finding the frontier; 0 and 1 are too hard and too easy.',
    svg: render({
      width: WIDE,
      height: 60 + 28 * bins.size,
      marginLeft: 48,
      padding: 0.04,
      x: stepBand(steps),
      y: { label: 'p̂', type: 'band', domain: [...bins].sort((a, b) => Number(b) - Number(a)) },
      color: countColour(rows.map((r) => r.count)),
      marks: [
        Plot.cell(rows, { x: 'step', y: 'pHat', fill: 'count', inset: 0.5, tip: true }),
        ...(showText ? [Plot.text(rows.filter((r) => r.count > 0), { x: 'step', y: 'pHat', text: 'count', fill: 'black', fontSize: 10 })] : []),
      ],
    }),
  };
}

export function rewardsChart(steps: readonly StepRow[]): Chart | undefined {
  const points = series(steps, { 'solver mean reward': (s) => s.solverMeanReward, 'proposer mean reward': (s) => s.proposerMeanReward });
  if (points.length === 0) return undefined;
  return {
    id: 'rewards',
    title: 'Rewards',
    caption: 'Mean reward per step: the solver’s (0/1 per rollout) and the proposer’s (frontier reward, −λ at p̂ ∈ {0, 1}, r_invalid for invalid proposals).',
    svg: lineChart(points, { y: 'reward', zero: true }),
  };
}

const UPDATE_METRICS: Array<{ key: 'kl' | 'clipFrac' | 'entropy' | 'gradNorm'; title: string; caption: string }> = [
  { key: 'kl', title: 'KL to the base model', caption: 'k3 estimate per token, adapters vs. the frozen base.' },
  { key: 'clipFrac', title: 'Clip fraction', caption: 'Share of trained tokens whose ratio was clipped.' },
  { key: 'entropy', title: 'Entropy', caption: 'Mean token entropy of the policy on its own rollouts.' },
  { key: 'gradNorm', title: 'Gradient norm', caption: 'Global norm before clipping (clipped at 1).' },
];

/**
 * The points of `series`, plus a gap (a NaN value, where Plot breaks a line) at each step where a series that
 * has values elsewhere has none: a role with no update at a step (no valid question, or every group uniform)
 * gets no line drawn across it.
 */
function withGaps(steps: readonly StepRow[], points: Point[]): Point[] {
  const out: Point[] = [];
  for (const name of new Set(points.map((p) => p.series))) {
    const own = new Map(points.filter((p) => p.series === name).map((p) => [p.step, p]));
    for (const s of steps) out.push(own.get(s.step) ?? { step: s.step, value: Number.NaN, series: name });
  }
  return out;
}

export function updateCharts(steps: readonly StepRow[]): Chart[] {
  const out: Chart[] = [];
  for (const m of UPDATE_METRICS) {
    const points = series(steps, { solver: (s) => s.solver?.[m.key], proposer: (s) => s.proposer?.[m.key] });
    if (points.length === 0) continue;
    const gaps = withGaps(steps, points);
    const caption = `${m.caption}${gaps.length > points.length ? ' A gap: no update of that role at that step.' : ''}`;
    out.push({ id: `update-${m.key}`, title: m.title, caption, svg: lineChart(gaps, { y: m.key, width: NARROW, height: 210, zero: m.key !== 'entropy' }) });
  }
  return out;
}

export function bankCharts(steps: readonly StepRow[]): Chart[] {
  const out: Chart[] = [];
  const sizes = series(steps, {
    'cards in the bank': (s) => s.bankSize,
    'cards retrieved at least once': (s) => s.activeCards,
    "cards retrieved for the step's questions": (s) => s.activeSkills,
    'pending failures': (s) => s.queueLength,
  });
  if (sizes.length > 0) {
    out.push({ id: 'bank-size', title: 'Skill bank size', caption: "Cards in the bank, those retrieved at least once (the paper's active skills), those retrieved for the step's questions, and the pending failure queue, per step.", svg: lineChart(sizes, { y: 'count', width: NARROW, height: 230, zero: true }) });
  }
  const changes: Array<{ step: number; change: string; count: number }> = [];
  for (const s of steps) {
    const c = s.consolidation?.committed;
    if (!c) continue;
    const evicted = Array.isArray(c.evicted) ? c.evicted.length : num(c.evicted) ? c.evicted : 0;
    if (num(c.admitted) && c.admitted > 0) changes.push({ step: s.step, change: 'admitted', count: c.admitted });
    if (evicted > 0) changes.push({ step: s.step, change: 'evicted', count: -evicted });
    if (num(c.duplicates) && c.duplicates > 0) changes.push({ step: s.step, change: 'rejected as duplicate', count: -c.duplicates });
  }
  if (changes.length > 0) {
    out.push({
      id: 'bank-changes',
      title: 'Consolidations',
      caption: 'Cards admitted (up) and evicted or rejected as duplicates (down) at each committed consolidation.',
      svg: render({
        width: NARROW,
        height: 230,
        marginLeft: 40,
        x: { label: 'step', type: 'band', tickFormat: 'd' },
        y: { label: 'cards', grid: true },
        color: { legend: true, domain: ['admitted', 'evicted', 'rejected as duplicate'], range: ['#59a14f', '#e15759', '#bab0ac'] },
        marks: [Plot.barY(changes, { x: 'step', y: 'count', fill: 'change', tip: true }), Plot.ruleY([0])],
      }),
    });
  }
  return out;
}

export function timingChart(steps: readonly StepRow[]): Chart | undefined {
  const rows: Array<{ step: number; phase: string; seconds: number }> = [];
  for (const s of steps) for (const [phase, sec] of Object.entries(s.seconds ?? {})) if (phase !== 'total' && num(sec)) rows.push({ step: s.step, phase, seconds: sec });
  if (rows.length === 0) return undefined;
  return {
    id: 'phase-timings',
    title: 'Where the time goes',
    caption: 'Seconds per step by phase.',
    svg: render({
      width: WIDE,
      height: 240,
      marginLeft: 48,
      x: stepBand(steps),
      y: { label: 'seconds', grid: true },
      color: { legend: true, scheme: 'tableau10' },
      marks: [Plot.barY(rows, { x: 'step', y: 'seconds', fill: 'phase', tip: true }), Plot.ruleY([0])],
    }),
  };
}

/** The x label of the averages' group: last, and said to be each mode's own when the modes' datasets differ. */
const AVERAGE = 'average';
const OWN_AVERAGE = 'average (own datasets)';

/** Whether the eval folders were run on different sets of datasets (their averages then differ in kind). */
export function datasetsDiffer(folders: readonly EvalFolderData[]): boolean {
  const key = (f: EvalFolderData): string => JSON.stringify(f.results.datasets.map((d) => d.dataset).sort());
  return folders.some((f) => key(f) !== key(folders[0] as EvalFolderData));
}

export function comparisonChart(folders: readonly EvalFolderData[]): Chart | undefined {
  const rows: Array<{ mode: string; dataset: string; em: number; questions: number }> = [];
  const differ = datasetsDiffer(folders);
  const average = differ ? OWN_AVERAGE : AVERAGE;
  for (const f of folders) {
    for (const d of f.results.datasets) rows.push({ mode: f.label, dataset: d.dataset, em: d.em, questions: d.questions });
    if (f.results.datasets.length > 1) rows.push({ mode: f.label, dataset: average, em: f.results.average.em, questions: f.results.average.questions });
  }
  if (rows.length === 0) return undefined;
  // Datasets in order of first appearance, the average group last (not between two modes' datasets).
  const datasets = [...new Set(rows.filter((r) => r.dataset !== average).map((r) => r.dataset)), ...(rows.some((r) => r.dataset === average) ? [average] : [])];
  return {
    id: 'eval-comparison',
    title: 'Exact match by dataset and mode',
    caption:
      'Each evaluation folder given with --eval is one mode (e.g. base, SSP, SESA-Off, SESA-On); the tip of a bar gives its questions.' +
      (differ ? ' The modes were evaluated on different datasets: each average is over its own, so the averages are not comparable.' : ''),
    svg: render({
      width: WIDE,
      height: 280,
      marginLeft: 48,
      marginBottom: 40,
      fx: { label: null, domain: datasets },
      x: { axis: null, domain: folders.map((f) => f.label) },
      y: { label: 'EM (%)', percent: true, grid: true, domain: yDomain(rows.map((r) => 100 * r.em), { zero: true, minSpan: 10 }), nice: true },
      color: { legend: true, domain: folders.map((f) => f.label), scheme: 'tableau10' },
      marks: [Plot.barY(rows, { fx: 'dataset', x: 'mode', y: 'em', fill: 'mode', title: (r: (typeof rows)[number]) => `${r.mode}, ${r.dataset}: EM ${(100 * r.em).toFixed(1)}% of ${r.questions} questions`, tip: true }), Plot.ruleY([0])],
    }),
  };
}

/**
 * The paper's Figure 3 at small scale (docs/report.md, docs/world.md): three curves over the steps of a run —
 * held-out exact match (the evals of --eval-every, skills on and off), the valid-question rate (the share of
 * proposals that became a valid question: SSP's extraction success) and the active cards (cards in the bank
 * retrieved at least once). Each is left out when the run has nothing for it.
 */
export function figure3Charts(steps: readonly StepRow[], evals: readonly EvalRow[]): Chart[] {
  const out: Chart[] = [];
  const em: Point[] = evals.flatMap((e) => (num(e.em) ? [{ step: e.step, value: e.em, series: `skills ${e.skills}` }] : []));
  if (em.length > 0) {
    out.push({
      id: 'figure3-held-out-em',
      title: 'Held-out exact match',
      caption: `Greedy EM on the held-out questions at each eval (--eval-every)${evals[0]?.questions ? `, ${evals[0].questions} questions` : ''}, with the bank and without.`,
      svg: lineChart(em, { y: 'EM (%)', percent: true, width: NARROW, height: 230, domain: yDomain(em.map((p) => 100 * p.value), { zero: true, minSpan: 10 }) }),
    });
  }
  const valid = series(steps, { 'valid questions': (s) => s.validityRate });
  if (valid.length > 0) {
    out.push({
      id: 'figure3-valid-rate',
      title: 'Valid-question rate',
      caption: 'Per step, the share of proposals that became a valid question (the rules and the RAG check): SSP’s extraction success.',
      svg: lineChart(valid, { y: 'valid (%)', percent: true, width: NARROW, height: 230, domain: [0, 100] }),
    });
  }
  const active = series(steps, { 'active cards': (s) => s.activeCards, 'cards in the bank': (s) => s.bankSize });
  if (active.some((p) => p.series === 'active cards')) {
    out.push({
      id: 'figure3-active-cards',
      title: 'Active cards',
      caption: 'Per step, the cards in the bank that have been retrieved at least once, beside the bank’s size.',
      svg: lineChart(active, { y: 'cards', width: NARROW, height: 230, zero: true }),
    });
  }
  return out;
}

const BATCH_KINDS: ReadonlyArray<[string, string]> = [
  ['valid this step', '#f28e2b'],
  ['reused from the pool', '#4e79a7'],
  ['resampled from the pool', '#76b7b2'],
  ['empty slot', '#d3d3d3'],
];

/** The solver batch chart's colour domain: every kind but resampling always, resampling where a row has it. */
function kindsDrawn(rows: ReadonlyArray<{ kind: string }>): { domain: string[]; range: string[] } {
  const kinds = BATCH_KINDS.filter(([kind]) => kind !== 'resampled from the pool' || rows.some((r) => r.kind === kind));
  return { domain: kinds.map(([k]) => k), range: kinds.map(([, c]) => c) };
}

/**
 * The solver batch per step (docs/method.md, "The solver batch and the reuse pool"): the step's valid questions,
 * the questions reused from the pool, those of resampling rounds (--min-informative-groups), and the slots left
 * empty (no valid question and nothing to reuse).
 */
export function solverBatchChart(steps: readonly StepRow[]): Chart | undefined {
  const rows: Array<{ step: number; kind: string; count: number }> = [];
  for (const s of steps) {
    if (!num(s.solverQuestions)) continue;
    const reused = num(s.reusedQuestions) ? s.reusedQuestions : 0;
    const resampled = num(s.resampledQuestions) ? s.resampledQuestions : 0;
    rows.push({ step: s.step, kind: 'valid this step', count: s.solverQuestions - reused - resampled });
    rows.push({ step: s.step, kind: 'reused from the pool', count: reused });
    if (resampled > 0) rows.push({ step: s.step, kind: 'resampled from the pool', count: resampled });
    if (num(s.emptySlots)) rows.push({ step: s.step, kind: 'empty slot', count: s.emptySlots });
  }
  if (rows.length === 0) return undefined;
  return {
    id: 'solver-batch',
    title: 'The solver batch',
    caption: 'Questions the solver got per step: this step’s valid questions, questions reused from the pool, questions of resampling rounds, and slots left empty.',
    svg: render({
      width: NARROW,
      height: 230,
      marginLeft: 40,
      x: stepBand(steps),
      y: { label: 'questions', grid: true },
      // Resampled questions only where the run resampled (--min-informative-groups).
      color: { legend: true, ...kindsDrawn(rows) },
      marks: [Plot.barY(rows, { x: 'step', y: 'count', fill: 'kind', tip: true }), Plot.ruleY([0])],
    }),
  };
}
