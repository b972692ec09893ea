/**
 * Calls to this listener's own APIs. The API key (when the listener has keys) is asked once on
 * a 401, kept in this tab's session storage and sent as `Authorization: Bearer <key>`.
 */
import { messageOf } from './errors.js';

const KEY_STORAGE = 'prism.apiKey';

export function apiKey(): string | null {
  return sessionStorage.getItem(KEY_STORAGE);
}

function setApiKey(key: string | null): void {
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  else sessionStorage.removeItem(KEY_STORAGE);
}

let pending: Promise<string | null> | null = null;
/** Set when the user cancelled the dialog: no more asking on each 401 until they open it themselves. */
let declined = false;

/**
 * Shows the page's key dialog; resolves with the key typed, or null when cancelled. Requests
 * that get 401 at the same time (the dashboard reads two routes at once) share one dialog.
 */
export function askApiKey(reason?: string): Promise<string | null> {
  if (pending) return pending;
  const dialog = document.getElementById('key-dialog') as HTMLDialogElement | null;
  const input = document.getElementById('key-input') as HTMLInputElement | null;
  if (!dialog || !input) return Promise.resolve(null);
  const why = document.getElementById('key-reason');
  if (why && reason) why.textContent = reason;
  input.value = apiKey() ?? '';
  pending = new Promise<string | null>((resolve) => {
    dialog.addEventListener(
      'close',
      () => {
        const key = dialog.returnValue === 'ok' ? input.value.trim() : '';
        if (key) setApiKey(key);
        declined = !key;
        pending = null;
        resolve(key || null);
      },
      { once: true },
    );
    dialog.returnValue = '';
    dialog.showModal();
    input.focus();
  });
  return pending;
}

function withKey(init: RequestInit): RequestInit {
  const key = apiKey();
  const headers = new Headers(init.headers);
  if (key) headers.set('Authorization', `Bearer ${key}`);
  return { ...init, headers };
}

/** fetch on this origin with the key; a 401 asks for a key once and retries with it. */
export async function apiFetch(path: string, init: RequestInit = {}): Promise<Response> {
  const res = await fetch(path, withKey(init));
  if (res.status !== 401) return res;
  if (declined && !pending) return res;
  const message = await errorMessage(res.clone());
  const key = await askApiKey(`The server answered 401: ${message}. Enter this listener's API key.`);
  if (!key) return res;
  return fetch(path, withKey(init));
}

/** The error text of a reply in any of the families' shapes (OpenAI, TGI/native, plain text). */
export async function errorMessage(res: Response): Promise<string> {
  const text = await res.text();
  try {
    return messageOf(JSON.parse(text)) ?? `HTTP ${res.status}: ${text}`;
  } catch {
    return text ? `HTTP ${res.status}: ${text.slice(0, 500)}` : `HTTP ${res.status} ${res.statusText}`;
  }
}
