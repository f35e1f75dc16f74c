// A hash of an adapter's weights: equal on every data-parallel worker after every step, or the run stops.
import { createHash } from 'node:crypto';
import type { tf } from '../tensor/backend.js';

export function hashVariables(vars: ReadonlyMap<string, tf.Variable> | Record<string, tf.Variable>): string {
  const entries = vars instanceof Map ? [...vars.entries()] : Object.entries(vars);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const h = createHash('sha256');
  for (const [name, v] of entries) {
    h.update(name);
    const data = v.dataSync() as Float32Array;
    h.update(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  }
  return h.digest('hex').slice(0, 16);
}
