// The GRPO group: advantages, the clipped loss, the KL term, and the optimizer (docs/method.md, "GRPO").
import { bool, choice, int, num, optionalNum } from '../setting.js';

function positive(v: number | undefined): string | undefined {
  return v === undefined || v > 0 ? undefined : `must be > 0, got ${v}`;
}

export const GRPO_SETTINGS = {
  advantage: choice(['grpo', 'drgrpo'], 'grpo', { help: 'grpo: A = (R − mean) / (std + ε); drgrpo: A = R − mean (Dr. GRPO, no std division). A group of one gets A = R' }),
  advantageEps: num(1e-6, { above: 0, help: 'ε added to the group std in grpo advantages' }),
  clipLow: num(0.2, { above: 0, below: 1, help: 'ε_low: the ratio ρ is clipped below at 1 − ε_low' }),
  clipHigh: num(0.28, { above: 0, help: 'ε_high: the ratio ρ is clipped above at 1 + ε_high' }),
  dualClip: num(3, { min: 0, help: 'c, the dual-clip bound −c·A for negative advantages (0 = off)', check: (v) => (v === 0 || v > 1 ? undefined : `must be 0 (off) or > 1, got ${v}`) }),
  skipUniformGroups: bool(false, {
    help: "leave out of the update every group of two or more whose rewards are all equal (DAPO's dynamic-sampling filter, without resampling): their advantages are 0, so they add only the KL term's gradient and the time of their forward and backward",
  }),
  solverEpochs: int(1, {
    min: 1,
    help: "optimizer updates of the solver's adapter per step, each one pass over the same groups; the ratio's old log-probs stay the rollouts' (verl's ppo_epochs), so the clip bounds how far the passes move it",
  }),
  proposerBaseline: choice(['seed', 'step'], 'seed', {
    help: "the proposer's GRPO group: a seed's n_p proposals (seed, as SSP; with n_p = 1 a group of one, A = R), or all of the step's proposals as one group (step, ours: the step's mean reward is the baseline, so a mostly negative reward does not push every sample down; docs/method.md, \"GRPO\")",
  }),
  proposerEpochs: int(1, { min: 1, help: "optimizer updates of the proposer's adapter per step, as --solver-epochs" }),
  klCoef: num(0.01, { min: 0, help: 'β, coefficient of the k3 KL to the reference (the base model, adapters off); 0 = no KL term' }),
  lossAggregation: choice(['token-mean', 'seq-mean-token-mean', 'seq-sum-norm'], 'token-mean', {
    help: "token-mean: over all generated tokens of the batch; seq-mean-token-mean: mean of per-sequence means; seq-sum-norm: Dr. GRPO's sum over --max-response-tokens per sequence",
  }),
  lr: num(1e-5, { above: 0, tiny: 1e-3, help: 'η, the AdamW learning rate of both adapters (unless --solver-lr or --proposer-lr sets a role\'s own)' }),
  solverLr: optionalNum({ help: "the solver adapter's learning rate in place of --lr", check: positive }),
  proposerLr: optionalNum({ help: "the proposer adapter's learning rate in place of --lr", check: positive }),
  lrSchedule: choice(['constant', 'cosine'], 'constant', { help: 'after warmup: constant, or cosine decay to lr·min-lr-ratio at the last step' }),
  minLrRatio: num(0, { min: 0, max: 1, help: 'the cosine floor as a fraction of lr' }),
  warmupSteps: int(10, { min: 0, tiny: 0, help: 'linear learning-rate warmup (updates)' }),
  weightDecay: num(0.01, { min: 0, help: 'AdamW decoupled weight decay' }),
  adamBeta1: num(0.9, { min: 0, below: 1, help: 'AdamW β1' }),
  adamBeta2: num(0.999, { min: 0, below: 1, help: 'AdamW β2' }),
  adamEps: num(1e-8, { above: 0, help: 'AdamW ε' }),
  maxGradNorm: num(1.0, { above: 0, help: 'gradient clipping at this global norm' }),
  microBatchSize: int(4, { tiny: 8, help: 'sequences per forward/backward pass (gradients accumulate over the passes)' }),
};
