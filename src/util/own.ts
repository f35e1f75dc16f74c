// Looking up a key that came from user input (a settings file, a model's JSON, a file header) in a plain
// object: `obj[key]` would reach Object.prototype's members for `constructor`, `toString` or `__proto__`,
// so such a key must be an own property to count.

/** `obj[key]` when `key` is an own property of `obj`, else undefined. */
export function own<T>(obj: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return obj !== undefined && Object.hasOwn(obj, key) ? obj[key] : undefined;
}
