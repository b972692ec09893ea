/** Qwen2.5 (MindIE ToolsCallProcessorQwen2_5): hermes-style `<tool_call>` JSON blocks (parsers/hermes.ts). */
import type { ToolParserFamily } from '../types.js';
import { parseHermes } from './hermes.js';

export const qwen2_5: ToolParserFamily = {
  name: 'qwen2_5',
  aliases: ['qwen2_5', 'qwen_2_5'],
  models: 'Qwen2.5-Instruct',
  parse: (text, final) => parseHermes(text, final),
};
