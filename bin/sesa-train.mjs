#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=999999999 MALLOC_TRIM_THRESHOLD_=4294967296 GLIBC_TUNABLES=glibc.malloc.hugetlb=1 node
// Runs the TypeScript sources directly (no build step): tsx registers its ESM loader, then the CLI loads.
// The shebang sets three glibc malloc settings before Node starts (they are read only then). Its line stays
// within 127 bytes, all that Linux before 5.1 reads of it (test/bin-shebang.test.ts):
// - MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_: onnxruntime-node's binding returns a fresh copy of every
//   matMul output it writes (docs/method.md, "The native matMul path"), and with glibc's defaults each copy over
//   128 KiB is a new mapping whose pages fault on first touch and go back to the system when freed; kept on the
//   heap instead, a 2-thread [4096,128]×[128,384] product ran at ~220 GFLOP/s instead of 20–65 (2026-12-05).
//   Allocations under ~1 GB stay on the heap, and the heap is trimmed only when 4 GiB at its top are free.
// - glibc.malloc.hugetlb=1: malloc asks for transparent huge pages (madvise) on what it maps, which is where
//   onnxruntime keeps the frozen weights; a decoded token reads all of them, and with 2 MiB pages instead of
//   4 KiB the weight reads miss the TLB far less (f32 decode of one row on one thread: 0.87–1.00× the wasm
//   path before, 0.96–1.15× with it, median 1.05×; docs/usage.md). A kernel whose THP mode is `never` ignores it.
// Other C libraries ignore them; `node bin/sesa-train.mjs` runs without them.
import { register } from 'tsx/esm/api';

// A model whose frozen weights fit only once cannot afford the first two settings: the bin then runs the same
// command again without them, once, and ends as it does (src/cli/malloc-relaunch.ts).
register();
const { relaunchWithoutRetainingMalloc } = await import('../src/cli/malloc-relaunch.ts');
if (!(await relaunchWithoutRetainingMalloc())) {
  const { main } = await import('../src/cli/main.ts');
  await main(process.argv.slice(2));
}
