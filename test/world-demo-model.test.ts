// The shipped warm-start model (models/demo, made by scripts/make-demo-model.ts): it fits the size limit, loads
// with its world tokenizer, and its greedy held-out accuracy in the demo world is the one the script recorded
// in warm-start.json (same questions, same settings). Skipped with the reason when no model is shipped.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ModelPolicy } from '../src/model/policy.js';
import { CausalLM } from '../src/model/qwen3.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { initBackend } from '../src/tensor/backend.js';
import { repoRoot } from '../src/util/shared-data.js';
import { evalWorld } from '../src/world/eval.js';
import { PROTOCOL_TAGS } from '../src/world/tokenizer.js';
import { DEMO_WORLD, World } from '../src/world/world.js';

const dir = join(repoRoot(), 'models', 'demo');
const shipped = existsSync(join(dir, 'model.safetensors')) && existsSync(join(dir, 'warm-start.json'));

interface WarmStart {
  evalSettings: { maxTurns: number; maxTokensPerTurn: number; maxResponseTokens: number; passagesPerQuery: number };
  heldOut: { demo: { skillsOff: { questions: number; accuracy: number } } };
}

describe.skipIf(!shipped)(`shipped warm-start model${shipped ? '' : ' (skipped: models/demo has no model.safetensors and warm-start.json; run scripts/make-demo-model.ts)'}`, () => {
  it('is at most 16 MB, loads with the world tokenizer, and reproduces its recorded held-out accuracy', async () => {
    const bytes = ['model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'config.json'].reduce((a, f) => a + statSync(join(dir, f)).size, 0);
    expect(bytes).toBeLessThanOrEqual(16 * 1024 * 1024);
    const record = JSON.parse(readFileSync(join(dir, 'warm-start.json'), 'utf8')) as WarmStart;
    await initBackend('wasm');
    const model = await CausalLM.load(dir);
    const tokenizer = await loadTokenizer(dir);
    for (const tag of PROTOCOL_TAGS) expect(tokenizer.encode(tag)).toHaveLength(1);
    const policy = new ModelPolicy('solver', model, tokenizer, undefined, { enableThinking: false });
    const world = new World(DEMO_WORLD);
    const recorded = record.heldOut.demo.skillsOff;
    const result = await evalWorld(policy, await world.searcher(), world.heldOut.slice(0, recorded.questions), { settings: record.evalSettings });
    model.dispose();
    expect(result.questions).toBe(recorded.questions);
    // Greedy decoding on the same backend: the same answers; the band allows one question either way.
    expect(Math.abs(result.accuracy - recorded.accuracy)).toBeLessThanOrEqual(1 / recorded.questions + 1e-9);
  });
});
