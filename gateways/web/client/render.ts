/** One conversation entry as DOM: text through textContent only (model output is never HTML). */
import type { Message, Mode, TokenInfo } from './request.js';
import { formatStats } from './stats.js';

export interface RenderOptions {
  mode: Mode;
  /** The newest entry: only its tool calls can still be answered. */
  last: boolean;
  onToolResults: (results: { id: string; content: string }[]) => void;
}

const ROLE_LABEL: Record<Message['role'], string> = {
  system: 'System',
  user: 'You',
  assistant: 'Model',
  tool: 'Tool result',
};

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string,
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** Probability → a background shade: confident tokens light, unlikely ones strong. */
function shade(logprob: number): string {
  const p = Number.isFinite(logprob) ? Math.exp(logprob) : 0;
  if (p > 0.9) return 'p-high';
  if (p > 0.5) return 'p-mid';
  if (p > 0.2) return 'p-low';
  return 'p-rare';
}

function tokenView(tokens: readonly TokenInfo[]): HTMLElement {
  const details = el('details', 'tokens');
  details.append(el('summary', undefined, `Tokens (${tokens.length}) with logprobs`));
  const line = el('p', 'token-line');
  for (const t of tokens) {
    const p = Number.isFinite(t.logprob) ? Math.exp(t.logprob) : NaN;
    const alts = t.top.map((a) => `${JSON.stringify(a.token)} ${a.logprob.toFixed(3)}`).join(', ');
    const span = el('span', `token ${shade(t.logprob)}`, t.token);
    span.title = `${JSON.stringify(t.token)}: logprob ${t.logprob.toFixed(3)} (p = ${(p * 100).toFixed(1)}%)${alts ? `\nalternatives: ${alts}` : ''}`;
    line.append(span);
  }
  details.append(line);
  return details;
}

function toolCallsView(m: Message, options: RenderOptions): HTMLElement {
  const box = el('div', 'tool-calls');
  const form = el('form');
  const fields: { id: string; input: HTMLTextAreaElement }[] = [];
  for (const call of m.tool_calls ?? []) {
    const block = el('div', 'tool-call');
    block.append(el('code', undefined, `${call.function.name}(${call.function.arguments})`));
    if (options.last) {
      const id = `tool-result-${call.id || fields.length}`;
      const label = el('label', undefined, `Result of ${call.function.name}`);
      label.htmlFor = id;
      const input = el('textarea', 'code');
      input.id = id;
      input.rows = 2;
      input.placeholder = '{"temperature_c": 21}';
      fields.push({ id: call.id, input });
      block.append(label, input);
    }
    form.append(block);
  }
  if (options.last && fields.length > 0) {
    const submit = el('button', undefined, 'Send tool results');
    submit.type = 'submit';
    form.append(submit);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      options.onToolResults(fields.map((f) => ({ id: f.id, content: f.input.value })));
    });
  }
  box.append(form);
  return box;
}

/** A user message's images as sent, as thumbnails. */
function imagesView(urls: readonly string[]): HTMLElement {
  const list = el('ul', 'thumbs');
  list.setAttribute('aria-label', 'Attached images');
  urls.forEach((url, i) => {
    const img = el('img');
    img.src = url;
    img.alt = `Attached image ${i + 1}`;
    const li = el('li');
    li.append(img);
    list.append(li);
  });
  return list;
}

export function renderMessage(m: Message, options: RenderOptions): HTMLLIElement {
  const li = el('li', `message ${m.role}${m.error ? ' failed' : ''}`);
  const label =
    options.mode === 'completion' && m.role === 'user'
      ? 'Prompt'
      : options.mode === 'completion' && m.role === 'assistant'
        ? 'Completion'
        : ROLE_LABEL[m.role];
  li.append(el('div', 'role', m.tool_call_id ? `${label} (${m.tool_call_id})` : label));
  if (m.images?.length) li.append(imagesView(m.images));
  li.append(el('div', 'content', m.content ?? ''));
  if (m.tool_calls?.length) li.append(toolCallsView(m, options));
  if (m.tokens?.length) li.append(tokenView(m.tokens));
  if (m.error) li.append(el('div', 'message-error', m.error));
  if (m.stats) {
    const text = formatStats(m.stats);
    if (text) li.append(el('div', 'meta', text));
  }
  return li;
}
