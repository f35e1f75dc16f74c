// A process killed at an arbitrary point loses no committed card: the child commits in a loop and is
// SIGKILLed; the reopened bank holds every commit the child reported, and opens cleanly.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SkillBank } from '../src/skills/bank.js';
import { LexicalEmbedder } from '../src/skills/lexical.js';
import { tempDir } from './skills-helpers.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

describe('a killed process', () => {
  it('loses no committed card', async () => {
    const path = join(tempDir('sk-kill'), 'bank.json');
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/skills-kill-child.ts'), path], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    const reported: Array<{ id: string; version: number }> = [];
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.on('exit', (code, signal) => res({ code, signal })));
    await new Promise<void>((resolve, reject) => {
      let buf = '';
      child.stdout.on('data', (d: Buffer) => {
        buf += d.toString();
        const lines = buf.split('\n');
        buf = lines.pop() ?? '';
        for (const line of lines) {
          const m = /^committed (\S+) (\d+)$/.exec(line);
          if (m) reported.push({ id: m[1]!, version: Number(m[2]) });
        }
        // Kill while it is still committing: the next write is under way or about to be.
        if (reported.length >= 12 && !child.killed) {
          child.kill('SIGKILL');
          resolve();
        }
      });
      child.on('exit', () => (reported.length >= 12 ? resolve() : reject(new Error(`child exited early: ${stderr}`))));
    });
    const { signal } = await exited;
    expect(signal).toBe('SIGKILL');

    const bank = await SkillBank.open(path, { embedder: new LexicalEmbedder(), create: false });
    const last = reported[reported.length - 1]!;
    expect(bank.version).toBeGreaterThanOrEqual(last.version);
    for (const r of reported) {
      const card = bank.card(r.id);
      expect(card, r.id).toBeDefined();
      expect(card!.stats.helpful).toBe(1); // the outcome recorded before its commit survived too
    }
    const keys = new Set(bank.pendingFailures().map((f) => f.key));
    for (let i = 1; i <= reported.length; i++) expect(keys.has(`question ${i}`)).toBe(true);
  });
});
