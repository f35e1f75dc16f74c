// The worker of bench/gemv-split.bench.ts: holds the second half (output rows of W [out, in]) of every matrix
// as a one-thread onnxruntime session, and runs the product the main thread posts through shared memory.
// Plain JavaScript: a worker does not get the main thread's TypeScript loader.
//
// Control words (Int32Array over `ctrl`): [0] posted job number, [1] matrix index, [2] rows n, [3] done job
// number, [4] 1 = stop. x arrives in `xs` (n × in floats), y leaves in `ys` (n × half floats).
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { workerData, parentPort } from 'node:worker_threads';

const require = createRequire(import.meta.url);
const root = dirname(require.resolve('onnxruntime-node/package.json'));
const loader = require(join(root, 'dist', 'binding.js'));
loader.initOrt();

const { ctrl: ctrlBuf, xs: xsBuf, ys: ysBuf, models, spin } = workerData;
const ctrl = new Int32Array(ctrlBuf);
const xs = new Float32Array(xsBuf);
const ys = new Float32Array(ysBuf);
const sessions = models.map((m) => {
  const s = new loader.binding.InferenceSession();
  s.loadModel(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    enableCpuMemArena: false,
    extra: { session: { 'intra_op.allow_spinning': '0' } },
  });
  return { s, inDim: m.inDim, half: m.half, x: new Float32Array(m.inDim * 8), y: new Float32Array(m.half * 8) };
});
parentPort.postMessage('ready');

let seen = 0;
for (;;) {
  // Spin on the job word `spin` times, then sleep on it (a decode posts the next job within microseconds).
  let job = Atomics.load(ctrl, 0);
  for (let i = 0; job === seen && i < spin; i++) job = Atomics.load(ctrl, 0);
  while (job === seen) {
    Atomics.wait(ctrl, 0, seen, 50);
    job = Atomics.load(ctrl, 0);
  }
  seen = job;
  if (Atomics.load(ctrl, 4) === 1) break;
  const m = sessions[Atomics.load(ctrl, 1)];
  const n = Atomics.load(ctrl, 2);
  const x = m.x.subarray(0, n * m.inDim);
  x.set(xs.subarray(0, n * m.inDim));
  const y = m.y.subarray(0, n * m.half);
  m.s.run({ x: { type: 'float32', dims: [n, m.inDim], data: x, location: 'cpu' } }, { y: { type: 'float32', dims: [n, m.half], data: y, location: 'cpu' } });
  ys.set(y);
  Atomics.store(ctrl, 3, job);
  Atomics.notify(ctrl, 3);
}
