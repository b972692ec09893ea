/**
 * The nine tool-call parser families under every name MindIE registers them by
 * (mindie-compat.md §4), and the choice of one for a model: the configured
 * `models.<model_type>.tool_call_options.tool_call_parser` when it names a family, else the
 * model's default by architecture and chat template. An empty or unknown name is not an error
 * (MindIE falls back the same way); an unknown one is reported as a start-up warning.
 */
import { chatglm2 } from './parsers/chatglm2.js';
import { chatglm3 } from './parsers/chatglm3.js';
import { deepseekV3 } from './parsers/deepseek-v3.js';
import { deepseekV31 } from './parsers/deepseek-v31.js';
import { glm4 } from './parsers/glm4.js';
import { llama3 } from './parsers/llama3.js';
import { qwen1_5 } from './parsers/qwen1-5.js';
import { qwen2_5 } from './parsers/qwen2-5.js';
import { qwen3 } from './parsers/qwen3.js';
import type { ToolParserFamily } from './types.js';

export const TOOL_PARSER_FAMILIES: readonly ToolParserFamily[] = [
  chatglm2,
  chatglm3,
  glm4,
  deepseekV3,
  deepseekV31,
  llama3,
  qwen1_5,
  qwen2_5,
  qwen3,
];

const BY_ALIAS = new Map<string, ToolParserFamily>(
  TOOL_PARSER_FAMILIES.flatMap((f) => f.aliases.map((a) => [a, f] as const)),
);

export function toolParserByName(name: string): ToolParserFamily | undefined {
  return BY_ALIAS.get(name);
}

/**
 * The default family of a model. The architecture alone cannot tell Qwen2 from Qwen2.5 (both
 * `qwen2`) nor Llama 3 from SmolLM2 (both `llama`): the chat template does — a template that
 * teaches `<tool_call>` is hermes, a Llama 3 header template is Llama 3 JSON. DeepSeek-V3.1
 * shares V3's architecture and gets V3's parser unless `deepseek_v31` is configured (the
 * spec's rule: V3.1 must be named). Qwen2 and Qwen1.5 templates do not teach the Qwen-Agent
 * ✿FUNCTION✿ format (Qwen-Agent writes that prompt itself), so that family is the default
 * only for a template that does. Models with no tool format of their own get the hermes
 * family, which the built-in tool prompt (tool-prompt.ts) teaches them.
 */
export function defaultToolParser(
  architecture: string | undefined,
  template: string | null,
): ToolParserFamily {
  const arch = (architecture ?? '').toLowerCase().replace(/[-.]/g, '_');
  const t = template ?? '';
  if (t.includes('✿FUNCTION✿')) return qwen1_5;
  if (/^qwen3/.test(arch)) return qwen3;
  if (/^qwen2/.test(arch) || arch === 'qwen') return t.includes('<tool_call>') ? qwen2_5 : qwen3;
  if (/^deepseek/.test(arch)) return deepseekV3;
  if (arch === 'glm4' || arch === 'chatglm4') return glm4;
  if (arch === 'chatglm') return t.includes('tool_call(') ? chatglm3 : glm4;
  if (arch === 'chatglm2') return chatglm2;
  if (arch === 'chatglm3') return chatglm3;
  if (t.includes('<|start_header_id|>')) return llama3;
  if (t.includes('<｜tool▁calls▁begin｜>')) return deepseekV3;
  return qwen3;
}

export interface ToolParserChoice {
  readonly family: ToolParserFamily;
  /** Why the configured name was not used, or what else the configuration needs. */
  readonly warning?: string;
}

export function selectToolParser(
  configured: string | undefined,
  architecture: string,
  template: string | null,
  templateConfigured: boolean,
): ToolParserChoice {
  const name = (configured ?? '').trim();
  const fallback = defaultToolParser(architecture, template);
  if (name === '') return { family: fallback };
  const family = toolParserByName(name);
  if (family === undefined) {
    return {
      family: fallback,
      warning:
        `tool_call_parser '${name}' is not a registered parser name; using the model's default ` +
        `'${fallback.name}' (registered names: ${[...BY_ALIAS.keys()].join(', ')})`,
    };
  }
  if (family === deepseekV31 && !templateConfigured) {
    return {
      family,
      warning:
        "tool_call_parser 'deepseek_v31' needs a tool-capable chat_template for DeepSeek-V3.1 " +
        '(models.<model_type>.chat_template); none is configured, so the model’s own template is used',
    };
  }
  return { family };
}

/**
 * The configured parser name for a model: the `models.<model_type>` entry whose type is the
 * model's architecture (compared without `_`/`-`), else the only entry; undefined when none
 * applies (with a warning when entries exist but none matches).
 */
export function configuredParserName(
  byModelType: Readonly<Record<string, string>>,
  architecture: string,
): { name?: string; warning?: string } {
  const entries = Object.entries(byModelType);
  if (entries.length === 0) return {};
  const norm = (s: string): string => s.toLowerCase().replace(/[^a-z0-9]/g, '');
  const match = entries.find(([type]) => norm(type) === norm(architecture));
  if (match) return { name: match[1] };
  if (entries.length === 1) return { name: entries[0][1] };
  return {
    warning:
      `tool_call_parser is set for model types ${entries.map(([t]) => t).join(', ')}, ` +
      `none of which is this model's '${architecture}'; using the model's default parser`,
  };
}
