#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=68719476736 node
// Runs the TypeScript sources directly (no build step): tsx registers its ESM loader, then the CLI loads.
// The shebang sets two glibc malloc settings before Node starts (they are read only then): onnxruntime-node's
// binding returns a fresh copy of every matMul output it writes (docs/method.md, "The native matMul path"), and
// with glibc's defaults each copy over 128 KiB is a new mapping whose pages fault on first touch and go back to
// the system when freed; kept on the heap instead, a 2-thread [4096,128]×[128,384] product ran at ~220 GFLOP/s
// instead of 20–65 (2026-12-05). Other C libraries ignore them; `node bin/sesa-train.mjs` runs without them.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
await main(process.argv.slice(2));
