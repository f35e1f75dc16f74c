// Kernel profiles for the benchmarks: run a function under tf.profile, group its kernels by name and input
// shapes, and report the ones that take the most time (with the GFLOP/s of matMuls), as bench rows.
import { tf } from '../src/tensor/backend.js';
import type { BenchRow } from './types.js';

export interface KernelGroup {
  name: string;
  shapes: string;
  ms: number;
  calls: number;
  flops: number;
}

/** flops of a matMul kernel from its input and output shapes (0 for other kernels). */
function kernelFlops(name: string, inputShapes: number[][], outputShapes: number[][]): number {
  if (!/MatMul/.test(name)) return 0;
  const a = inputShapes[0] ?? [];
  const out = outputShapes[0] ?? [];
  const M = out[out.length - 2] ?? 1;
  const [r, c] = [a[a.length - 2] ?? 1, a[a.length - 1] ?? 1];
  const K = r === M ? c : r;
  return 2 * out.reduce((x, y) => x * y, 1) * K;
}

export interface KernelProfile {
  /** The top kernel groups by time. */
  groups: KernelGroup[];
  /** Time in all kernels. */
  totalMs: number;
  /** Wall time of the profiled call (profiling included): what is not kernel time is JS work between them. */
  wallMs: number;
}

/** The top kernels by total time of `f`, grouped by name and input shapes. */
export async function profileKernels(f: () => Promise<unknown>, top: number): Promise<KernelProfile> {
  const t = performance.now();
  const info = await tf.profile(async () => {
    await f();
  });
  const wallMs = performance.now() - t;
  const groups = new Map<string, KernelGroup>();
  let totalMs = 0;
  const backend = tf.getBackend();
  for (const k of info.kernels) {
    // customGrad scopes (recomputed layers, frozen linears) are listed too, with their inner kernels listed
    // separately: count only real kernels.
    if (tf.getKernel(k.name, backend) === undefined) continue;
    const ms = typeof k.kernelTimeMs === 'number' ? k.kernelTimeMs : 0;
    const shapes = k.inputShapes.map((s) => `[${(s ?? []).join(',')}]`).join('×');
    const key = `${k.name} ${shapes}`;
    const g = groups.get(key) ?? { name: k.name, shapes, ms: 0, calls: 0, flops: 0 };
    g.ms += ms;
    g.calls++;
    g.flops += kernelFlops(k.name, k.inputShapes as number[][], k.outputShapes as number[][]);
    groups.set(key, g);
    totalMs += ms;
  }
  return { groups: [...groups.values()].sort((a, b) => b.ms - a.ms).slice(0, top), totalMs, wallMs };
}

/**
 * One row per kernel group (time, calls, share of all kernel time), then a row for the time outside kernels
 * (JS between kernels: dispatch, reading logits back, sampling; tf.profile's own bookkeeping included).
 */
export function profileRows(caseName: string, profile: KernelProfile): BenchRow[] {
  const kernels = profile.groups.map((g, i): BenchRow => ({
    case: caseName,
    engine: `#${i + 1} ${g.name} ${g.shapes}`,
    metric: `${g.calls} calls${g.flops > 0 ? `, ${(g.flops / (g.ms / 1000) / 1e9).toFixed(1)} GFLOP/s` : ''}`,
    value: g.ms,
    unit: 'ms',
    notes: `share of all kernel time: ${((100 * g.ms) / profile.totalMs).toFixed(1)}% (kernel times under tf.profile; total ${(profile.totalMs / 1000).toFixed(2)} s)`,
  }));
  const outside = Math.max(0, profile.wallMs - profile.totalMs);
  return [
    ...kernels,
    {
      case: caseName,
      engine: 'outside kernels',
      metric: 'wall − kernel time',
      value: outside,
      unit: 'ms',
      notes: `share of the wall time: ${((100 * outside) / profile.wallMs).toFixed(1)}% (wall ${(profile.wallMs / 1000).toFixed(2)} s under tf.profile)`,
    },
  ];
}
