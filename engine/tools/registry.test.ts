import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  configuredParserName,
  defaultToolParser,
  selectToolParser,
  TOOL_PARSER_FAMILIES,
  toolParserByName,
} from './registry.js';

// MindIE's registered names (mindie-compat.md §4), every one of them.
const ALIASES: Record<string, string[]> = {
  chatglm2: ['chatglm2_6b', 'chatglm_v2_6b', 'chatglm_v2', 'chatglm2'],
  chatglm3: ['chatglm3_6b', 'chatglm_v3_6b', 'chatglm_v3', 'chatglm3'],
  glm_4: ['chatglm4_9b', 'chatglm_v4_9b', 'glm_4', 'glm_4_9b'],
  deepseek_v3: ['deepseek_v2', 'deepseek_v3', 'deepseekv2', 'deepseekv3'],
  deepseek_v31: ['deepseek_v31', 'deepseekv31'],
  llama3: ['llama', 'llama3', 'llama3_1'],
  qwen1_5_or_2: ['qwen1_5', 'qwen_1_5', 'qwen2', 'qwen_2', 'qwen1_5_or_2', 'qwen_1_5_or_2'],
  qwen2_5: ['qwen2_5', 'qwen_2_5'],
  qwen3: ['qwen3', 'qwen3_moe', 'hermes'],
};

describe('tool parser registry', () => {
  it('nine families, every alias', () => {
    assert.equal(TOOL_PARSER_FAMILIES.length, 9);
    for (const [family, names] of Object.entries(ALIASES)) {
      for (const n of names) assert.equal(toolParserByName(n)?.name, family, n);
    }
    const all = TOOL_PARSER_FAMILIES.flatMap((f) => f.aliases).sort();
    assert.deepEqual(all, Object.values(ALIASES).flat().sort());
  });
  it('configured name wins; empty falls back silently; unknown falls back with a warning', () => {
    assert.equal(selectToolParser('llama3_1', 'qwen3', null, false).family.name, 'llama3');
    const empty = selectToolParser('', 'qwen3', null, false);
    assert.equal(empty.family.name, 'qwen3');
    assert.equal(empty.warning, undefined);
    const unknown = selectToolParser('qwen9', 'deepseek2', null, false);
    assert.equal(unknown.family.name, 'deepseek_v3');
    assert.match(unknown.warning ?? '', /'qwen9' is not a registered parser name.*'deepseek_v3'/);
  });
  it('deepseek_v31 only when named, and it asks for a chat_template', () => {
    assert.equal(defaultToolParser('deepseek2', null).name, 'deepseek_v3');
    const v31 = selectToolParser('deepseekv31', 'deepseek2', null, false);
    assert.equal(v31.family.name, 'deepseek_v31');
    assert.match(v31.warning ?? '', /chat_template/);
    assert.equal(selectToolParser('deepseek_v31', 'deepseek2', null, true).warning, undefined);
  });
  it('defaults by architecture and template', () => {
    assert.equal(defaultToolParser('qwen2', '... <tool_call> ...').name, 'qwen2_5');
    assert.equal(defaultToolParser('qwen2', '<|im_start|>').name, 'qwen3');
    assert.equal(defaultToolParser('llama', '<|start_header_id|>').name, 'llama3');
    // SmolLM2: a llama architecture with a ChatML template and no tools → hermes via the built-in template.
    assert.equal(defaultToolParser('llama', '<|im_start|>').name, 'qwen3');
    assert.equal(defaultToolParser('glm4', null).name, 'glm_4');
  });
  it('the configured name of the model type that matches the architecture, else the only one', () => {
    assert.deepEqual(configuredParserName({}, 'qwen3'), {});
    assert.deepEqual(configuredParserName({ deepseekv2: 'deepseek_v31' }, 'deepseek2'), {
      name: 'deepseek_v31',
    });
    assert.deepEqual(configuredParserName({ qwen3: 'hermes', llama: 'llama3' }, 'qwen3'), { name: 'hermes' });
    assert.match(
      configuredParserName({ qwen2: 'a', llama: 'b' }, 'gemma3').warning ?? '',
      /none of which is this model's 'gemma3'/,
    );
  });
});
