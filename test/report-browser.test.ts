// `sesa-train report` on a real (tiny, random) run in the encyclopedia, opened in Chromium: the run trains 2
// steps with the held-out eval on (rows at steps 0, 1 and 2, skills on and off), two eval folders are
// compared, and the page loads from file:// with no console errors and every chart it lists drawn as a visible
// SVG. Skipped, with the reason, when no Chromium can be found (.ci/run installs Debian's `chromium`).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpoint } from '../src/checkpoint/make-tiny.js';

const CLI = resolve(import.meta.dirname, '..', 'bin', 'sesa-train.mjs');

/** A Chromium executable: $CHROMIUM_PATH, else the usual Debian/Ubuntu locations. */
function findChromium(): string | undefined {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable'];
  return candidates.find((p): p is string => typeof p === 'string' && p !== '' && existsSync(p));
}

async function playwrightAvailable(): Promise<boolean> {
  try {
    await import('playwright-core');
    return true;
  } catch {
    return false;
  }
}

const chromium = findChromium();
const havePlaywright = await playwrightAvailable();
const skipReason = !chromium ? 'no Chromium found (install Debian chromium, or set CHROMIUM_PATH)' : !havePlaywright ? 'playwright-core is not installed' : '';

let root: string;
let modelDir: string;

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: root, env: { ...process.env, XDG_CACHE_HOME: join(root, 'cache'), SESA_HOME: join(root, 'home') }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((res) => child.on('exit', (code) => res({ code, stdout, stderr })));
}

const SMALL = ['--max-turns', '2', '--max-new-tokens', '12', '--max-response-tokens', '48', '--backend', 'wasm'];

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sesa-report-'));
  modelDir = makeTinyCheckpoint({ out: join(root, 'model'), arch: 'qwen3', vocab: 400, hidden: 32, heads: 4, kvHeads: 2, headDim: 16, intermediate: 64, seed: 3 }).dir;
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('a run in the encyclopedia with the held-out eval, reported and opened in Chromium', () => {
  it('trains with eval rows at step 0, every step and the end, and prints before → after', async () => {
    const r = await cli([
      'train', '--model', modelDir, '--corpus', 'encyclopedia', '--steps', '2', '--seeds-per-step', '1', '--proposals-per-seed', '2', '--group-size', '2',
      '--embedder', 'lexical', '--lr', '1e-3', '--save-every', '1', '--micro-batch-size', '8', '--seed', '4', '--out', 'run',
      '--eval-every', '1', '--eval-data', 'encyclopedia', '--eval-limit', '3', ...SMALL,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const rows = readFileSync(join(root, 'run', 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const evals = rows.filter((x) => x.kind === 'eval');
    expect(evals.map((x) => [x.step, x.skills, x.questions])).toEqual([
      [0, 'on', 3], [0, 'off', 3], [1, 'on', 3], [1, 'off', 3], [2, 'on', 3], [2, 'off', 3],
    ]);
    expect(rows.filter((x) => x.kind === undefined).map((x) => x.step)).toEqual([1, 2]);
    expect(r.stdout).toMatch(/held-out EM, skills on: \d+\.\d% \(step 0\) → \d+\.\d% \(step 2\)/);
    expect(r.stdout).toMatch(/held-out EM, skills off: /);
  }, 240_000);

  it.skipIf(skipReason !== '')(`compares eval folders and renders in Chromium with no console errors and every chart drawn${skipReason ? ` (skipped: ${skipReason})` : ''}`, async () => {
    const base = await cli(['eval', '--model', modelDir, '--data', 'encyclopedia', '--limit', '3', ...SMALL, '--out', 'eval-base']);
    expect(base.code, base.stderr).toBe(0);
    const tuned = await cli(['eval', '--model', modelDir, '--adapter', join(root, 'run', 'checkpoints', 'step-2', 'solver'), '--skills', join(root, 'run', 'skills.json'), '--data', 'encyclopedia', '--limit', '3', ...SMALL, '--out', 'eval-sesa-on']);
    expect(tuned.code, tuned.stderr).toBe(0);
    const rep = await cli(['report', join(root, 'run'), '--eval', join(root, 'eval-base'), '--eval', join(root, 'eval-sesa-on'), '--out', join(root, 'report.html'), '--json']);
    expect(rep.code, rep.stderr).toBe(0);
    expect(rep.stderr).not.toMatch(/Warning: /);
    const { charts } = JSON.parse(rep.stdout) as { charts: string[] };
    // A random tiny model writes no valid question, so there is no p̂ heat map (the page says why instead).
    expect(charts).toEqual(expect.arrayContaining(['held-out', 'training-accuracy', 'invalid-reasons', 'rewards', 'phase-timings', 'update-kl', 'bank-size', 'eval-comparison']));
    const html = readFileSync(join(root, 'report.html'), 'utf8');
    // Self-contained: no script and nothing fetched over the network.
    expect(html).not.toMatch(/<script|(?:src|href)="https?:/i);

    const { chromium: pw } = await import('playwright-core');
    const browser = await pw.launch({ executablePath: chromium as string, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      const errors: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error') errors.push(m.text());
      });
      page.on('pageerror', (e) => errors.push(String(e)));
      page.on('request', (req) => {
        if (!req.url().startsWith('file:')) errors.push(`network request: ${req.url()}`);
      });
      await page.goto(`file://${join(root, 'report.html')}`, { waitUntil: 'load' });
      for (const id of charts) {
        const svg = page.locator(`section[data-chart="${id}"] svg`).last();
        const box = await svg.boundingBox();
        expect(box, id).not.toBeNull();
        expect(box?.width ?? 0, id).toBeGreaterThan(150);
        expect(box?.height ?? 0, id).toBeGreaterThan(100);
        // Drawn marks, not an empty frame.
        expect(await page.locator(`section[data-chart="${id}"] svg g[aria-label]`).count(), id).toBeGreaterThan(0);
      }
      expect(await page.locator('section.chart').count()).toBe(charts.length);
      // Observable Plot draws a ⚠ into a chart it warned about (test/report-html.test.ts has the short run that did).
      expect(await page.locator('svg text', { hasText: '\u26a0' }).count(), 'Plot warning marks').toBe(0);
      expect(await page.locator('[data-empty="p-hat-heatmap"]').textContent()).toMatch(/no valid question/i);
      expect(await page.locator('table[data-table="eval-comparison"] tr').count()).toBe(3);
      const shot = process.env.SESA_REPORT_SCREENSHOT;
      if (shot) await page.screenshot({ path: shot, fullPage: true });
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 240_000);
});
