/** Conversations kept in the browser's local storage (this origin only), with their settings. */
import { DEFAULT_SETTINGS, type Message, type Settings } from './request.js';

export interface Conversation {
  id: string;
  title: string;
  created: number;
  settings: Settings;
  messages: Message[];
}

const LIST = 'prism.conversations';
const CURRENT = 'prism.currentConversation';

export function newConversation(settings: Settings = DEFAULT_SETTINGS): Conversation {
  return {
    id: crypto.randomUUID(),
    title: 'New conversation',
    created: Date.now(),
    settings: { ...settings },
    messages: [],
  };
}

export function loadConversations(): Conversation[] {
  try {
    const list = JSON.parse(localStorage.getItem(LIST) ?? '[]') as Conversation[];
    if (!Array.isArray(list)) return [];
    // Settings saved by an older page may lack newer fields.
    return list.map((c) => ({ ...c, settings: { ...DEFAULT_SETTINGS, ...c.settings } }));
  } catch {
    return [];
  }
}

/** The conversations without their messages' images (`data:` URLs, the bulk of a conversation). */
function withoutImages(list: readonly Conversation[]): Conversation[] {
  return list.map((c) => ({ ...c, messages: c.messages.map((m) => ({ ...m, images: undefined })) }));
}

export function saveConversations(list: readonly Conversation[], currentId: string): void {
  try {
    localStorage.setItem(CURRENT, currentId);
    try {
      localStorage.setItem(LIST, JSON.stringify(list));
    } catch {
      // Over the quota, images being large: the texts are kept; this page still holds the images.
      localStorage.setItem(LIST, JSON.stringify(withoutImages(list)));
    }
  } catch {
    // Storage full or disabled: the page keeps working, conversations just don't persist.
  }
}

export function currentConversationId(): string | null {
  return localStorage.getItem(CURRENT);
}
