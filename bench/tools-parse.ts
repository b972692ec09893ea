/**
 * Cost of streaming tool-call parsing per token: each family's ChatOutputStream (reasoning
 * split + tool parser, re-parsing the whole text each token and sending the difference) fed a
 * 4000-token answer of prose that ends in one call — the worst case for the re-parse, whose
 * cost grows with the text. Prints the median of 5 runs per family.
 *
 *   node --import tsx bench/tools-parse.ts
 */
import { ChatOutputStream } from '../engine/tools/chat-output.js';
import { TOOL_PARSER_FAMILIES } from '../engine/tools/registry.js';

const prose = Array.from({ length: 3900 }, (_, i) => `w${i % 10}${i % 7} `).join('');
const call = `<tool_call>\n{"name": "get_weather", "arguments": {"city": "${'x'.repeat(380)}"}}\n</tool_call>`;
const text = prose + call;
const tokens = text.match(/.{1,4}/gs) ?? [];

for (const family of TOOL_PARSER_FAMILIES) {
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) {
    const s = new ChatOutputStream({
      reasoning: { startsInReasoning: false },
      tools: { family, toolNames: ['get_weather'], parallel: true },
    });
    const t0 = performance.now();
    for (const t of tokens) s.push(t);
    s.finish();
    runs.push(performance.now() - t0);
  }
  runs.sort((a, b) => a - b);
  const ms = runs[2];
  console.log(
    `${family.name.padEnd(14)} ${tokens.length} tokens (${text.length} chars): ${ms.toFixed(0)} ms, ` +
      `${((ms / tokens.length) * 1000).toFixed(0)} µs/token on average`,
  );
}
