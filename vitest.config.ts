import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['node_modules', 'dist'],
    // Reference tests load llama.cpp and tfjs-wasm; both are single-threaded here, so files run in
    // separate forks and each gets generous time on a 2-core machine.
    pool: 'forks',
    testTimeout: 180_000,
    hookTimeout: 180_000,
  },
});
