// The tool-call task family (docs/recipes.md): six functions with JSON schemas and a deterministic sandbox
// that executes them. A task is a user request (with any earlier observations written into it) and a hidden
// contract, the call sequence that fulfils it. An answer is graded by executing it: it is correct when its
// observable outcome (every call's result and the sandbox's final state) equals the contract's.
import { createHash } from 'node:crypto';
import type { Rng } from '../../util/rng.js';
import { own } from '../../util/own.js';

export interface JsonSchema {
  type: 'object' | 'string' | 'number' | 'integer' | 'array';
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: Array<string | number>;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  items?: JsonSchema;
  minItems?: number;
}

export interface ToolFunction {
  name: string;
  description: string;
  parameters: JsonSchema;
}

export interface ToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

export interface ToolTask {
  request: string;
  calls: ToolCall[];
}

const CITIES = ['Lisbon', 'Oslo', 'Kyoto', 'Denver', 'Nairobi', 'Lima'];
const CUISINES = ['italian', 'thai', 'mexican', 'indian', 'japanese'];
const CURRENCIES = ['USD', 'EUR', 'GBP', 'JPY'];
const DATE = '^\\d{4}-\\d{2}-\\d{2}$';
const TIME = '^\\d{2}:\\d{2}$';
const DATETIME = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}$';

export const TOOL_FUNCTIONS: ToolFunction[] = [
  {
    name: 'get_weather',
    description: 'Weather forecast for a city on a date.',
    parameters: { type: 'object', properties: { city: { type: 'string', enum: CITIES }, date: { type: 'string', pattern: DATE } }, required: ['city', 'date'] },
  },
  {
    name: 'convert_currency',
    description: 'Converts an amount between currencies at the fixed daily rate.',
    parameters: {
      type: 'object',
      properties: { amount: { type: 'number', minimum: 0.01 }, from: { type: 'string', enum: CURRENCIES }, to: { type: 'string', enum: CURRENCIES } },
      required: ['amount', 'from', 'to'],
    },
  },
  {
    name: 'search_restaurants',
    description: 'Restaurants of a cuisine in a city, with ids and ratings.',
    parameters: { type: 'object', properties: { city: { type: 'string', enum: CITIES }, cuisine: { type: 'string', enum: CUISINES } }, required: ['city', 'cuisine'] },
  },
  {
    name: 'book_table',
    description: 'Books a table at a restaurant (by id) for a date, time and number of guests.',
    parameters: {
      type: 'object',
      properties: {
        restaurant_id: { type: 'string', pattern: '^R-\\d{4}$' },
        date: { type: 'string', pattern: DATE },
        time: { type: 'string', pattern: TIME },
        guests: { type: 'integer', minimum: 1, maximum: 12 },
      },
      required: ['restaurant_id', 'date', 'time', 'guests'],
    },
  },
  {
    name: 'schedule_meeting',
    description: 'Schedules a meeting; start must be before end.',
    parameters: {
      type: 'object',
      properties: {
        participants: { type: 'array', items: { type: 'string' }, minItems: 1 },
        start: { type: 'string', pattern: DATETIME },
        end: { type: 'string', pattern: DATETIME },
        topic: { type: 'string' },
      },
      required: ['participants', 'start', 'end', 'topic'],
    },
  },
  {
    name: 'send_email',
    description: 'Sends an email.',
    parameters: {
      type: 'object',
      properties: { to: { type: 'string', pattern: '^[^@\\s]+@[^@\\s]+\\.[a-z]+$' }, subject: { type: 'string' }, body: { type: 'string' } },
      required: ['to', 'subject', 'body'],
    },
  },
];

export const FUNCTION_NAMES = TOOL_FUNCTIONS.map((f) => f.name);

/** Problems of `value` against `schema` (a JSON Schema subset: types, enum, pattern, bounds, items, required, no extra keys). */
export function schemaProblems(schema: JsonSchema, value: unknown, at: string): string[] {
  switch (schema.type) {
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${at} must be an object`];
      const o = value as Record<string, unknown>;
      const out: string[] = [];
      for (const r of schema.required ?? []) if (!(r in o)) out.push(`${at}.${r} is required`);
      for (const [k, v] of Object.entries(o)) {
        const sub = own(schema.properties, k);
        if (!sub) out.push(`${at}.${k} is not a parameter`);
        else out.push(...schemaProblems(sub, v, `${at}.${k}`));
      }
      return out;
    }
    case 'array': {
      if (!Array.isArray(value)) return [`${at} must be an array`];
      const out = value.length < (schema.minItems ?? 0) ? [`${at} needs at least ${schema.minItems} items`] : [];
      value.forEach((v, i) => schema.items && out.push(...schemaProblems(schema.items, v, `${at}[${i}]`)));
      return out;
    }
    case 'string': {
      if (typeof value !== 'string' || value.trim() === '') return [`${at} must be a non-empty string`];
      if (schema.enum && !schema.enum.includes(value)) return [`${at} must be one of ${schema.enum.join(', ')}`];
      if (schema.pattern && !new RegExp(schema.pattern).test(value)) return [`${at} must match ${schema.pattern}`];
      return [];
    }
    case 'number':
    case 'integer': {
      if (typeof value !== 'number' || !Number.isFinite(value) || (schema.type === 'integer' && !Number.isInteger(value))) return [`${at} must be ${schema.type === 'integer' ? 'an integer' : 'a number'}`];
      if (schema.minimum !== undefined && value < schema.minimum) return [`${at} must be ≥ ${schema.minimum}`];
      if (schema.maximum !== undefined && value > schema.maximum) return [`${at} must be ≤ ${schema.maximum}`];
      return [];
    }
  }
}

/** Problems of a call list's shape and arguments (unknown functions, schema violations). */
export function callsProblems(calls: unknown, maxCalls: number): string[] {
  if (!Array.isArray(calls) || calls.length === 0) return ['calls must be a non-empty array'];
  if (calls.length > maxCalls) return [`at most ${maxCalls} calls`];
  return calls.flatMap((c, i) => {
    if (typeof c !== 'object' || c === null) return [`calls[${i}] must be an object`];
    const fn = TOOL_FUNCTIONS.find((f) => f.name === (c as ToolCall).name);
    if (!fn) return [`calls[${i}].name must be one of ${FUNCTION_NAMES.join(', ')}`];
    return schemaProblems(fn.parameters, (c as ToolCall).arguments, `calls[${i}].arguments`);
  });
}

function digest(...parts: unknown[]): number {
  return createHash('sha256').update(JSON.stringify(parts)).digest().readUInt32BE(0);
}

const RATES_TO_USD: Record<string, number> = { USD: 1, EUR: 1.08, GBP: 1.27, JPY: 0.0067 };
const FORECASTS = ['sunny', 'cloudy', 'rain', 'snow', 'windy'];

export interface SandboxState {
  bookings: Array<{ confirmation: string; restaurant_id: string; date: string; time: string; guests: number }>;
  meetings: Array<{ participants: string[]; start: string; end: string; topic: string }>;
  emails: Array<{ to: string; subject: string; body: string }>;
}

/** The restaurants the sandbox knows for (city, cuisine): three, with stable ids and ratings. */
export function restaurantsOf(city: string, cuisine: string): Array<{ id: string; name: string; rating: number }> {
  return [0, 1, 2].map((k) => {
    const h = digest('restaurant', city, cuisine, k);
    return { id: `R-${String(1000 + (h % 9000)).padStart(4, '0')}`, name: `${cuisine[0]?.toUpperCase()}${cuisine.slice(1)} House ${city} ${k + 1}`, rating: 30 + (h % 21) };
  });
}

const KNOWN_RESTAURANTS = new Set(CITIES.flatMap((c) => CUISINES.flatMap((q) => restaurantsOf(c, q).map((r) => r.id))));

/** Executes calls in order against a fresh, deterministic world. A failing call records its error and the run goes on. */
export function executeCalls(calls: ToolCall[]): { results: unknown[]; errors: string[]; state: SandboxState } {
  const state: SandboxState = { bookings: [], meetings: [], emails: [] };
  const results: unknown[] = [];
  const errors: string[] = [];
  calls.forEach((c, i) => {
    const fn = TOOL_FUNCTIONS.find((f) => f.name === c.name);
    const problems = fn ? schemaProblems(fn.parameters, c.arguments, `calls[${i}].arguments`) : [`calls[${i}]: unknown function ${c.name}`];
    if (problems.length > 0) {
      errors.push(...problems);
      results.push({ error: problems[0] });
      return;
    }
    const s = (k: string): string => c.arguments[k] as string;
    const n = (k: string): number => c.arguments[k] as number;
    switch (c.name) {
      case 'get_weather': {
        const h = digest('weather', s('city'), s('date'));
        results.push({ forecast: FORECASTS[h % FORECASTS.length], high_c: (h % 35) - 5 });
        break;
      }
      case 'convert_currency':
        results.push({ amount: Math.round((n('amount') * (RATES_TO_USD[s('from')] as number)) / (RATES_TO_USD[s('to')] as number) * 100) / 100, currency: s('to') });
        break;
      case 'search_restaurants':
        results.push({ restaurants: restaurantsOf(s('city'), s('cuisine')) });
        break;
      case 'book_table': {
        if (!KNOWN_RESTAURANTS.has(s('restaurant_id'))) {
          errors.push(`calls[${i}]: no restaurant ${s('restaurant_id')}`);
          results.push({ error: 'unknown restaurant' });
          break;
        }
        const confirmation = `BK-${digest('booking', s('restaurant_id'), s('date'), s('time'), n('guests')) % 100000}`;
        state.bookings.push({ confirmation, restaurant_id: s('restaurant_id'), date: s('date'), time: s('time'), guests: n('guests') });
        results.push({ confirmation });
        break;
      }
      case 'schedule_meeting': {
        if (!(s('start') < s('end'))) {
          errors.push(`calls[${i}]: start must be before end`);
          results.push({ error: 'start must be before end' });
          break;
        }
        state.meetings.push({ participants: [...(c.arguments.participants as string[])], start: s('start'), end: s('end'), topic: s('topic') });
        results.push({ scheduled: true });
        break;
      }
      case 'send_email':
        state.emails.push({ to: s('to'), subject: s('subject'), body: s('body') });
        results.push({ sent: true });
        break;
    }
  });
  return { results, errors, state };
}

/** Leaf values of the arguments (strings and numbers) that must be read from the request, not invented. */
function groundingProblems(task: ToolTask): string[] {
  const text = task.request.toLowerCase();
  const out: string[] = [];
  const visit = (v: unknown, at: string, name: string): void => {
    if (Array.isArray(v)) v.forEach((x, i) => visit(x, `${at}[${i}]`, name));
    else if (typeof v === 'object' && v !== null) for (const [k, x] of Object.entries(v)) visit(x, `${at}.${k}`, name);
    else if (typeof v === 'string' || typeof v === 'number') {
      // Free text (an email body or subject, a topic) is the caller's to word; identifiers and values are not.
      if (/\.(body|subject|topic)$/.test(at)) return;
      if (!text.includes(String(v).toLowerCase())) out.push(`${at} = ${JSON.stringify(v)} does not appear in the request`);
    }
  };
  task.calls.forEach((c, i) => visit(c.arguments, `calls[${i}].arguments`, c.name));
  return out;
}

/**
 * The validity mask's parts for a tool task: schema (request and calls well-formed), contract (the calls
 * execute without error) and consistency (every argument value is grounded in the request).
 */
export function toolValidity(task: ToolTask, maxCalls: number): { schema: string[]; contract: string[]; consistency: string[] } {
  const schema = [...(typeof task.request === 'string' && task.request.trim().length >= 10 ? [] : ['request must be a string of at least 10 characters']), ...callsProblems(task.calls, maxCalls)];
  if (schema.length > 0) return { schema, contract: ['not checked'], consistency: ['not checked'] };
  return { schema, contract: executeCalls(task.calls).errors, consistency: groundingProblems(task) };
}

/** Correct iff the answer's calls are well-formed and produce the contract's outcome. */
export function gradeToolCalls(task: ToolTask, answer: unknown, maxCalls: number): { correct: boolean } {
  if (callsProblems(answer, maxCalls).length > 0) return { correct: false };
  const got = executeCalls(answer as ToolCall[]);
  const want = executeCalls(task.calls);
  return { correct: got.errors.length === 0 && JSON.stringify({ r: got.results, s: got.state }) === JSON.stringify({ r: want.results, s: want.state }) };
}

export function renderToolTask(task: ToolTask): string {
  const fns = TOOL_FUNCTIONS.map((f) => `- ${f.name}: ${f.description} Parameters: ${JSON.stringify(f.parameters)}`).join('\n');
  return `Functions:\n${fns}\n\nUser request:\n${task.request}`;
}

const PEOPLE = ['Sarah', 'Alex', 'Priya', 'Tom', 'Mei', 'Omar'];

function pick<T>(xs: readonly T[], rng: Rng): T {
  return xs[rng.int(xs.length)] as T;
}

function date(rng: Rng): string {
  return `2026-0${1 + rng.int(9)}-${String(10 + rng.int(18))}`;
}

/** A well-formed, grounded task using the given functions (for seed examples and scripted proposers). */
export function generateToolTask(functions: readonly string[], rng: Rng): ToolTask {
  const fn = pick(functions, rng);
  switch (fn) {
    case 'get_weather': {
      const city = pick(CITIES, rng);
      const d = date(rng);
      return { request: `What will the weather be in ${city} on ${d}?`, calls: [{ name: fn, arguments: { city, date: d } }] };
    }
    case 'convert_currency': {
      const [from, to] = [pick(CURRENCIES, rng), pick(CURRENCIES, rng)];
      const amount = 5 * (1 + rng.int(200));
      return { request: `How much is ${amount} ${from} in ${to === from ? 'USD' : to}?`, calls: [{ name: fn, arguments: { amount, from, to: to === from ? 'USD' : to } }] };
    }
    case 'search_restaurants':
    case 'book_table': {
      const city = pick(CITIES, rng);
      const cuisine = pick(CUISINES, rng);
      const found = restaurantsOf(city, cuisine);
      if (fn === 'search_restaurants') return { request: `Find ${cuisine} restaurants in ${city}.`, calls: [{ name: fn, arguments: { city, cuisine } }] };
      const best = [...found].sort((x, y) => y.rating - x.rating)[0] as { id: string; name: string; rating: number };
      const d = date(rng);
      const time = `${17 + rng.int(5)}:${pick(['00', '30'], rng)}`;
      const guests = 1 + rng.int(8);
      const listing = found.map((r) => `${r.id} ${r.name} (rating ${r.rating})`).join('; ');
      return {
        request: `Earlier search results for ${cuisine} in ${city}: ${listing}. Book the top-rated one for ${guests} guests on ${d} at ${time}.`,
        calls: [{ name: fn, arguments: { restaurant_id: best.id, date: d, time, guests } }],
      };
    }
    case 'schedule_meeting': {
      const people = [pick(PEOPLE, rng), pick(PEOPLE, rng)].filter((p, i, a) => a.indexOf(p) === i);
      const d = date(rng);
      const h = 9 + rng.int(7);
      const start = `${d}T${String(h).padStart(2, '0')}:00`;
      const end = `${d}T${String(h + 1).padStart(2, '0')}:00`;
      return { request: `Set up a meeting with ${people.join(' and ')} about the budget from ${start} to ${end}.`, calls: [{ name: fn, arguments: { participants: people, start, end, topic: 'budget' } }] };
    }
    default: {
      const who = pick(PEOPLE, rng).toLowerCase();
      return { request: `Email ${who}@example.com to say the report is ready.`, calls: [{ name: 'send_email', arguments: { to: `${who}@example.com`, subject: 'Report', body: 'The report is ready.' } }] };
    }
  }
}
