// The benchmark convention: every bench/*.bench.ts exports `suite`; bench/run.ts runs them all, writes
// bench/results/<suite>.json and prints one table. Speeds are measured here, never asserted in tests.

export interface BenchRow {
  /** What was measured, e.g. "prefill tiny b1". */
  case: string;
  /** Who ran it: "sesa/wasm", "sesa/cpu", "llama.cpp", ... */
  engine: string;
  metric: string;
  value: number;
  unit: string;
  /** Optional: engine value divided by a reference (e.g. llama.cpp) on the same case. */
  ratio?: number;
  notes?: string;
}

export interface BenchContext {
  /** Smaller sizes and fewer repeats (for a quick check). */
  quick: boolean;
  threads: number;
  log: (line: string) => void;
}

export interface BenchSuite {
  name: string;
  run(ctx: BenchContext): Promise<BenchRow[]>;
}
