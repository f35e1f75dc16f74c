// The selected skill set as markdown, ready to prepend to a system prompt (docs/recipes.md).
import type { SkillSet } from './types.js';

export function skillsMarkdown(skills: SkillSet, note: string): string {
  const lines = ['# Skills', '', `<!-- ${note} -->`, ''];
  if (skills.length === 0) lines.push('(The selected skill set is empty.)', '');
  for (const s of skills) lines.push(`## ${s.name}`, '', `*${s.description}*`, '', s.body, '');
  return lines.join('\n');
}
