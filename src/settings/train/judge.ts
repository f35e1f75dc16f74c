// The judge group: the semantic judge and distiller endpoints (docs/method.md, "Judging answers").
import { int, num, optionalStr, optionalUrl, str } from '../setting.js';

export const JUDGE_SETTINGS = {
  judgeUrl: optionalUrl({ help: 'OpenAI-compatible endpoint for the judge (default: the in-process base model)' }),
  judgeModel: optionalStr({ help: 'model name at --judge-url' }),
  judgeMaxTokens: int(8, { help: "the semantic judge's reply budget (tokens); the reply must be exactly Correct or Wrong" }),
  distillerUrl: optionalUrl({ help: 'OpenAI-compatible endpoint for the distiller (default: the in-process base model)' }),
  distillerModel: optionalStr({ help: 'model name at --distiller-url' }),
  apiKeyEnv: str('OPENAI_API_KEY', { help: "environment variable holding the endpoints' API key ('' = no key; a local http://127.0.0.1 endpoint works without one)" }),
  judgeTimeout: num(120, { above: 0, help: 'seconds per judge request attempt' }),
  judgeRetries: int(3, { min: 0, help: 'retries of a failed judge request (HTTP 5xx, timeouts), each printed' }),
  distillerTimeout: num(120, { above: 0, help: 'seconds per distiller request attempt' }),
  distillerRetries: int(3, { min: 0, help: 'retries of a failed distiller request (HTTP 5xx, timeouts), each printed' }),
  stopAfterFailedSteps: int(3, { help: 'stop the run (after a checkpoint) when a role (the retrieval server, the judge, the distiller) fails or is unusable on every call for this many consecutive steps' }),
};
