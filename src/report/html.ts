// The report page (docs/report.md): one self-contained HTML file — inline CSS, charts as inline SVG, no script
// and no network — built from a run folder and optional eval folders.
import { cardScore, type SkillCard } from '../skills/card.js';
import {
  accuracyChart, bankCharts, type Chart, comparisonChart, datasetsDiffer, figure3Charts, heldOutChart, invalidReasonsChart, pHatHeatmap, rewardsChart, solverBatchChart, timingChart, updateCharts,
} from './charts.js';
import type { EvalFolderData, EvalRow, RunData, StepRow } from './run-data.js';
import { halves, type Pooled, pooledSolverAccuracy, pooledValid } from './pooled.js';
import { redactUrl } from '../util/redact.js';

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

const pct = (x: number | null | undefined): string => (typeof x === 'number' && Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : '–');

const CSS = `
:root { --ink: #1d2330; --muted: #5d6677; --line: #e3e6ec; --bg: #f6f7f9; --card: #fff; --accent: #2f6fde; --good: #2e8b57; --bad: #c0392b; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: var(--bg); }
main { max-width: 1120px; margin: 0 auto; padding: 28px 28px 60px; }
header h1 { font-size: 24px; margin: 0 0 4px; }
header p { margin: 0; color: var(--muted); }
h2 { font-size: 18px; margin: 36px 0 12px; padding-bottom: 6px; border-bottom: 1px solid var(--line); }
.kpis { display: grid; grid-template-columns: repeat(auto-fit, minmax(165px, 1fr)); gap: 12px; margin-top: 20px; }
.kpi { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 12px 14px; }
.kpi .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.kpi .value { font-size: 18px; font-weight: 600; margin-top: 2px; white-space: nowrap; }
.kpi .sub { color: var(--muted); font-size: 12px; }
.up { color: var(--good); } .down { color: var(--bad); }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(380px, 1fr)); gap: 14px; }
section.chart { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px 10px; margin-bottom: 14px; overflow-x: auto; }
section.chart h3 { font-size: 15px; margin: 0 0 2px; }
section.chart p.caption { margin: 0 0 10px; color: var(--muted); font-size: 12.5px; }
section.chart figure { margin: 0; }
p.empty, p.note { color: var(--muted); background: var(--card); border: 1px dashed var(--line); border-radius: 10px; padding: 14px 16px; }
table { border-collapse: collapse; width: 100%; background: var(--card); border: 1px solid var(--line); border-radius: 10px; overflow: hidden; font-size: 13px; }
th, td { padding: 7px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: #eef1f6; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.avg td { font-weight: 600; background: #f8fafc; }
.wide { overflow-x: auto; border-radius: 10px; }
td.mode .what { font-size: 11px; color: var(--muted); font-weight: normal; white-space: nowrap; }
.sub { color: var(--muted); font-size: 11.5px; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; background: #eef1f6; padding: 1px 4px; border-radius: 4px; }
details { margin-top: 10px; } summary { cursor: pointer; color: var(--muted); }
pre { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px; overflow-x: auto; font-size: 12px; }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; }
`;

function chartSection(c: Chart): string {
  return `<section class="chart" data-chart="${escapeHtml(c.id)}"><h3>${escapeHtml(c.title)}</h3><p class="caption">${escapeHtml(c.caption)}</p>${c.svg}</section>`;
}

function kpi(label: string, value: string, sub = '', cls = ''): string {
  return `<div class="kpi"><div class="label">${escapeHtml(label)}</div><div class="value ${cls}">${value}</div><div class="sub">${sub}</div></div>`;
}

function arrow(from: number | undefined, to: number | undefined): { text: string; cls: string } {
  if (from === undefined || to === undefined) return { text: to === undefined ? '–' : pct(to), cls: '' };
  const cls = to > from ? 'up' : to < from ? 'down' : '';
  return { text: `${pct(from)} → ${pct(to)}`, cls };
}

function kpis(run: RunData): string {
  const steps = run.steps;
  const first = steps[0];
  const last = steps[steps.length - 1];
  const out: string[] = [];
  out.push(kpi('steps', last ? String(last.step) : '0', first ? `from step ${first.step}` : 'none yet'));
  // Pooled over each half of the run (./pooled.ts): most single steps of a small run have no valid question.
  const [early, late] = halves(steps);
  const pooledKpi = (label: string, pool: (s: readonly StepRow[]) => Pooled | undefined): string => {
    const a = pool(early);
    const b = pool(late);
    if (a !== undefined && b !== undefined) return kpi(label, arrow(a.rate, b.rate).text, `pooled, first half → second half (${a.count} of ${a.of} → ${b.count} of ${b.of})`, arrow(a.rate, b.rate).cls);
    const all = pool(steps);
    return kpi(label, all === undefined ? '–' : pct(all.rate), all === undefined ? '' : `pooled over the steps (${all.count} of ${all.of})`);
  };
  out.push(pooledKpi('solver accuracy (training)', pooledSolverAccuracy));
  out.push(pooledKpi('valid proposals', pooledValid));
  for (const mode of ['on', 'off'] as const) {
    const rows = run.evals.filter((e) => e.skills === mode);
    if (rows.length === 0) continue;
    const a = arrow(rows[0]?.em, rows[rows.length - 1]?.em);
    out.push(kpi(`held-out EM, skills ${mode}`, a.text, `step ${rows[0]?.step} → ${rows[rows.length - 1]?.step}`, a.cls));
  }
  if (first?.bankSize !== undefined || last?.bankSize !== undefined) out.push(kpi('skill bank', `${first?.bankSize ?? '–'} → ${last?.bankSize ?? '–'}`, 'cards, first → last step'));
  return `<div class="kpis">${out.join('')}</div>`;
}

function cardRows(cards: readonly SkillCard[]): string {
  return cards
    .map((c) => {
      const desc = c.description.length > 180 ? `${c.description.slice(0, 177)}…` : c.description;
      return `<tr><td><code>${escapeHtml(c.id)}</code><br><span class="sub">${escapeHtml(c.source)} · ${escapeHtml(c.category)}</span></td><td>${escapeHtml(desc)}</td><td class="num">${c.stats.retrieved}</td><td class="num">${c.stats.helpful}</td><td class="num">${c.stats.hurt}</td><td class="num">${cardScore(c.stats).toFixed(2)}</td></tr>`;
    })
    .join('');
}

function cardsSection(run: RunData): string {
  if (run.cards.length === 0) return `<p class="note">No skill cards to rank: ${escapeHtml(run.bankNote ?? 'the bank is empty')}.</p>`;
  const used = run.cards.filter((c) => c.stats.retrieved > 0);
  if (used.length === 0) return `<p class="note">The bank holds ${run.cards.length} cards, but none has been retrieved yet.</p>`;
  const net = (c: SkillCard): number => c.stats.helpful - c.stats.hurt;
  // Net effect decides the side: a card that helped more than it hurt is never listed as hurtful.
  const helpful = used.filter((c) => net(c) > 0).sort((a, b) => net(b) - net(a) || b.stats.helpful - a.stats.helpful).slice(0, 8);
  const hurtful = used.filter((c) => net(c) < 0).sort((a, b) => net(a) - net(b) || b.stats.hurt - a.stats.hurt).slice(0, 8);
  const head = '<tr><th>card</th><th>description</th><th class="num">retrieved</th><th class="num">helpful</th><th class="num">hurt</th><th class="num">score</th></tr>';
  const table = (rows: SkillCard[], none: string): string => (rows.length === 0 ? `<p class="note">${none}</p>` : `<div class="wide"><table data-table="cards">${head}${cardRows(rows)}</table></div>`);
  return (
    `<h3>Most helpful</h3>${table(helpful, 'No card has helped more often than it hurt yet.')}` +
    `<h3>Most hurtful</h3>${table(hurtful, 'No card has hurt more often than it helped.')}` +
    `<p class="caption">Helpful: retrieved for a rollout that answered correctly; hurt: for a well-formed wrong answer. Score = (helpful − hurt) / (retrieved + 1).</p>`
  );
}

/** The last `n` parts of a path, for a compact label. */
function shortPath(p: string, n = 3): string {
  const parts = p.split('/').filter((x) => x !== '');
  return parts.length <= n ? p : `…/${parts.slice(-n).join('/')}`;
}

function comparisonTable(folders: readonly EvalFolderData[]): string {
  const datasets = [...new Set(folders.flatMap((f) => f.results.datasets.map((d) => d.dataset)))];
  const differ = datasetsDiffer(folders);
  // F1 is null in folders that scored exact match only; n is the questions a cell scored (a 5-question eval
  // must not read as a 342-question one).
  const score = (em: number, f1: number | null, n: number): string => `<b>${(100 * em).toFixed(1)}</b>${f1 === null ? '' : ` <span class="sub">${(100 * f1).toFixed(1)}</span>`}<div class="sub">n = ${n}</div>`;
  const head = `<tr><th>mode</th>${datasets.map((d) => `<th class="num">${escapeHtml(d)}</th>`).join('')}<th class="num">${differ ? 'average (of its own datasets)' : 'average'}</th></tr>`;
  const rows = folders.map((f) => {
    const cells = datasets.map((name) => {
      const d = f.results.datasets.find((x) => x.dataset === name);
      return `<td class="num" title="${d ? `${d.questions} questions` : ''}">${d ? score(d.em, d.f1, d.questions) : '–'}</td>`;
    });
    const st = f.settings ?? {};
    const what = [
      typeof st.model === 'string' ? shortPath(st.model, 2) : undefined,
      typeof st.adapter === 'string' ? `adapter ${shortPath(st.adapter)}` : 'no adapter',
      `skills ${typeof st.skills === 'string' && st.skills !== 'off' ? shortPath(st.skills, 2) : 'off'}`,
    ].filter((x): x is string => x !== undefined);
    const a = f.results.average;
    const whatLines = [...what, `${a.questions} question${a.questions === 1 ? '' : 's'} in ${a.datasets} dataset${a.datasets === 1 ? '' : 's'}`];
    return `<tr><td class="mode"><b>${escapeHtml(f.label)}</b><div class="what" title="${escapeHtml(JSON.stringify(st))}">${whatLines.map(escapeHtml).join('<br>')}</div></td>${cells.join('')}<td class="num">${score(a.em, a.f1, a.questions)}</td></tr>`;
  });
  const warning = differ
    ? `<p class="note" data-warning="datasets-differ">The modes were evaluated on different datasets (${folders.map((f) => `${escapeHtml(f.label)}: ${f.results.datasets.map((d) => escapeHtml(d.dataset)).join(', ')}`).join('; ')}): each average is over its own datasets, so the averages are not comparable; compare the columns they share.</p>`
    : '';
  return `${warning}<div class="wide"><table data-table="eval-comparison">${head}${rows.join('')}</table></div><p class="caption">n: questions scored. Each cell: exact match (bold) and token F1${folders.some((f) => f.results.datasets.some((d) => d.f1 === null)) ? ' (where the folder scored it)' : ''}, in percent, with FlashRAG normalization; the average weighs datasets equally (docs/evaluation.md).</p>`;
}

/** A table of numbers made elsewhere (an experiment's summary), shown as is: every cell is escaped. */
export interface ReportTable {
  id: string;
  title: string;
  header: string[];
  rows: string[][];
  caption?: string;
}

export interface ReportInput {
  run: RunData;
  evals: EvalFolderData[];
  generatedAt: string;
  /** Tables shown after the modes' comparison (e.g. world-experiment's ablation table). */
  tables?: ReportTable[];
}

function reportTable(t: ReportTable): string {
  const head = `<tr>${t.header.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr>`;
  const rows = t.rows.map((r) => `<tr>${r.map((c) => `<td>${escapeHtml(c)}</td>`).join('')}</tr>`).join('');
  return `<h3>${escapeHtml(t.title)}</h3><div class="wide"><table data-table="${escapeHtml(t.id)}">${head}${rows}</table></div>${t.caption ? `<p class="caption">${escapeHtml(t.caption)}</p>` : ''}`;
}

/** The ids of the charts a report of `input` contains (for tests and for the CLI's summary). */
export function reportCharts(input: ReportInput): { training: Chart[]; update: Chart[]; bank: Chart[]; eval: Chart[]; selfEvolution: Chart[] } {
  const steps: StepRow[] = input.run.steps;
  const evals: EvalRow[] = input.run.evals;
  const training = [heldOutChart(evals), accuracyChart(steps), pHatHeatmap(steps), invalidReasonsChart(steps), rewardsChart(steps)].filter((c): c is Chart => c !== undefined);
  const timing = timingChart(steps);
  const comparison = comparisonChart(input.evals);
  // The paper's Figure 3 at small scale, and the solver batch (docs/report.md).
  const batch = solverBatchChart(steps);
  const selfEvolution = [...figure3Charts(steps, evals), ...(batch ? [batch] : [])];
  return { training: timing ? [...training, timing] : training, update: updateCharts(steps), bank: bankCharts(steps), eval: comparison ? [comparison] : [], selfEvolution };
}

export function renderReport(input: ReportInput): { html: string; chartIds: string[] } {
  const { run } = input;
  const charts = reportCharts(input);
  const cfg = run.config ?? {};
  const title = `SESA run report: ${run.dir.split('/').slice(-2).join('/')}`;
  const facts = [
    cfg.model !== undefined ? `model <code>${escapeHtml(String(cfg.model))}</code>` : '',
    cfg.corpus !== undefined ? `corpus <code>${escapeHtml(cfg.retrieverUrl !== undefined ? redactUrl(String(cfg.retrieverUrl)) : String(cfg.corpus))}</code>` : '',
    cfg.skills !== undefined ? `skills ${cfg.skills ? 'on' : 'off'}` : '',
    cfg.seed !== undefined ? `seed ${escapeHtml(String(cfg.seed))}` : '',
  ].filter(Boolean);
  const body: string[] = [];
  body.push(`<header><h1>${escapeHtml(title)}</h1><p>${facts.join(' · ')}</p><p>${escapeHtml(run.dir)}</p></header>`);
  if (run.steps.length === 0 && run.evals.length === 0) {
    body.push('<p class="empty" data-empty="metrics">This run has no metrics yet: metrics.jsonl is missing or empty. Charts appear once the first step has finished.</p>');
  } else {
    body.push(kpis(run));
    body.push('<h2>Learning</h2>');
    body.push(charts.training.map(chartSection).join(''));
    if (run.steps.length > 0 && !charts.training.some((c) => c.id === 'p-hat-heatmap')) {
      body.push('<p class="empty" data-empty="p-hat-heatmap">No valid question in this run yet, so there is no solver success rate p̂ to map.</p>');
    }
    body.push('<h2>GRPO updates</h2>');
    body.push(charts.update.length > 0 ? `<div class="grid">${charts.update.map(chartSection).join('')}</div>` : '<p class="empty">No update metrics recorded.</p>');
    body.push('<h2>Skill bank</h2>');
    body.push(charts.bank.length > 0 ? `<div class="grid">${charts.bank.map(chartSection).join('')}</div>` : '<p class="empty">No bank metrics recorded (skills off, or no step yet).</p>');
    if (charts.selfEvolution.length > 0) {
      body.push('<h2>Self-evolution (the paper’s Figure 3, at small scale)</h2>');
      body.push(`<div class="grid">${charts.selfEvolution.map(chartSection).join('')}</div>`);
    }
  }
  if (run.steps.length > 0 || run.cards.length > 0) body.push(`<h2>Skill cards</h2>${cardsSection(run)}`);
  if (input.evals.length > 0) {
    body.push('<h2>Evaluation: modes compared</h2>');
    body.push(charts.eval.map(chartSection).join(''));
    body.push(comparisonTable(input.evals));
  }
  for (const t of input.tables ?? []) body.push(reportTable(t));
  body.push(`<details><summary>Run configuration</summary><pre>${escapeHtml(JSON.stringify(cfg, null, 2))}</pre></details>`);
  body.push(`<footer>Generated by <code>sesa-train report</code> at ${escapeHtml(input.generatedAt)}. Charts: Observable Plot, rendered to SVG when the report was made.</footer>`);
  const all = [...charts.training, ...charts.update, ...charts.bank, ...charts.selfEvolution, ...charts.eval];
  const html = `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title><style>${CSS}</style></head><body><main>${body.join('\n')}</main></body></html>\n`;
  return { html, chartIds: run.steps.length === 0 && run.evals.length === 0 ? charts.eval.map((c) => c.id) : all.map((c) => c.id) };
}
