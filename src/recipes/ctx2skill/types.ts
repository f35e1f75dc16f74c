// The records of a Ctx2Skill run (docs/recipes.md). The history file holds them all; it is also the state a
// killed run resumes from, so every field is plain JSON.

/** One natural-language skill: a name, when it applies, and the rule or procedure itself. */
export interface Skill {
  name: string;
  description: string;
  body: string;
}

export type SkillSet = Skill[];

export type Side = 'reasoner' | 'challenger';

export interface Task {
  /** `i<iteration>-t<index>`, unique in the run. */
  id: string;
  iteration: number;
  task: string;
  rubrics: string[];
}

/** The Judge's per-rubric verdicts; solved iff every item passes. */
export interface Verdict {
  passes: boolean[];
  reasons: string[];
  solved: boolean;
}

/** A Reasoner answer and its judgement. `judgeError` set = the Judge's reply never parsed (a failure). */
export interface Attempt {
  taskId: string;
  answer: string;
  verdict?: Verdict;
  solved: boolean;
  judgeError?: string;
}

/** A Proposer's diagnosis: what to change in a side's skill set and why. */
export interface Diagnosis {
  action: 'add' | 'merge';
  skill: string;
  description: string;
  justification: string;
}

export interface SideUpdate {
  side: Side;
  /** The routed cases (task ids): failed ones for the Reasoner side, solved ones for the Challenger side. */
  cases: string[];
  diagnoses?: Diagnosis[];
  proposerError?: string;
  generatorError?: string;
  /** The side's skill set after the update (unchanged when a role failed or nothing was routed). */
  skills: SkillSet;
}

export interface IterationRecord {
  iteration: number;
  /** S^C_{i-1} and S^R_{i-1}: the skill sets the roles used in this iteration. */
  challengerSkillsIn: SkillSet;
  reasonerSkillsIn: SkillSet;
  tasks?: Task[];
  challengerError?: string;
  attempts: Attempt[];
  reasonerUpdate?: SideUpdate;
  challengerUpdate?: SideUpdate;
  done: boolean;
}

export interface ReplayResult {
  taskId: string;
  solved: boolean;
  judgeError?: string;
}

export interface ReplayCandidate {
  /** S^R_i: the Reasoner skill set at the end of iteration i. */
  iteration: number;
  hard: ReplayResult[];
  easy: ReplayResult[];
  rhoHard?: number;
  rhoEasy?: number;
  score?: number;
  /** Set when the same skill set was already scored under another iteration (its results are reused). */
  sameAs?: number;
}

export interface ReplayRecord {
  hardProbe: string[];
  easyProbe: string[];
  candidates: ReplayCandidate[];
  selected?: number;
}

export interface Ctx2SkillHistory {
  format: 'sesa-ctx2skill-history';
  version: 1;
  config: Record<string, unknown>;
  context: { source: string; chars: number; sha256: string };
  roles: Record<string, string>;
  iterations: IterationRecord[];
  replay?: ReplayRecord;
  done: boolean;
}
