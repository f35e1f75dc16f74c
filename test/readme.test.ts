// The README is a newcomer's page (docs/usage.md has the reference): at most 12 KB, the two setup commands, and
// every link it gives reaches a file of the repository.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

describe('README.md', () => {
  it('is at most 12 KB', () => {
    expect(Buffer.byteLength(readme)).toBeLessThanOrEqual(12 * 1024);
  });

  it('gives the two setup commands: install and run the default, run the tests', () => {
    expect(readme).toContain('npm install && npx sesa-train\n');
    expect(readme).toContain('\nnpm test\n');
  });

  it('links only to files that exist', () => {
    const links = [...readme.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)].map((m) => m[1] as string).filter((l) => !/^[a-z]+:/.test(l));
    expect(links.length).toBeGreaterThan(0);
    for (const l of links) expect(existsSync(join(ROOT, l)), l).toBe(true);
  });

  it('has no placeholder left', () => {
    expect(readme).not.toMatch(/PLACEHOLDER|TODO|TBD/);
  });
});
