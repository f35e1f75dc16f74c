// Which LLM plays each Ctx2Skill role (docs/recipes.md): one OpenAI-compatible endpoint for all
// (`--llm-url`, `--llm-model`), overridden per role (`--judge-url`, `--judge-model`, ...), or the in-process
// model for the roles that have no URL. Errors name the flag that is missing.
import { OpenAIChatClient } from '../../llm/openai.js';
import type { TextGenerator } from '../../llm/types.js';
import { CTX2SKILL_ROLES, type Ctx2SkillRole, type Ctx2SkillRoles } from './run.js';

export interface EndpointSetting {
  url?: string;
  model?: string;
  keyEnv?: string;
  timeoutS?: number;
  retries?: number;
}

/** The settings of `role`: its own flags where given, else the `--llm-*` ones. */
export function endpointFor(role: Ctx2SkillRole, shared: EndpointSetting, own: EndpointSetting): EndpointSetting {
  return {
    url: own.url ?? shared.url,
    model: own.model ?? (own.url === undefined ? shared.model : undefined),
    keyEnv: own.keyEnv ?? shared.keyEnv,
    timeoutS: own.timeoutS ?? shared.timeoutS,
    retries: own.retries ?? shared.retries,
  };
}

/** The roles that have no URL and so run on the in-process model. */
export function inProcessRoles(shared: EndpointSetting, own: Partial<Record<Ctx2SkillRole, EndpointSetting>>): Ctx2SkillRole[] {
  return CTX2SKILL_ROLES.filter((r) => endpointFor(r, shared, own[r] ?? {}).url === undefined);
}

/** `inProcess`: the in-process model for the roles without a URL, one generator per role. */
export function buildRoles(shared: EndpointSetting, own: Partial<Record<Ctx2SkillRole, EndpointSetting>>, inProcess: Partial<Record<Ctx2SkillRole, TextGenerator>> | undefined): Ctx2SkillRoles {
  const clients = new Map<string, TextGenerator>();
  const out = {} as Record<Ctx2SkillRole, TextGenerator>;
  for (const role of CTX2SKILL_ROLES) {
    const e = endpointFor(role, shared, own[role] ?? {});
    if (e.url === undefined) {
      if (e.model !== undefined && own[role]?.model !== undefined) throw new Error(`--${role}-model needs --${role}-url (or --llm-url)`);
      const local = inProcess?.[role];
      if (!local) throw new Error(`no LLM for the ${role}: give --llm-url and --llm-model (or --${role}-url and --${role}-model), or --model for the in-process model`);
      out[role] = local;
      continue;
    }
    if (!e.model) throw new Error(`the ${role}'s endpoint ${e.url} needs a model name: --${own[role]?.url !== undefined ? role : 'llm'}-model`);
    if (e.timeoutS !== undefined && !(e.timeoutS > 0)) throw new Error(`--llm-timeout / --${role}-timeout must be a positive number of seconds`);
    if (e.retries !== undefined && (!Number.isInteger(e.retries) || e.retries < 0)) throw new Error(`--llm-retries / --${role}-retries must be a non-negative integer`);
    const key = JSON.stringify(e);
    let client = clients.get(key);
    if (!client) {
      client = new OpenAIChatClient({
        url: e.url,
        model: e.model,
        ...(e.keyEnv !== undefined ? { apiKeyEnv: e.keyEnv } : {}),
        ...(e.timeoutS !== undefined ? { timeoutMs: Math.round(e.timeoutS * 1000) } : {}),
        ...(e.retries !== undefined ? { maxRetries: e.retries } : {}),
      });
      clients.set(key, client);
    }
    out[role] = client;
  }
  return out;
}
