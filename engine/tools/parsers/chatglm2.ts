/**
 * ChatGLM2-6B (MindIE ToolsCallProcessorChatglmV2): the model has no tool-call format, so the
 * reply is returned as content, unparsed.
 */
import type { ToolParserFamily } from '../types.js';

export const chatglm2: ToolParserFamily = {
  name: 'chatglm2',
  aliases: ['chatglm2', 'chatglm2_6b', 'chatglm_v2_6b', 'chatglm_v2'],
  models: 'ChatGLM2-6B (no tool-call format: content as is)',
  parse: (text) => ({ content: text, calls: [] }),
};
