/**
 * The playground page: chat or raw completion over this listener's OpenAI API with streaming,
 * sampling settings, token view with logprobs, per-answer TTFT / tok/s / cached prompt tokens,
 * structured output and tools (with the two-step tool-result flow), images attached to chat
 * messages for a model that takes them, conversations in local storage, export as JSON or curl.
 */
import './playground.css';
import { addChunk, emptyAnswer } from './answer.js';
import { apiFetch, apiKey, askApiKey, errorMessage } from './api.js';
import { Attachments } from './attach.js';
import { imageLimit, type ModelCard } from './image-files.js';
import {
  chatBody,
  completionBody,
  curlCommand,
  SettingsError,
  type Message,
  type Settings,
} from './request.js';
import { readSse } from './sse.js';
import {
  currentConversationId,
  loadConversations,
  newConversation,
  saveConversations,
  type Conversation,
} from './store.js';
import { renderMessage } from './render.js';
import { formatStats, statsOf } from './stats.js';

const $ = <T extends HTMLElement>(id: string): T => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`playground: #${id} missing`);
  return el as T;
};

const ui = {
  model: $<HTMLSelectElement>('model'),
  apiKey: $<HTMLButtonElement>('api-key'),
  list: $<HTMLUListElement>('conversation-list'),
  newConversation: $<HTMLButtonElement>('new-conversation'),
  exportJson: $<HTMLButtonElement>('export-json'),
  exportCurl: $<HTMLButtonElement>('export-curl'),
  error: $<HTMLDivElement>('error'),
  messages: $<HTMLOListElement>('messages'),
  composer: $<HTMLFormElement>('composer'),
  prompt: $<HTMLTextAreaElement>('prompt'),
  attachments: $<HTMLUListElement>('attachments'),
  attachGroup: $<HTMLSpanElement>('attach-group'),
  attachButton: $<HTMLButtonElement>('attach-button'),
  attach: $<HTMLInputElement>('attach'),
  attachHelp: $<HTMLSpanElement>('attach-help'),
  send: $<HTMLButtonElement>('send'),
  stop: $<HTMLButtonElement>('stop'),
  stats: $<HTMLOutputElement>('stats'),
  /** Screen readers hear the start and the end of an answer, not every token. */
  announce: $<HTMLSpanElement>('announce'),
  system: $<HTMLTextAreaElement>('system'),
  temperature: $<HTMLInputElement>('temperature'),
  top_p: $<HTMLInputElement>('top_p'),
  top_k: $<HTMLInputElement>('top_k'),
  max_tokens: $<HTMLInputElement>('max_tokens'),
  seed: $<HTMLInputElement>('seed'),
  stop_seq: $<HTMLInputElement>('stop_seq'),
  logprobs: $<HTMLInputElement>('logprobs'),
  top_logprobs: $<HTMLInputElement>('top_logprobs'),
  responseFormat: $<HTMLSelectElement>('response_format'),
  schemaName: $<HTMLInputElement>('schema_name'),
  schema: $<HTMLTextAreaElement>('schema'),
  schemaStatus: $<HTMLSpanElement>('schema-status'),
  toolsOn: $<HTMLInputElement>('tools_on'),
  tools: $<HTMLTextAreaElement>('tools'),
  toolChoice: $<HTMLSelectElement>('tool_choice'),
  toolsStatus: $<HTMLSpanElement>('tools-status'),
  exportDialog: $<HTMLDialogElement>('export-dialog'),
  exportText: $<HTMLTextAreaElement>('export-text'),
  exportCopy: $<HTMLButtonElement>('export-copy'),
  exportDownload: $<HTMLButtonElement>('export-download'),
};

const attachments = new Attachments(
  {
    group: ui.attachGroup,
    button: ui.attachButton,
    input: ui.attach,
    help: ui.attachHelp,
    list: ui.attachments,
    dropZone: ui.composer,
    prompt: ui.prompt,
  },
  {
    onError: (message) => showError(message),
    sentImages: () => current.messages.reduce((n, m) => n + (m.images?.length ?? 0), 0),
  },
);

let conversations = loadConversations();
let current: Conversation =
  conversations.find((c) => c.id === currentConversationId()) ?? conversations[0] ?? newConversation();
if (!conversations.includes(current)) conversations.unshift(current);
let inFlight: AbortController | null = null;
/** The `GET /v1/models` cards by id; null until the list has loaded (or when it failed). */
let cards: Map<string, ModelCard> | null = null;
let modelsFailed = false;

// ---- settings form <-> Settings ----

const num = (input: HTMLInputElement): number | null =>
  input.value.trim() === '' ? null : Number(input.value);
const setNum = (input: HTMLInputElement, v: number | null): void => {
  input.value = v === null ? '' : String(v);
};

function readSettings(): Settings {
  const mode = (document.querySelector('input[name="mode"]:checked') as HTMLInputElement | null)?.value;
  return {
    mode: mode === 'completion' ? 'completion' : 'chat',
    model: ui.model.value,
    system: ui.system.value,
    temperature: num(ui.temperature),
    top_p: num(ui.top_p),
    top_k: num(ui.top_k),
    max_tokens: num(ui.max_tokens),
    seed: num(ui.seed),
    stop: ui.stop_seq.value,
    logprobs: ui.logprobs.checked,
    top_logprobs: num(ui.top_logprobs),
    responseFormat: ui.responseFormat.value as Settings['responseFormat'],
    schemaName: ui.schemaName.value,
    schema: ui.schema.value,
    toolsOn: ui.toolsOn.checked,
    tools: ui.tools.value,
    toolChoice: ui.toolChoice.value as Settings['toolChoice'],
  };
}

function applySettings(s: Settings): void {
  for (const radio of document.querySelectorAll<HTMLInputElement>('input[name="mode"]')) {
    radio.checked = radio.value === s.mode;
  }
  if (s.model && [...ui.model.options].some((o) => o.value === s.model)) ui.model.value = s.model;
  ui.system.value = s.system;
  setNum(ui.temperature, s.temperature);
  setNum(ui.top_p, s.top_p);
  setNum(ui.top_k, s.top_k);
  setNum(ui.max_tokens, s.max_tokens);
  setNum(ui.seed, s.seed);
  ui.stop_seq.value = s.stop;
  ui.logprobs.checked = s.logprobs;
  setNum(ui.top_logprobs, s.top_logprobs);
  ui.responseFormat.value = s.responseFormat;
  ui.schemaName.value = s.schemaName;
  ui.schema.value = s.schema;
  ui.toolsOn.checked = s.toolsOn;
  ui.tools.value = s.tools;
  ui.toolChoice.value = s.toolChoice;
  checkJsonFields();
}

/** Live feedback on the two JSON editors, before anything is sent. */
function checkJsonFields(): void {
  const check = (text: string, status: HTMLElement, want: 'object' | 'array'): void => {
    try {
      const v = JSON.parse(text) as unknown;
      const ok =
        want === 'array' ? Array.isArray(v) : v !== null && typeof v === 'object' && !Array.isArray(v);
      status.textContent = ok ? 'valid JSON' : `must be a JSON ${want}`;
    } catch (err) {
      status.textContent = `not valid JSON: ${(err as Error).message}`;
    }
  };
  check(ui.schema.value, ui.schemaStatus, 'object');
  check(ui.tools.value, ui.toolsStatus, 'array');
}

/** Images in chat mode, for a model whose card says it takes them (`input_modalities`). */
function updateAttach(): void {
  if (readSettings().mode !== 'chat') return attachments.set({ kind: 'hidden' });
  if (!cards) {
    const reason = modelsFailed ? 'the model list did not load' : 'reading the model list…';
    return attachments.set({ kind: 'no-images', reason });
  }
  const model = ui.model.value;
  const maxBytes = imageLimit(cards.get(model));
  attachments.set(
    maxBytes === null
      ? { kind: 'no-images', reason: `${model} takes no images` }
      : { kind: 'images', maxBytes },
  );
}

function persist(): void {
  current.settings = readSettings();
  saveConversations(conversations, current.id);
}

// ---- rendering ----

function showError(message: string | null): void {
  ui.error.hidden = message === null;
  ui.error.textContent = message ?? '';
}

function renderList(): void {
  ui.list.replaceChildren(
    ...conversations.map((c) => {
      const li = document.createElement('li');
      const open = document.createElement('button');
      open.type = 'button';
      open.className = c.id === current.id ? 'conversation current' : 'conversation';
      open.textContent = c.title;
      if (c.id === current.id) open.setAttribute('aria-current', 'true');
      open.addEventListener('click', () => switchTo(c));
      const del = document.createElement('button');
      del.type = 'button';
      del.className = 'ghost small';
      del.textContent = '×';
      del.setAttribute('aria-label', `Delete conversation ${c.title}`);
      del.addEventListener('click', () => remove(c));
      li.append(open, del);
      return li;
    }),
  );
}

function renderMessages(): void {
  ui.messages.replaceChildren(
    ...current.messages.map((m, i) =>
      renderMessage(m, {
        mode: current.settings.mode,
        last: i === current.messages.length - 1,
        onToolResults: (results) => void answerTools(results),
      }),
    ),
  );
  ui.messages.lastElementChild?.scrollIntoView({ block: 'end' });
}

function renderAll(): void {
  renderList();
  renderMessages();
}

function switchTo(c: Conversation): void {
  if (inFlight) return;
  persist();
  current = c;
  applySettings(c.settings);
  updateAttach();
  showError(null);
  saveConversations(conversations, current.id);
  renderAll();
}

function remove(c: Conversation): void {
  if (inFlight && c === current) return;
  conversations = conversations.filter((x) => x !== c);
  if (conversations.length === 0) conversations.push(newConversation(readSettings()));
  if (c === current) switchTo(conversations[0]);
  else {
    saveConversations(conversations, current.id);
    renderList();
  }
}

// ---- sending ----

function requestFor(settings: Settings): { path: string; body: Record<string, unknown> } {
  if (settings.mode === 'completion') {
    const prompt = [...current.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
    return { path: '/v1/completions', body: completionBody(settings, prompt) };
  }
  return { path: '/v1/chat/completions', body: chatBody(settings, current.messages) };
}

function setBusy(busy: boolean): void {
  ui.send.disabled = busy;
  ui.stop.disabled = !busy;
  ui.messages.setAttribute('aria-busy', String(busy));
}

async function run(): Promise<void> {
  const settings = readSettings();
  let request: { path: string; body: Record<string, unknown> };
  try {
    request = requestFor(settings);
  } catch (err) {
    if (err instanceof SettingsError) return showError(err.message);
    throw err;
  }
  showError(null);
  const reply: Message = { role: 'assistant', content: '' };
  current.messages.push(reply);
  if (current.title === 'New conversation') {
    const first = current.messages.find((m) => m.role === 'user')?.content ?? '';
    current.title = first.slice(0, 40) || 'Conversation';
  }
  renderAll();
  const controller = new AbortController();
  inFlight = controller;
  setBusy(true);
  ui.stats.textContent = 'waiting for the first token…';
  ui.announce.textContent = 'Generating the answer…';
  const answer = emptyAnswer();
  const t0 = performance.now();
  let tFirst: number | null = null;
  const bubble = () => ui.messages.lastElementChild;
  try {
    const res = await apiFetch(request.path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify(request.body),
      signal: controller.signal,
    });
    if (!res.ok) throw new Error(await errorMessage(res));
    await readSse(res, (chunk) => {
      const before = answer.contentChunks;
      addChunk(answer, chunk);
      if (answer.contentChunks > before) {
        tFirst ??= performance.now();
        reply.content = answer.text;
        reply.tokens = settings.logprobs ? answer.tokens : undefined;
        const text = bubble()?.querySelector('.content');
        if (text) text.textContent = answer.text;
        const t = performance.now();
        ui.stats.textContent = `${answer.contentChunks} tokens · ${((answer.contentChunks - 1) / Math.max(1e-3, (t - tFirst) / 1000)).toFixed(1)} tok/s so far`;
      }
    });
    if (answer.error) throw new Error(answer.error);
  } catch (err) {
    if (controller.signal.aborted) answer.finishReason = 'stopped by you';
    else {
      reply.error = (err as Error).message;
      showError(reply.error);
    }
  } finally {
    inFlight = null;
    setBusy(false);
  }
  reply.content = answer.text;
  if (answer.toolCalls.length > 0) reply.tool_calls = answer.toolCalls;
  if (settings.logprobs) reply.tokens = answer.tokens;
  reply.stats = statsOf(answer, t0, tFirst, performance.now());
  ui.stats.textContent = reply.error ? 'failed' : formatStats(reply.stats);
  ui.announce.textContent = reply.error
    ? `Failed: ${reply.error}`
    : `Answer complete. ${ui.stats.textContent}`;
  persist();
  renderAll();
  if (!reply.error) ui.prompt.focus();
}

async function send(): Promise<void> {
  if (inFlight) return;
  const text = ui.prompt.value;
  if (!text.trim() && attachments.count === 0) return;
  // A settings field typed wrong (schema, tools) stops here, before the message joins the conversation.
  try {
    requestFor(readSettings());
  } catch (err) {
    if (err instanceof SettingsError) return showError(err.message);
    throw err;
  }
  const images = attachments.take();
  current.messages.push(
    images.length > 0 ? { role: 'user', content: text, images } : { role: 'user', content: text },
  );
  ui.prompt.value = '';
  await run();
}

/** Step two of a tool call: the user's results go back as `tool` messages and the model continues. */
async function answerTools(results: { id: string; content: string }[]): Promise<void> {
  if (inFlight) return;
  for (const r of results) current.messages.push({ role: 'tool', tool_call_id: r.id, content: r.content });
  await run();
}

// ---- export ----

let exportFile: { name: string; type: string; text: string } | null = null;

function openExport(title: string, file: { name: string; type: string; text: string }): void {
  exportFile = file;
  ui.exportDialog.querySelector('h2')!.textContent = title;
  ui.exportText.value = file.text;
  ui.exportDialog.showModal();
  ui.exportText.select();
}

function exportJson(): void {
  persist();
  const { settings, title, created, messages } = current;
  let request: unknown = null;
  try {
    request = requestFor(settings);
  } catch {
    // A half-typed schema must not block exporting the conversation itself.
  }
  const text = JSON.stringify({ title, created, settings, messages, request }, null, 2);
  openExport('Export as JSON', {
    name: `prism-conversation-${current.id}.json`,
    type: 'application/json',
    text,
  });
}

function exportCurl(): void {
  persist();
  try {
    const { path, body } = requestFor(current.settings);
    const text = curlCommand(location.origin, path, body, apiKey() !== null);
    openExport('Export as curl', { name: 'prism-request.sh', type: 'text/x-shellscript', text });
  } catch (err) {
    showError((err as Error).message);
  }
}

// ---- models ----

async function loadModels(): Promise<void> {
  try {
    const res = await apiFetch('/v1/models');
    if (!res.ok) throw new Error(await errorMessage(res));
    const list = (await res.json()) as { data: ModelCard[] };
    cards = new Map(list.data.map((m) => [m.id, m]));
    ui.model.replaceChildren(
      ...list.data.map((m) => {
        const o = document.createElement('option');
        o.value = m.id;
        o.textContent = m.parent && m.parent !== 'null' ? `${m.id} (adapter of ${m.parent})` : m.id;
        return o;
      }),
    );
    applySettings(current.settings);
  } catch (err) {
    modelsFailed = true;
    showError(`Could not list models: ${(err as Error).message}`);
  }
  updateAttach();
}

// ---- wiring ----

ui.composer.addEventListener('submit', (e) => {
  e.preventDefault();
  void send();
});
ui.prompt.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
    e.preventDefault();
    void send();
  }
});
ui.stop.addEventListener('click', () => inFlight?.abort());
ui.newConversation.addEventListener('click', () => {
  if (inFlight) return;
  const c = newConversation(readSettings());
  conversations.unshift(c);
  switchTo(c);
  ui.prompt.focus();
});
ui.exportJson.addEventListener('click', exportJson);
ui.exportCurl.addEventListener('click', exportCurl);
ui.exportCopy.addEventListener('click', () => {
  void navigator.clipboard?.writeText(ui.exportText.value);
});
ui.exportDownload.addEventListener('click', () => {
  if (!exportFile) return;
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([exportFile.text], { type: exportFile.type }));
  a.download = exportFile.name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
});
ui.apiKey.addEventListener('click', () => {
  void askApiKey().then((k) => {
    if (k) void loadModels();
  });
});
document.querySelector('.settings')!.addEventListener('input', () => {
  checkJsonFields();
  persist();
});
document.querySelector('.settings')!.addEventListener('change', () => {
  persist();
  updateAttach();
  renderMessages();
});
ui.model.addEventListener('change', () => {
  persist();
  updateAttach();
});

applySettings(current.settings);
updateAttach();
renderAll();
void loadModels();
