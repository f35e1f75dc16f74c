// Hostile file headers and settings files: a safetensors header whose tensor entry is not an object, whose
// offsets are strings, fractions or negative, whose __metadata__ is not a map of strings, or whose tensors
// share bytes is refused naming the file and the tensor (it crashed with a TypeError, or loaded and failed
// later with Node's own message, or read one tensor's bytes as another's); a JSON settings file that gives a
// key twice is refused (JSON.parse kept the last value without a word), as YAML already was.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SafetensorsFile } from '../../src/formats/safetensors.js';
import { readSettingsFile } from '../../src/settings/table.js';
import { faultRoot } from './cli.js';

let root: string;
beforeAll(() => {
  root = faultRoot('hostile-files');
  mkdirSync(join(root, 'st'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A safetensors file with `header` (as JSON text) and 8 data bytes. */
function safetensors(name: string, header: string): string {
  const h = Buffer.from(header);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(h.length));
  const file = join(root, 'st', `${name}.safetensors`);
  writeFileSync(file, Buffer.concat([len, h, Buffer.alloc(8)]));
  return file;
}

describe('a hostile safetensors header', () => {
  const cases: Array<[string, string, string]> = [
    ['null-entry', '{"w": null}', "tensor 'w': not an object {dtype, shape, data_offsets}"],
    ['string-offsets', '{"w": {"dtype": "F32", "shape": [1], "data_offsets": ["0", "4"]}}', `tensor 'w': bad data_offsets ["0","4"] (two byte offsets, begin ≤ end)`],
    ['fraction-offsets', '{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0.5, 4.5]}}', "tensor 'w': bad data_offsets [0.5,4.5] (two byte offsets, begin ≤ end)"],
    ['negative-offsets', '{"w": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}}', "tensor 'w': bad data_offsets [-4,0] (two byte offsets, begin ≤ end)"],
    ['metadata-string', '{"__metadata__": "abc", "w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}', 'bad header: __metadata__ must be an object of strings'],
    ['overlap', '{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}', "bad header: tensors 'a' and 'b' overlap (bytes 0–4)"],
    ['long-name', `{"${'n'.repeat(100_000)}": {"dtype": "X9", "shape": [1], "data_offsets": [0, 4]}}`, `tensor '${'n'.repeat(120)}… (100000 characters)': unsupported dtype X9`],
  ];
  for (const [name, header, message] of cases) {
    it(`${name}: refused naming the file`, () => {
      const file = safetensors(name, header);
      expect(() => new SafetensorsFile(file)).toThrow(`${file}: ${message}`);
    });
  }
});

describe('a JSON settings file with a key twice', () => {
  it('is refused naming the file and where', () => {
    const file = join(root, 'twice.json');
    writeFileSync(file, '{"steps": 2,\n "lr": 0.001,\n "steps": 300}\n');
    expect(() => readSettingsFile(file)).toThrow(`${file}: a key appears twice (at line 3, column 2); give each setting once`);
    const yaml = join(root, 'twice.yaml');
    writeFileSync(yaml, 'steps: 2\nsteps: 300\n');
    expect(() => readSettingsFile(yaml)).toThrow(/twice\.yaml: not valid YAML \(Map keys must be unique/);
  });

  it('a file without one reads as before', () => {
    const file = join(root, 'once.json');
    writeFileSync(file, '{"steps": 2, "lr": 0.001, "lora-targets": ["q_proj", "v_proj"]}');
    expect(readSettingsFile(file)).toEqual({ steps: 2, lr: 0.001, 'lora-targets': ['q_proj', 'v_proj'] });
  });
});
