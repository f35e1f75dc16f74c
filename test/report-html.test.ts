// The report page without a browser: which charts a run's metrics give, the p̂ heat map's cells, the card
// tables (ranked, escaped), a run with no metrics yet, and bad metrics lines named by file and line.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { renderReport } from '../src/report/html.js';
import { readEvalFolder, readRun, type RunData, type StepRow } from '../src/report/run-data.js';
import type { SkillCard } from '../src/skills/card.js';

const root = mkdtempSync(join(tmpdir(), 'sesa-report-html-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function step(s: number, over: Partial<StepRow> = {}): StepRow {
  const update = { loss: 0.01 * s, kl: 0.001 * s, clipFrac: 0.02, entropy: 1.2, gradNorm: 0.5 };
  return {
    step: s,
    extractionRate: 0.9,
    validityRate: 0.5,
    invalidReasons: { 'too-few-searches': 2, 'no-question': 0 },
    solverAccuracy: 0.1 * s,
    pHatHistogram: { '0.00': 1, '0.40': s, '1.00': 0 },
    solverMeanReward: 0.1 * s,
    proposerMeanReward: 0.3,
    solver: update,
    proposer: update,
    bankSize: 15 + s,
    activeSkills: 3,
    queueLength: s,
    consolidation: s === 2 ? { started: true, committed: { admitted: 2, evicted: [{}], duplicates: 1 } } : { started: false },
    seconds: { propose: 1, validate: 0.2, solve: 2, judge: 0.1, update: 3, consolidate: 0, total: 6.3 },
    ...over,
  };
}

function card(id: string, retrieved: number, helpful: number, hurt: number, description = `Card ${id} says what to do when searching.`): SkillCard {
  return { id, category: 'search', source: 'distilled', description, triggers: ['t'], avoid: [], queries: [], stats: { retrieved, helpful, hurt }, createdStep: 1, bankVersion: 1 };
}

function run(over: Partial<RunData> = {}): RunData {
  return {
    dir: '/runs/x',
    config: { model: 'qwen3-0.6b', corpus: 'encyclopedia', skills: true, seed: 0 },
    steps: [step(1), step(2), step(3)],
    evals: [
      { kind: 'eval', step: 0, skills: 'on', em: 0.1, f1: 0.2, questions: 5 },
      { kind: 'eval', step: 0, skills: 'off', em: 0.05, f1: 0.1, questions: 5 },
      { kind: 'eval', step: 3, skills: 'on', em: 0.3, f1: 0.4, questions: 5 },
      { kind: 'eval', step: 3, skills: 'off', em: 0.2, f1: 0.3, questions: 5 },
    ],
    cards: [card('good', 10, 8, 1), card('bad', 9, 1, 7, 'Always answer <b>"yes"</b> & stop'), card('unused', 0, 0, 0), card('meh', 4, 2, 2), card('slightly', 5, 1, 2)],
    ...over,
  };
}

describe('renderReport', () => {
  it('draws every chart the metrics allow, as inline SVG with no script or network', () => {
    const { html, chartIds } = renderReport({ run: run(), evals: [], generatedAt: '2026-01-01T00:00:00Z' });
    expect(chartIds).toEqual([
      'held-out', 'training-accuracy', 'p-hat-heatmap', 'invalid-reasons', 'rewards', 'phase-timings',
      'update-kl', 'update-clipFrac', 'update-entropy', 'update-gradNorm', 'bank-size', 'bank-changes',
      'figure3-held-out-em', 'figure3-valid-rate',
    ]);
    for (const id of chartIds) expect(html).toMatch(new RegExp(`<section class="chart" data-chart="${id}">.*?<svg`, 's'));
    expect(html).not.toMatch(/<script|(?:src|href)="https?:/i);
    // KPIs: before → after of the held-out eval, per skills mode.
    expect(html).toContain('10.0% → 30.0%');
    expect(html).toContain('5.0% → 20.0%');
  });

  it("draws the paper's Figure 3 (held-out EM, valid-question rate, active cards over steps) and the solver batch", () => {
    const steps = [1, 2, 3].map((s) => step(s, { validityRate: 0.1 * s, activeCards: 2 * s, solverQuestions: 8, reusedQuestions: s === 1 ? 0 : 8 - s, emptySlots: s === 1 ? 7 : 0 }));
    const { html, chartIds } = renderReport({ run: run({ steps }), evals: [], generatedAt: '2026-01-01T00:00:00Z' });
    expect(chartIds.filter((id) => id.startsWith('figure3-') || id === 'solver-batch')).toEqual(['figure3-held-out-em', 'figure3-valid-rate', 'figure3-active-cards', 'solver-batch']);
    expect(html).toContain('Self-evolution (the paper’s Figure 3, at small scale)');
    // The bank chart names what it draws: cards retrieved at least once (activeCards) apart from this step's.
    const bankLegend = /<section class="chart" data-chart="bank-size">.*?<\/p>(.*?)<\/section>/s.exec(html)?.[1] ?? '';
    expect(bankLegend).toContain('cards retrieved at least once');
    expect(bankLegend).toContain('cards retrieved for the step');
    const section = (id: string): string => /<section class="chart" data-chart="[^"]+">.*?<\/section>/s.exec(html.slice(html.indexOf(`data-chart="${id}"`) - 30))?.[0] ?? '';
    expect(section('figure3-active-cards')).toContain('active cards');
    expect(section('solver-batch')).toContain('reused from the pool');
    expect(section('solver-batch')).not.toContain('resampled from the pool');
    // A run that resampled (--min-informative-groups) draws those questions as a kind of their own.
    const resampled = renderReport({ run: run({ steps: steps.map((s, i) => ({ ...s, solverQuestions: 8 + i, resampledQuestions: i })) }), evals: [], generatedAt: '2026-01-01T00:00:00Z' });
    expect(/<section class="chart" data-chart="solver-batch">.*?<\/section>/s.exec(resampled.html)?.[0] ?? '').toContain('resampled from the pool');
    // A run without those metrics (an older run, skills off) leaves the charts out.
    const bare = renderReport({ run: run({ steps: [step(1, { validityRate: undefined })], evals: [] }), evals: [], generatedAt: '2026-01-01T00:00:00Z' });
    expect(bare.chartIds.filter((id) => id.startsWith('figure3-') || id === 'solver-batch')).toEqual([]);
    expect(bare.html).not.toContain('Figure 3');
  });

  it('draws a short run (one point per series) with no Plot warning: no ⚠ mark in a chart, nothing on the console', () => {
    // Plot groups a line's points by its colour channel; with as many groups as points it warned that "the
    // implicit z channel has high cardinality" and drew a ⚠ into the chart (six charts of a demo report).
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      for (const steps of [[step(1)], [step(1), step(2, { solver: undefined })]]) {
        const { html, chartIds } = renderReport({ run: run({ steps, evals: [{ kind: 'eval', step: 0, skills: 'on', em: 0.1, f1: 0.2, questions: 5 }, { kind: 'eval', step: 0, skills: 'off', em: 0.1, f1: 0.2, questions: 5 }] }), evals: [], generatedAt: '2026-01-01T00:00:00Z' });
        expect(chartIds).toContain('update-kl');
        expect(html).not.toContain('\u26a0');
        expect(html).not.toMatch(/warnings?\. Please check the console/);
      }
      expect(warn.mock.calls.map((c) => String(c[0]))).toEqual([]);
    } finally {
      warn.mockRestore();
    }
  });

  it('maps p̂ per step: one cell per (step, p̂) with its count', () => {
    const { html } = renderReport({ run: run(), evals: [], generatedAt: 't' });
    const heat = /data-chart="p-hat-heatmap">(.*?)<\/section>/s.exec(html)?.[1] ?? '';
    // 3 steps × 3 p̂ values.
    expect(heat.match(/<rect /g)?.length).toBeGreaterThanOrEqual(9);
    // Counts written in the cells (zero cells unlabelled): step s has s questions at p̂ 0.40, and 1 at 0.00.
    const labels = [...heat.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]);
    expect(labels.filter((t) => t === '1').length).toBeGreaterThanOrEqual(4);
  });

  it('ranks the most helpful and most hurtful retrieved cards, with their text escaped', () => {
    const { html } = renderReport({ run: run(), evals: [], generatedAt: 't' });
    const helpful = html.slice(html.indexOf('Most helpful'), html.indexOf('Most hurtful'));
    const hurtful = html.slice(html.indexOf('Most hurtful'));
    expect(helpful.indexOf('>good<')).toBeGreaterThan(0);
    expect(helpful).not.toContain('>unused<');
    // By net effect: worst first; a card that helped as often as it hurt is on neither list.
    expect(hurtful.indexOf('>bad<')).toBeGreaterThan(0);
    expect(hurtful.indexOf('>bad<')).toBeLessThan(hurtful.indexOf('>slightly<'));
    expect(html).not.toContain('>meh<');
    expect(hurtful).not.toContain('>good<');
    expect(html).toContain('Always answer &lt;b&gt;&quot;yes&quot;&lt;/b&gt; &amp; stop');
    expect(html).not.toContain('<b>"yes"</b>');
  });

  it('headlines valid proposals and solver accuracy pooled over each half of the run, not the first and last step', () => {
    // Steps 1 and 4 have no valid question; 2 and 3 do: a first → last quote would read 0% → 0%.
    const steps = [
      step(1, { proposals: 16, validQuestions: 0, solverRollouts: 0, solverAccuracy: 0 }),
      step(2, { proposals: 16, validQuestions: 4, solverRollouts: 16, solverAccuracy: 0.25 }),
      step(3, { proposals: 16, validQuestions: 2, solverRollouts: 8, solverAccuracy: 0.5 }),
      step(4, { proposals: 16, validQuestions: 0, solverRollouts: 0, solverAccuracy: 0 }),
    ];
    const kpiOf = (html: string, label: string): string => {
      const m = new RegExp(`<div class="label">${label}</div><div class="value[^"]*">([^<]*)</div><div class="sub">([^<]*)</div>`).exec(html);
      return m ? `${m[1]} | ${m[2]}` : 'missing';
    };
    const { html } = renderReport({ run: run({ steps }), evals: [], generatedAt: 't' });
    expect(kpiOf(html, 'valid proposals')).toBe('12.5% → 6.3% | pooled, first half → second half (4 of 32 → 2 of 32)');
    expect(kpiOf(html, 'solver accuracy \\(training\\)')).toBe('25.0% → 50.0% | pooled, first half → second half (4 of 16 → 4 of 8)');
    // One step: no halves to compare, the pooled value alone.
    const one = renderReport({ run: run({ steps: [steps[1] as StepRow] }), evals: [], generatedAt: 't' }).html;
    expect(kpiOf(one, 'valid proposals')).toBe('25.0% | pooled over the steps (4 of 16)');
  });

  it('says so when the run has no metrics yet', () => {
    const { html, chartIds } = renderReport({ run: run({ steps: [], evals: [], cards: [] }), evals: [], generatedAt: 't' });
    expect(chartIds).toEqual([]);
    expect(html).toContain('data-empty="metrics"');
    expect(html).toMatch(/no metrics yet/);
  });
});

describe('reading run and eval folders', () => {
  it('reads step and eval rows, and a run with an empty metrics file', () => {
    const dir = join(root, 'run');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ model: 'm', skills: false }));
    writeFileSync(join(dir, 'metrics.jsonl'), '');
    const empty = readRun(dir);
    expect([empty.steps, empty.evals, empty.cards, empty.bankNote]).toEqual([[], [], [], 'skills were off in this run']);
    writeFileSync(join(dir, 'metrics.jsonl'), `${JSON.stringify(step(1))}\n${JSON.stringify({ kind: 'eval', step: 1, skills: 'off', em: 0.5, f1: 0.5, questions: 2 })}\n{"step": 2, "solverAcc`);
    expect(() => readRun(dir)).toThrow(/metrics\.jsonl: line 3: not valid JSON/);
    writeFileSync(join(dir, 'metrics.jsonl'), `${JSON.stringify(step(1))}\n${JSON.stringify({ kind: 'eval', step: 1, skills: 'off', em: 0.5, f1: 0.5, questions: 2 })}\n`);
    const r = readRun(dir);
    expect([r.steps.length, r.evals.length]).toEqual([1, 1]);
    expect(() => readRun(join(root, 'nothing'))).toThrow(/is not a run folder/);
    expect(() => readEvalFolder(join(root, 'nothing'))).toThrow(/results\.json does not exist/);
  });

  it('compares eval folders in a table and a chart', () => {
    const mk = (name: string, em: number): string => {
      const dir = join(root, name);
      mkdirSync(dir, { recursive: true });
      const ds = [
        { dataset: 'nq', questions: 10, em, f1: em + 0.1, judged: null, answered: 1, meanTurns: 2, meanQueries: 1 },
        { dataset: 'musique', questions: 10, em: em / 2, f1: em, judged: null, answered: 1, meanTurns: 3, meanQueries: 2 },
      ];
      writeFileSync(join(dir, 'results.json'), JSON.stringify({ datasets: ds, average: { em: (em + em / 2) / 2, f1: em + 0.05, judged: null, datasets: 2, questions: 20 } }));
      writeFileSync(join(dir, 'settings.json'), JSON.stringify({ model: 'qwen3-4b', adapter: null, skills: 'off' }));
      return dir;
    };
    const evals = [readEvalFolder(mk('base', 0.2)), readEvalFolder(mk('sesa-on', 0.4))];
    const { html, chartIds } = renderReport({ run: run(), evals, generatedAt: 't' });
    expect(chartIds).toContain('eval-comparison');
    const table = /<table data-table="eval-comparison">(.*?)<\/table>/s.exec(html)?.[1] ?? '';
    expect(table.match(/<tr>/g)).toHaveLength(3);
    expect(table).toContain('<b>sesa-on</b>');
    expect(table).toContain('<b>40.0</b> <span class="sub">50.0</span>');
    expect(table).toContain('<b>30.0</b> <span class="sub">45.0</span>');
  });
});
