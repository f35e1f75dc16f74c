// The generator moved to ./synthetic/ (split on its seams: graph, passages, held-out questions and seeds, entry
// points). This re-export keeps the old import path working for branches written before the split; new code
// imports './synthetic/index.js'.
export * from './synthetic/index.js';
