// The warm-start data set: expert solver and proposer transcripts from the training worlds (never the demo or
// the fresh world), as JSONL of `{"messages": [...], "meta": {...}}` for `sesa-train sft`. See docs/world.md.
import type { SynthFact } from '../corpus/synthetic/index.js';
import { writeFileAtomic } from '../util/atomic.js';
import { Rng } from '../util/rng.js';
import type { CardBlock } from './card-blocks.js';
import { firstTurnExercises, readingDrills, turnWindows } from './exercises.js';
import { DEFAULT_EXPERT_RATES, type ExpertRates, expertPropose, expertSolve, type ProposerStyle, type Transcript } from './experts.js';
import { WorldRagReader } from './scripted-roles.js';
import { DEMO_WORLD, EVAL_WORLD_SEEDS, FRESH_WORLD, World } from './world.js';

export interface TranscriptSetOptions {
  /** Worlds to draw from (seeds); must not include the demo or the fresh world. */
  worldSeeds: number[];
  passages: number;
  solverPerWorld: number;
  proposerPerWorld: number;
  /** Add a copy exercise per assistant turn of every solver transcript (./exercises.ts). */
  turnWindows: boolean;
  /** The windows of an episode with a card block open with that block (./exercises.ts turnWindows). */
  windowsKeepCards?: boolean;
  /** First-turn copy exercises per world, on questions beyond the solver transcripts' (./exercises.ts). */
  firstTurnsPerWorld: number;
  /** Reading drills per world (./exercises.ts), each with at most `drillFacts` facts. */
  readingDrillsPerWorld?: number;
  drillFacts?: number;
  /** Share of 1-, 2- and 3-hop questions (solver) and seeds (proposer). */
  hopMix: [number, number, number];
  /** The proposer seeds' share of 1-, 2- and 3-hop chains, when it differs from hopMix. */
  proposerHopMix?: [number, number, number];
  rates: ExpertRates;
  /**
   * Keep only multi-hop proposer episodes whose question needs its hops: the world's RAG reader must fail to
   * reach the target from the passages of the first search alone (the run's --first-search-check,
   * docs/method.md "Validating questions"). Those it answers are dropped, counted in stats.oneSearchProposals.
   */
  proposerNeedsHops?: boolean;
  /** The expert proposer's choices (see expertPropose); 'varied' when absent. */
  proposerStyle?: ProposerStyle;
  seed: number;
  /**
   * The skill block for a solver prompt (./card-blocks.ts), as the solver role would render it, and how it was
   * drawn; no text = a prompt without cards. Called for every solver question with its hop count.
   */
  cardsFor?: (question: string, hops: number, rng: Rng) => Promise<CardBlock>;
  onProgress?: (done: number, total: number) => void;
}

/** Facts a reading drill states at most (a result block of three passages states 4–9). */
export const DEFAULT_DRILL_FACTS = 8;

export const DEFAULT_TRANSCRIPT_OPTIONS: Omit<TranscriptSetOptions, 'worldSeeds'> = {
  passages: DEMO_WORLD.passages,
  solverPerWorld: 120,
  proposerPerWorld: 40,
  turnWindows: false,
  firstTurnsPerWorld: 0,
  hopMix: [0.34, 0.33, 0.33],
  rates: DEFAULT_EXPERT_RATES,
  proposerStyle: 'varied',
  seed: 0,
};

export interface TranscriptSet {
  transcripts: Transcript[];
  stats: {
    solver: number;
    proposer: number;
    solverCorrect: number;
    proposerValid: number;
    byErrors: Record<string, number>;
    byCards: Record<string, number>;
    /** Solver episodes by how their card block was drawn, and by what the expert did with it (`kind/cards`). */
    byCardBlock: Record<string, number>;
    skipped: number;
    /** Multi-hop proposer episodes dropped by proposerNeedsHops: their question is answered from the first search alone. */
    oneSearchProposals: number;
    /** Dropped because they mention a held-out answer or question of the demo or fresh world. */
    excluded: number;
    /** Copy exercises among the transcripts (not counted in solver or proposer). */
    windows: number;
    firstTurns: number;
    readingDrills: number;
  };
}

function drawHops(mix: readonly number[], rng: Rng): number {
  const total = mix.reduce((a, b) => a + b, 0);
  let u = rng.next() * total;
  for (let h = 0; h < mix.length; h++) {
    u -= mix[h] as number;
    if (u < 0) return h + 1;
  }
  return mix.length;
}

/** A random chain of `hops` facts through distinct entities into `answerId`, built backwards from it; undefined at a dead end. */
export function chainInto(world: World, answerId: string, hops: number, rng: Rng): SynthFact[] | undefined {
  const path: SynthFact[] = [];
  const seen = new Set([answerId]);
  let cur = answerId;
  for (let k = 0; k < hops; k++) {
    const options = world.factsInto(cur).filter((f) => !seen.has(f.subject));
    if (options.length === 0) return undefined;
    const f = options[rng.int(options.length)] as SynthFact;
    path.unshift(f);
    seen.add(f.subject);
    cur = f.subject;
  }
  return path;
}

/** A random chain of `hops` facts through distinct entities, built backwards from a random answer. */
export function randomChain(world: World, hops: number, rng: Rng): SynthFact[] | undefined {
  const ents = world.synth.entities;
  for (let attempt = 0; attempt < 50; attempt++) {
    const answer = ents[rng.int(ents.length)];
    const path = answer ? chainInto(world, answer.id, hops, rng) : undefined;
    if (path) return path;
  }
  return undefined;
}

export async function buildTranscripts(opts: TranscriptSetOptions): Promise<TranscriptSet> {
  for (const s of opts.worldSeeds) {
    if (s === DEMO_WORLD.seed || s === FRESH_WORLD.seed || EVAL_WORLD_SEEDS.includes(s)) throw new Error(`transcripts: world seed ${s} is the demo, the fresh or an evaluation world; warm-start data must come from other worlds`);
  }
  const rng = new Rng(opts.seed);
  const transcripts: Transcript[] = [];
  const exercises: Transcript[] = [];
  const exerciseRng = Rng.derive(opts.seed, 2);
  const drills: Transcript[] = [];
  const drillRng = Rng.derive(opts.seed, 3);
  let skipped = 0;
  let excluded = 0;
  let oneSearchProposals = 0;
  // Names repeat across worlds (they are built from one syllable table): a transcript that so much as
  // mentions a held-out answer or question of the demo or fresh world is dropped.
  const cleanText = heldOutCheck();
  const clean = (t: Transcript): boolean => cleanText(t.messages.map((m) => m.content).join('\n'));
  const total = opts.worldSeeds.length * (opts.solverPerWorld + opts.proposerPerWorld);
  /** Keeps an expert's transcript, or counts why not (no transcript: skipped; mentions a held-out string: excluded). */
  const keep = (t: Transcript | undefined): boolean => {
    if (!t) skipped++;
    else if (!clean(t)) excluded++;
    else {
      transcripts.push(t);
      opts.onProgress?.(transcripts.length, total);
      return true;
    }
    return false;
  };
  for (const seed of opts.worldSeeds) {
    const world = new World({ seed, passages: opts.passages });
    const searcher = await world.searcher();
    let made = 0;
    for (let tries = 0; made < opts.solverPerWorld && tries < opts.solverPerWorld * 4; tries++) {
      const path = randomChain(world, drawHops(opts.hopMix, rng), rng);
      if (!path) continue;
      const question = world.phrase(path, rng);
      const golds = world.golden((path[path.length - 1] as SynthFact).object);
      if (golds.some((g) => question.toLowerCase().includes(g.toLowerCase()))) continue;
      const block = opts.cardsFor ? await opts.cardsFor(question, path.length, rng) : undefined;
      const t = await expertSolve(world, searcher, question, golds, opts.rates, rng, block?.text);
      if (t && block) t.meta.cardBlock = block.kind;
      if (keep(t)) made++;
    }
    made = 0;
    const reader = new WorldRagReader(world);
    for (let tries = 0; made < opts.proposerPerWorld && tries < opts.proposerPerWorld * 4; tries++) {
      const hops = drawHops(opts.proposerHopMix ?? opts.hopMix, rng);
      const path = randomChain(world, hops, rng);
      if (!path) continue;
      const target = (path[path.length - 1] as SynthFact).object;
      const t = await expertPropose(world, searcher, target, hops, opts.rates, rng, opts.proposerStyle);
      if (t && opts.proposerNeedsHops && hops >= 2 && (await answeredFromFirstSearch(reader, world, t, target))) {
        oneSearchProposals++;
        continue;
      }
      if (keep(t)) made++;
    }
    // Their own random stream: adding exercises leaves the episodes (and the tokenizer trained on them) as they were.
    exercises.push(...firstTurnExercises(world, opts.firstTurnsPerWorld, (r) => randomChain(world, drawHops(opts.hopMix, r), r), cleanText, exerciseRng));
    drills.push(...(await readingDrills(world, searcher, opts.readingDrillsPerWorld ?? 0, opts.drillFacts ?? DEFAULT_DRILL_FACTS, cleanText, drillRng)));
  }
  const windows = opts.turnWindows ? transcripts.flatMap((t) => turnWindows(t, opts.windowsKeepCards === true)) : [];
  const firstTurns = exercises.length;
  transcripts.push(...windows, ...exercises, ...drills);
  // Interleave roles and worlds, so any prefix of the file is a fair sample.
  for (let i = transcripts.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [transcripts[i], transcripts[j]] = [transcripts[j] as Transcript, transcripts[i] as Transcript];
  }
  const episodes = transcripts.filter((t) => t.meta.exercise === undefined);
  const byErrors: Record<string, number> = {};
  const byCards: Record<string, number> = {};
  const byCardBlock: Record<string, number> = {};
  for (const t of episodes) {
    const key = t.meta.errors.length === 0 ? 'none' : [...new Set(t.meta.errors)].sort().join('+');
    byErrors[key] = (byErrors[key] ?? 0) + 1;
    if (t.meta.cards) byCards[t.meta.cards] = (byCards[t.meta.cards] ?? 0) + 1;
    if (t.meta.cardBlock) {
      const key = `${t.meta.cardBlock}/${t.meta.cards ?? 'none'}`;
      byCardBlock[key] = (byCardBlock[key] ?? 0) + 1;
    }
  }
  const solvers = episodes.filter((t) => t.meta.role === 'solver');
  const proposers = episodes.filter((t) => t.meta.role === 'proposer');
  return {
    transcripts,
    stats: {
      solver: solvers.length,
      proposer: proposers.length,
      solverCorrect: solvers.filter((t) => t.meta.correct).length,
      proposerValid: proposers.filter((t) => t.meta.correct).length,
      byErrors,
      byCards,
      byCardBlock,
      skipped,
      oneSearchProposals,
      excluded,
      windows: windows.length,
      firstTurns,
      readingDrills: drills.length,
    },
  };
}

/**
 * Whether the world's RAG reader reaches `target` from the passages of the proposer episode's first search alone
 * (its first tool turn, rendered as a run renders results), given the episode's question.
 */
export async function answeredFromFirstSearch(reader: WorldRagReader, world: World, t: Transcript, target: string): Promise<boolean> {
  const first = t.messages.find((m) => m.role === 'tool')?.content ?? '';
  const reply = await reader.complete([{ role: 'user', content: `Documents:\n${first}\nQuestion: ${t.meta.final}` }]);
  const answer = /<answer>(.*)<\/answer>/.exec(reply)?.[1]?.trim().toLowerCase() ?? '';
  return answer !== '' && world.golden(target).some((g) => g.toLowerCase() === answer);
}

/**
 * A check that a text mentions no held-out answer or question of the demo or fresh world (as a whole word,
 * ignoring case). Names repeat across worlds: they are built from one syllable table.
 */
export function heldOutCheck(): (text: string) => boolean {
  const banned = heldOutStrings().map((b) => new RegExp(`(^|[^\\p{L}\\p{N}])${b.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^\\p{L}\\p{N}])`, 'u'));
  return (text) => {
    const lower = text.toLowerCase();
    return !banned.some((b) => b.test(lower));
  };
}

/** Lowercased golden answers and questions of the demo and fresh worlds' held-out sets. */
export function heldOutStrings(): string[] {
  const out = new Set<string>();
  for (const opts of [DEMO_WORLD, FRESH_WORLD]) {
    for (const q of new World(opts).heldOut) {
      out.add(q.question.toLowerCase());
      for (const g of q.golden_answers) out.add(g.toLowerCase());
    }
  }
  return [...out];
}

export function writeTranscripts(file: string, transcripts: readonly Transcript[]): void {
  writeFileAtomic(file, transcripts.map((t) => JSON.stringify(t)).join('\n') + '\n');
}
