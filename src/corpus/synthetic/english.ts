// Small English helpers shared by the work titles (./graph-build.ts) and the passages (./passages.ts).

export function an(phrase: string): string {
  // "a university", "a one-act opera": the sound decides, not the letter.
  return /^[aeiou]/i.test(phrase) && !/^(uni|use|eu|one)/i.test(phrase) ? `an ${phrase}` : `a ${phrase}`;
}

export function list(items: string[]): string {
  if (items.length <= 1) return items[0] ?? '';
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

export function century(year: number): string {
  const c = Math.floor(year / 100) + 1;
  const suffix = c % 10 === 1 && c !== 11 ? 'st' : c % 10 === 2 && c !== 12 ? 'nd' : c % 10 === 3 && c !== 13 ? 'rd' : 'th';
  return `${c}${suffix}`;
}

