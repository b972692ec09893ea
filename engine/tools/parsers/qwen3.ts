/**
 * Qwen3 and Qwen3-MoE, and any hermes-format model (MindIE ToolsCallProcessorQwen3, alias
 * `hermes`): `<tool_call>` JSON blocks (parsers/hermes.ts). Qwen3's reasoning (`<think>`)
 * is split off before this parser runs (engine/tools/reasoning.ts).
 */
import type { ToolParserFamily } from '../types.js';
import { parseHermes } from './hermes.js';

export const qwen3: ToolParserFamily = {
  name: 'qwen3',
  aliases: ['qwen3', 'qwen3_moe', 'hermes'],
  models: 'Qwen3, Qwen3-MoE, hermes-format models (and the built-in tool template)',
  parse: (text, final) => parseHermes(text, final),
};
