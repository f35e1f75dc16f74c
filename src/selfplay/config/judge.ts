// The judge group: the semantic judge and distiller endpoints (docs/method.md, "Judging answers").
import { int, optionalStr, str } from './setting.js';

export const JUDGE_SETTINGS = {
  judgeUrl: optionalStr({ help: 'OpenAI-compatible endpoint for the judge (default: the in-process base model)' }),
  judgeModel: optionalStr({ help: 'model name at --judge-url' }),
  judgeMaxTokens: int(8, { help: "the semantic judge's reply budget (tokens); the reply must be exactly Correct or Wrong" }),
  distillerUrl: optionalStr({ help: 'OpenAI-compatible endpoint for the distiller (default: the in-process base model)' }),
  distillerModel: optionalStr({ help: 'model name at --distiller-url' }),
  apiKeyEnv: str('OPENAI_API_KEY', { help: "environment variable holding the endpoints' API key" }),
};
