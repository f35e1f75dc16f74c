// Integer flags of the scripts under scripts/: the flag's name and value in the error.
export function intFlag(flag: string, value: string | undefined, min: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${flag} must be an integer ≥ ${min}, got ${value}`);
  return n;
}
