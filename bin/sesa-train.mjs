#!/usr/bin/env node
// Runs the TypeScript sources directly (no build step): tsx registers its ESM loader, then the CLI loads.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
await main(process.argv.slice(2));
