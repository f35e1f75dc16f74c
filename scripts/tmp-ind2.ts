import { ReferenceModel } from './tmp-ref.js';
const m = new ReferenceModel('/work/runs/ind-init');
(globalThis as any).TRACE = [];
const span = [500, 600, 700, 800, 900];
const ids = [...span, 1000, 1100, 1200, ...span];
const lp = m.logProbs(ids);
console.log((globalThis as any).TRACE.filter((x: string) => x.startsWith('L0h0') || x.startsWith('L1h0')).join('\n'));
for (let i = 8; i < ids.length - 1; i++) console.log(i, ids[i + 1], (-lp[i]![ids[i + 1]!]!).toFixed(2));
