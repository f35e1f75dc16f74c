// Keys that name Object.prototype's members (`__proto__`, `constructor`, `toString`) in user input: a settings
// file (JSON and YAML, through the CLI), a tool call's arguments (the skill-sp recipe's schema check), a card
// category (the bank's stats) and a safetensors dtype. Each is an ordinary unknown key, named with its file;
// none reaches an inherited member.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SafetensorsFile } from '../../src/formats/safetensors.js';
import { callsProblems } from '../../src/recipes/skill-sp/toolcall.js';
import { parseConfigObject } from '../../src/settings/train.js';
import { bankStats } from '../../src/skills/bank-stats.js';
import { type BankFile } from '../../src/skills/bank-file.js';
import { CARD_A } from '../skills-helpers.js';
import { CLI, faultRoot, run } from './cli.js';

let root: string;
beforeAll(() => {
  root = faultRoot('hostile-keys');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('a settings file with a key named after an Object member', () => {
  for (const [name, text] of [
    ['proto.json', '{"__proto__": {"steps": 2}}'],
    ['ctor.json', '{"constructor": 3}'],
    ['proto.yaml', '__proto__:\n  steps: 2\n'],
    ['to-string.yml', 'toString: 1\n'],
  ] as const) {
    it(`${name}: refused as an unknown setting naming the file and the key`, async () => {
      const file = join(root, name);
      writeFileSync(file, text);
      const r = await run(root, [CLI, 'train', '--model', 'tiny', '--config', file, '--threads', '1', '--out', join(root, `run-${name}`)]);
      expect(r.code).not.toBe(0);
      const key = /^\{"(\w+)"|^(\w+):/.exec(text) as RegExpExecArray;
      expect(r.stderr).toContain(`error: ${file}: unknown setting '${key[1] ?? key[2]}' (known: recipe, model,`);
      expect(r.stderr).not.toMatch(/Cannot use 'in' operator|is not a function|undefined/);
    }, 60_000);
  }

  it('every inherited name is unknown, at the parser too', () => {
    for (const k of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__']) {
      expect(() => parseConfigObject(JSON.parse(`{"${k}": 1}`), 'c.json')).toThrow(`c.json: unknown setting '${k}'`);
    }
  });
});

describe('a tool call whose arguments name an Object member', () => {
  it('is a schema problem ("not a parameter"), not a crash', () => {
    const calls = [{ name: 'convert_currency', arguments: JSON.parse('{"amount": 5, "from": "USD", "to": "EUR", "constructor": 1, "__proto__": 2}') }];
    expect(callsProblems(calls, 4)).toEqual(['calls[0].arguments.constructor is not a parameter', 'calls[0].arguments.__proto__ is not a parameter']);
  });
});

describe('a card category named after an Object member', () => {
  it('is counted like any other in the bank stats', () => {
    const card = { ...CARD_A, id: 'c1', category: 'constructor', source: 'mined' as const, stats: { retrieved: 0, helpful: 0, hurt: 0 }, createdStep: 0, bankVersion: 0 };
    const data = { cards: [card, { ...card, id: 'c2', category: 'valueof' }, { ...card, id: 'c3' }], queue: [], counters: {}, version: 1, embedder: {}, lastCommitStep: 0, lastConsolidationStep: null } as unknown as BankFile;
    expect(bankStats(data, 'b.json', 10).categories).toEqual({ constructor: 2, valueof: 1 });
  });
});

describe('a safetensors header with a dtype named after an Object member', () => {
  it('is an unsupported dtype, naming the file and the tensor', () => {
    const dir = join(root, 'st');
    mkdirSync(dir, { recursive: true });
    for (const dtype of ['constructor', 'toString', '__proto__']) {
      const header = Buffer.from(JSON.stringify({ w: { dtype, shape: [1], data_offsets: [0, 4] } }));
      const len = Buffer.alloc(8);
      len.writeBigUInt64LE(BigInt(header.length));
      const file = join(dir, `${dtype}.safetensors`);
      writeFileSync(file, Buffer.concat([len, header, Buffer.alloc(4)]));
      expect(() => new SafetensorsFile(file)).toThrow(`${file}: tensor 'w': unsupported dtype ${dtype}`);
    }
  });
});
